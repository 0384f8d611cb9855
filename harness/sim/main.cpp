// perfgate-sim: the reference training simulator (docs/perfgate-sim.md).

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <CLI/CLI.hpp>

#include "harness/sim/config.hpp"
#include "harness/sim/trainer.hpp"

namespace {

// A layer's activations are sized against at most this much cache. A VM
// reports the cache the kernel sees, which can be the whole package's shared
// L3: 504 MB on a 128-core Xeon 6 slice with 2 vCPUs (a CI machine), shared
// with every other tenant of the host. Sized by it, `--act-llc 4` allocated
// 3.8 GB per layer, 11.5 GB per process and 3.2 s per step. 32 MB is what
// one core can hold on its own on the parts the effect was measured on (one
// EPYC CCD's L3); four of it per layer (128 MB, 384 MB of fp32 tensors over
// two layers) still misses any cache a core can use, so 16-bit storage pays.
constexpr double k_max_llc_mb = 32;

// The last-level data cache one core sees, in MB, as the kernel reports it,
// capped at k_max_llc_mb. Not sysconf(_SC_LEVEL3_CACHE_SIZE): in a VM glibc
// reads CPUID and can report the whole package's L3 (256 MB on an 8-CCD EPYC)
// where a core shares 32 MB. 32 MB when the kernel does not say.
double last_level_cache_mb() {
  namespace fs = std::filesystem;
  int best_level = 0;
  double best_mb = k_max_llc_mb;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/devices/system/cpu/cpu0/cache", ec)) {
    std::ifstream level_file(entry.path() / "level"), type_file(entry.path() / "type"),
        size_file(entry.path() / "size");
    int level = 0;
    std::string type, size;
    if (!(level_file >> level) || !(type_file >> type) || !(size_file >> size) || type == "Instruction") continue;
    double kb = std::strtod(size.c_str(), nullptr);
    if (size.back() == 'M') kb *= 1024;
    if (level > best_level && kb > 0) best_level = level, best_mb = kb / 1024;
  }
  return std::min(best_mb, k_max_llc_mb);
}

}  // namespace

int main(int argc, char** argv) {
  using perfgate::sim::Config;
  Config c;
  CLI::App app{"perfgate-sim: a CPU simulation of a data-parallel training job whose knobs have real effects"};
  auto one_of = [](std::vector<std::string> v) { return CLI::IsMember(std::move(v)); };
  app.add_option("--graph-mode", c.graph_mode, "eager: one dispatch per op; graph: compile once, one dispatch per step")
      ->check(one_of({"eager", "graph"}))
      ->capture_default_str();
  app.add_option("--fusion", c.fusion, "element-wise chain as four passes (off) or one (on); fused optimizer")
      ->check(one_of({"off", "on"}))
      ->capture_default_str();
  app.add_option("--precision", c.precision, "storage of activations and their gradients")
      ->check(one_of({"fp32", "bf16", "fp16"}))
      ->capture_default_str();
  app.add_option("--bucket-mb", c.bucket_mb, "gradient all-reduce bucket size, MB")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--ranks", c.ranks, "data-parallel ranks (threads)")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--num-workers", c.num_workers, "loader threads per rank (0: load in the step)")
      ->check(CLI::Range(0, 64))
      ->capture_default_str();
  app.add_option("--prefetch", c.prefetch, "batches each loader worker may hold ready")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--steps", c.steps, "steps to run (0: until --seconds)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seconds", c.seconds, "stop after this many seconds")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--batch", c.batch, "samples per rank per step")->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--layers", c.layers, "layers")->check(CLI::Range(1, 256))->capture_default_str();
  app.add_option("--width", c.width, "layer width (matmul size)")->check(CLI::Range(8, 4096))->capture_default_str();
  app.add_option("--act-mb", c.act_mb, "element-wise activation memory per rank (fp32 MB)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option(
         "--act-llc", c.act_llc,
         "size the activations at this many last-level caches per layer (the cache counted at most "
         "32 MB), overriding --act-mb (16-bit storage saves time only once a layer's activations miss the cache)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--grad-mb", c.grad_mb, "gradient size all-reduced per step, MB")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seed", c.seed, "random seed")->capture_default_str();
  app.add_option("--dispatch-work", c.dispatch_work,
                 "host work of one eager op launch, thousands of dependent integer steps (100: ~150 us at 2.7 GHz)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--link-gbps", c.link_gbps, "all-reduce bandwidth, GB/s")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--link-latency-us", c.link_latency_us, "fixed cost per all-reduce call, us")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--read-us", c.read_us, "storage read latency per sample, us")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--decode-work", c.decode_work, "CPU work to decode one sample (thousands of flops)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--leak-kb-per-step", c.leak_kb_per_step, "fault: host memory kept per step, KB")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--slowdown-at-s", c.slowdown_at_s,
                 "fault: from this time on, steps take --slowdown-factor times longer");
  app.add_option("--slowdown-factor", c.slowdown_factor, "fault: factor of the slowdown")
      ->check(CLI::Range(1.0, 100.0));
  app.add_option("--stall-every", c.stall_every, "fault: stall every N steps")->check(CLI::NonNegativeNumber);
  app.add_option("--stall-ms", c.stall_ms, "fault: length of each stall, ms")->check(CLI::NonNegativeNumber);
  app.add_option("--crash-at-step", c.crash_at_step, "fault: abort at this step");
  app.add_option("--hang-at-step", c.hang_at_step, "fault: stop making progress at this step");
  app.add_option("--noise-cv", c.noise_cv, "fault: random extra work, about this fraction of a step")
      ->check(CLI::Range(0.0, 10.0));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (c.steps == 0 && c.seconds == 0 && !std::getenv("PERFGATE_DEADLINE")) {
    std::fprintf(stderr, "perfgate-sim: give --steps or --seconds\n");
    return 2;
  }
  if (c.act_llc > 0) c.act_mb = c.act_llc * last_level_cache_mb() * c.layers;
  const char* path = std::getenv("PERFGATE_METRICS");
  std::FILE* out = path && *path ? std::fopen(path, "a") : stdout;
  if (!out) {
    std::fprintf(stderr, "perfgate-sim: cannot open %s\n", path);
    return 1;
  }
  int rc = perfgate::sim::train(c, out, out == stdout);
  if (out != stdout) std::fclose(out);
  return rc;
}
