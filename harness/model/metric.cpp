#include "harness/model/metric.hpp"

#include <array>

namespace perfgate::model {

std::string_view to_string(Better b) {
  switch (b) {
    case Better::Lower: return "lower";
    case Better::Higher: return "higher";
    case Better::None: break;
  }
  return "none";
}

std::optional<Better> better_from_string(std::string_view s) {
  if (s == "lower") return Better::Lower;
  if (s == "higher") return Better::Higher;
  if (s == "none") return Better::None;
  return std::nullopt;
}

MetricInfo MetricInfo::inferred(std::string_view name) {
  MetricInfo m{std::string(name), "", Better::Lower};
  static constexpr std::array<std::string_view, 9> k_higher = {
      "throughput", "fps", "qps", "tps", "per_s", "per_second", "tflops", "samples_s", "tokens_s"};
  for (auto h : k_higher)
    if (name.find(h) != std::string_view::npos) m.better = Better::Higher;
  if (name == "loss" || name.ends_with("_loss") || name == "step" || name == "exit_code") m.better = Better::None;
  auto ends = [&](std::string_view suf) { return name.ends_with(suf); };
  if (ends("_ms")) m.unit = "ms";
  else if (ends("_s") && !ends("per_s") && !ends("samples_s") && !ends("tokens_s")) m.unit = "s";
  else if (ends("_mb")) m.unit = "MB";
  else if (ends("_pct")) m.unit = "%";
  else if (name == "throughput") m.unit = "samples/s";
  return m;
}

}  // namespace perfgate::model
