#pragma once
// perfgate-sim: a CPU simulation of one data-parallel training job whose knobs
// have real, measurable effects (docs/perfgate-sim.md). Every knob changes
// the work a step does: computation, memory traffic and host work (the
// per-op dispatch of eager mode is a fixed amount of serial host work per
// launch). Two effects are latency by nature and are modelled as waits: the
// network part of the all-reduce and the storage read of a sample (sleeps:
// the wire and the disk work while the CPU does not).

#include <cstdint>
#include <string>

namespace perfgate::sim {

struct Config {
  // knobs
  std::string graph_mode = "eager";  // eager | graph
  std::string fusion = "off";        // off | on
  std::string precision = "fp32";    // fp32 | bf16 | fp16
  double bucket_mb = 25;             // gradient bucket size for the all-reduce
  int ranks = 2;                     // data-parallel ranks (threads)
  int num_workers = 2;               // loader threads per rank; 0 = load on the rank's own thread
  int prefetch = 2;                  // batches each worker may hold ready
  // size and length
  long long steps = 50;
  double seconds = 0;  // stop after this long too (0: no limit)
  int batch = 32;      // samples per rank per step
  int layers = 4;
  int width = 96;        // matmul size (batch x width x width per layer)
  double act_mb = 16;    // element-wise activation memory per rank and step (fp32 size)
  double act_llc = 0;    // > 0: size act_mb at this many last-level caches per layer
  double grad_mb = 100;  // gradient bytes all-reduced per step (nominal model size)
  std::uint64_t seed = 1;
  // calibration of the modelled host work and latencies
  double dispatch_work = 100;    // host work of one eager op launch, thousands of chain steps
  double link_gbps = 16;         // all-reduce bus bandwidth, GB/s
  double link_latency_us = 300;  // fixed cost of one all-reduce call
  double read_us = 500;          // storage read latency per sample
  int decode_work = 200;         // CPU work per sample (float operations x 1000)
  // faults
  double leak_kb_per_step = 0;
  double slowdown_at_s = -1;
  double slowdown_factor = 1;
  long long stall_every = 0;
  double stall_ms = 0;
  long long crash_at_step = -1;
  long long hang_at_step = -1;
  double noise_cv = 0;
};

}  // namespace perfgate::sim
