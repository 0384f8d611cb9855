#pragma once
// The validated suite: what to run and which knobs to vary (docs/suite-format.md).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/model/metric.hpp"
#include "harness/model/params.hpp"
#include "harness/model/slots.hpp"
#include "harness/model/source_loc.hpp"

namespace perfgate::model {

struct Warmup {
  // Auto: compile steps and warm-up found per trial (stats/steady_state.hpp).
  enum class Kind { None, Steps, Seconds, Auto };
  Kind kind = Kind::None;
  double amount = 0;  // steps or seconds
  std::string str() const;
};

// A pattern of the `regex` parser: named groups are metrics, a group named
// `step` is the step number (docs/suite-format.md, "Reading logs").
struct LogPattern {
  std::string regex;
  bool summary = false;                      // `record: summary`: one number per trial, last match wins
  std::map<std::string, std::string> units;  // metric -> unit
  std::map<std::string, Better> better;      // metric -> direction
  SourceLoc loc;
};

struct MetricsSpec {
  // jsonl (the metric protocol of docs/metric-protocol.md), megatron,
  // mindspore, modelzoo, ais_bench, gbench or regex.
  std::string parser = "jsonl";
  std::string primary;  // empty: the parser's default (metrics::default_primary)
  // A log file to read instead of stdout and stderr; gbench: the JSON file
  // (when empty the harness passes --benchmark_out). May hold {placeholders}.
  std::string file;
  std::string batch_size;            // mindspore: samples per step, for throughput; may hold {placeholders}
  std::vector<LogPattern> patterns;  // regex
  SourceLoc loc;
};

// A sampler a suite asks for: `samplers: [proc, npu-smi]`, or a mapping
// for a `command` sampler (see harness/sampling/sampler.hpp).
struct SamplerSpec {
  std::string kind;  // proc | npu-smi | nvidia-smi | command | host
  // command: argv (no shell), a regex, and per group the metric it feeds.
  std::vector<std::string> command;
  std::string regex;
  std::map<std::string, std::string> metric_names;  // group -> metric
  std::string name;                                 // command: a label for messages
  SourceLoc loc;
  // npu-smi / nvidia-smi: the device ids of the trial's slot, filled in per
  // trial; the sampler records only those (empty: every device).
  std::vector<int> devices;
};

// One axis of a matrix: its values, each a set of parameters (one key for a
// scalar axis, several dotted keys for a dict axis).
struct Axis {
  std::string name;
  std::vector<Params> values;
  SourceLoc loc;
};

struct Workload {
  std::string name;
  SourceLoc loc;
  std::vector<std::string> command;  // argv; may hold {placeholders}
  std::vector<SourceLoc> command_locs;
  bool shell = false;                         // run command[0] through /bin/sh -c (explicit opt-in)
  std::map<std::string, std::string> env;     // may hold {placeholders}
  std::map<std::string, SourceLoc> env_locs;  // where each env value was written
  std::string cwd;                            // absolute
  int repeats = 5;
  Warmup warmup;
  double timeout_s = 1200;
  double kill_grace_s = 5;
  std::uint64_t log_limit_bytes = 16ull << 20;  // per stream
  MetricsSpec metrics;
  std::vector<SamplerSpec> samplers;  // watch the trial while it runs
  double sample_interval_s = 1;
  // The host probe and sampler (sampler kind `host`): unset means on for
  // soaks and off for runs.
  std::optional<bool> host_probe;
  std::vector<Axis> matrix;                                    // in suite order
  std::vector<Params> include;                                 // extra configurations
  std::vector<Params> exclude;                                 // partial parameter sets to drop
  std::vector<std::map<std::string, SourceLoc>> exclude_locs;  // per exclude entry: top-level key -> where
  Params params;  // fixed parameters (`params:` in the suite), below the matrix
};

struct Suite {
  std::string name;
  std::string description;
  std::string path;                   // as given
  std::string dir;                    // absolute directory of the suite file
  std::vector<std::string> profiles;  // applied profile files
  std::optional<std::uint64_t> seed;  // fixed plan seed, if the suite or --seed sets one
  std::string order = "interleaved";  // interleaved | sequential
  std::optional<SlotsSpec> slots;     // the node's slots (--slots, suite, profiles); none: one slot
  std::vector<Workload> workloads;
};

}  // namespace perfgate::model
