#include "harness/model/metric.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace perfgate::model {

std::string_view to_string(Better b) {
  switch (b) {
    case Better::Lower:
      return "lower";
    case Better::Higher:
      return "higher";
    case Better::None:
      break;
  }
  return "none";
}

std::optional<Better> better_from_string(std::string_view s) {
  if (s == "lower") return Better::Lower;
  if (s == "higher") return Better::Higher;
  if (s == "none") return Better::None;
  return std::nullopt;
}

bool is_memory_metric(std::string_view n) {
  return n.ends_with("_mb") || n.ends_with("_bytes") || n.ends_with("_gb") || n.ends_with("_kb") ||
         n.find("rss") != std::string_view::npos || n.find("hbm") != std::string_view::npos ||
         n.find("mem") != std::string_view::npos;
}

MetricInfo MetricInfo::inferred(std::string_view name) {
  MetricInfo m{std::string(name), "", Better::Lower};
  auto ends = [&](std::string_view suf) { return name.ends_with(suf); };
  // Words of the name, split on '_', '.', '-' and '/'.
  std::vector<std::string_view> words;
  for (std::size_t i = 0; i <= name.size();) {
    auto j = name.find_first_of("_.-/", i);
    if (j == std::string_view::npos) j = name.size();
    if (j > i) words.push_back(name.substr(i, j - i));
    i = j + 1;
  }
  auto has_word = [&](std::string_view w) { return std::find(words.begin(), words.end(), w) != words.end(); };
  // A rate is "per second" at the end; a time per step ("time_per_step_ms") is still a time.
  bool rate_suffix = ends("_per_s") || ends("_per_sec") || ends("_per_second") || ends("samples_s") ||
                     ends("tokens_s") || ends("items_s");
  bool time_suffix = ends("_ms") || ends("_s") || ends("_us") || ends("_ns") || ends("_sec");
  static constexpr std::array<std::string_view, 7> k_rate_words = {"throughput", "fps", "qps",      "tps",
                                                                   "tflops",     "mfu", "bandwidth"};
  bool rate_word = std::any_of(k_rate_words.begin(), k_rate_words.end(), has_word);
  if (rate_suffix || (rate_word && !time_suffix)) m.better = Better::Higher;
  if (has_word("loss") || name == "step" || name == "exit_code") m.better = Better::None;
  if (rate_suffix)
    m.unit = "";
  else if (ends("_ms"))
    m.unit = "ms";
  else if (ends("_us"))
    m.unit = "us";
  else if (ends("_s") || ends("_sec"))
    m.unit = "s";
  else if (ends("_mb"))
    m.unit = "MB";
  else if (ends("_pct"))
    m.unit = "%";
  if (name == "throughput") m.unit = "samples/s";
  return m;
}

}  // namespace perfgate::model
