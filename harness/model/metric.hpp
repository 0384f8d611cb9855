#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace perfgate::model {

enum class Better { Lower, Higher, None };

std::string_view to_string(Better b);
std::optional<Better> better_from_string(std::string_view s);

// What a metric measures and which direction is good. Defaults are inferred
// from the name (throughput/fps/qps/..._per_s are higher-is-better, times,
// latencies and memory lower-is-better) and overridden by a workload's meta.
struct MetricInfo {
  std::string name;
  std::string unit;
  Better better = Better::Lower;
  // A fact is a setting the workload reports (world size, bucket count, a
  // tile size): stored and shown as such, never with intervals, never gated.
  bool fact = false;

  static MetricInfo inferred(std::string_view name);
};

// True for metric names of memory (…_mb, …_bytes, rss, hbm, mem).
bool is_memory_metric(std::string_view name);

// How one trial is summarised for one step metric, over its steady-state steps.
struct MetricSummary {
  std::string metric;
  long long n_total = 0;   // records seen
  long long n_steady = 0;  // records after warm-up
  double mean = 0, median = 0, p90 = 0, p99 = 0, min = 0, max = 0, stddev = 0;
  // The per-trial value compared across trials: mean for higher-is-better
  // rates (total work over total time), median for times (robust to stalls).
  double value = 0;
  bool is_scalar = false;  // a per-trial number (wall time, summary record), not a step series
};

}  // namespace perfgate::model
