#include "harness/model/verdict.hpp"

#include <fnmatch.h>
#include <array>
#include <string>

namespace perfgate::model {

namespace {
constexpr std::array<std::pair<VerdictKind, std::string_view>, 6> k_names = {{
    {VerdictKind::Regression, "regression"},
    {VerdictKind::Improvement, "improvement"},
    {VerdictKind::Unchanged, "unchanged"},
    {VerdictKind::Inconclusive, "inconclusive"},
    {VerdictKind::Missing, "missing"},
    {VerdictKind::Failed, "failed"},
}};
}  // namespace

std::string_view to_string(VerdictKind v) {
  for (const auto& [k, n] : k_names)
    if (k == v) return n;
  return "inconclusive";
}

std::optional<VerdictKind> verdict_from_string(std::string_view s) {
  for (const auto& [k, n] : k_names)
    if (n == s) return k;
  return std::nullopt;
}

std::string with_node_class(const std::string& label, const std::string& node_class) {
  if (node_class.empty()) return label;
  return label.empty() ? "@ " + node_class : label + " @ " + node_class;
}

int severity_rank(VerdictKind v) {
  switch (v) {
    case VerdictKind::Regression:
      return 0;
    case VerdictKind::Failed:
      return 1;
    case VerdictKind::Missing:
      return 2;
    case VerdictKind::Inconclusive:
      return 3;
    case VerdictKind::Improvement:
      return 4;
    case VerdictKind::Unchanged:
      return 5;
  }
  return 6;
}

std::string_view to_string(Correction c) { return c == Correction::Holm ? "holm" : "benjamini-hochberg"; }

std::string_view to_string(Underpowered u) {
  switch (u) {
    case Underpowered::Adaptive:
      return "adaptive";
    case Underpowered::Fail:
      return "fail";
    case Underpowered::Warn:
      return "warn";
  }
  return "adaptive";
}

std::string_view to_string(FailurePolicy f) { return f == FailurePolicy::Strict ? "strict" : "test"; }

bool glob_match(std::string_view p, std::string_view s) {
  // fnmatch(3) without FNM_PATHNAME: '*' crosses '.' and '/', as metric names
  // ("npu.0.power_w") are not paths. Classes ([0-9]) and '\' escapes work too.
  return ::fnmatch(std::string(p).c_str(), std::string(s).c_str(), 0) == 0;
}

const MetricRule* GatePolicy::match(std::string_view metric) const {
  for (const auto& r : rules)
    if (glob_match(r.pattern, metric)) return r.gate ? &r : nullptr;
  return nullptr;
}

double GatePolicy::threshold_for(const MetricInfo& m, const MetricRule* rule) const {
  if (rule && rule->threshold_rel) return *rule->threshold_rel;
  if (is_memory_metric(m.name)) return memory_threshold;
  Better b = rule && rule->better ? *rule->better : m.better;
  return b == Better::Higher ? throughput_threshold : latency_threshold;
}

GatePolicy default_gate_policy() {
  GatePolicy p;
  // What a training or inference job is judged by; per-phase timings
  // (forward_ms, data_wait_ms, ...) explain a change but are not gated.
  // configs/gate.yaml says the same; a unit test keeps them equal.
  auto rule = [&](const char* name, std::optional<double> threshold = std::nullopt) {
    p.rules.push_back(MetricRule{name, std::nullopt, threshold, std::nullopt, true, "built-in policy"});
  };
  rule("throughput");
  rule("*_per_s");
  rule("qps*");
  rule("step_time_ms");
  rule("latency_ms");
  rule("latency_p50_ms*");
  rule("latency_p99_ms*", 0.10);  // a tail: noisier than the median
  rule("first_step_ms", 0.10);    // compile / warm-up time
  rule("peak_rss_mb");
  rule("npu_compute_time_ms");  // ais_bench: the device time per inference
  rule("*.real_time_*");        // Google Benchmark: each benchmark's wall time per iteration
  return p;
}

}  // namespace perfgate::model
