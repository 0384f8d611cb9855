// ais_bench inference summary:
//
//   [INFO] NPU_compute_time (ms): min = 2.41, max = 2.52, mean = 2.45, median = 2.45, percentile(99%) = 2.50
//   [INFO] throughput 1000*batchsize.mean(1)/NPU_compute_time.mean(2.45): 408.16
//
// A timer line gives one summary per statistic: <timer>_ms (the median), <timer>_mean_ms, _min_ms, _max_ms,
// _pNN_ms for percentile(NN%), and <timer>_<key>_ms for any other key a later version adds.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "harness/metrics/output_parser.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::metrics {
namespace {

using model::Better;
constexpr auto npos = std::string_view::npos;

constexpr std::string_view k_timer_marker = " (ms):";
constexpr std::string_view k_throughput_word = "throughput";

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// The metric-name suffix of one statistic: "median" -> "", "mean" -> "_mean", "percentile(99%)" -> "_p99",
// "percentile(99.9%)" -> "_p99_9"; nullopt when a percentile's number is unreadable.
std::optional<std::string> statistic_suffix(std::string_view key) {
  if (key == "median") return std::string();
  if (key.starts_with("percentile(") && key.ends_with("%)")) {
    auto pct = key.substr(11, key.size() - 13);
    auto v = parse_number(pct);
    if (!v || pct.empty() || pct.find_first_not_of("0123456789.") != npos) return std::nullopt;
    std::string s = "_p";
    for (char c : pct) s += c == '.' ? '_' : c;
    return s;
  }
  std::string s = "_";
  s += snake_case(key);
  return s;
}

class AisBenchParser final : public OutputParser {
 public:
  explicit AisBenchParser(MetricRegistry& registry) : OutputParser(registry) {}

  void line(std::string_view text, LineSource src, long long line_no, double /*t_s*/) override {
    if (auto at = text.find(k_timer_marker); at != npos) return timer_line(text, at, src, line_no);
    if (text.find(k_throughput_word) != npos) throughput_line(text, src, line_no);
  }

 private:
  void timer_line(std::string_view text, std::size_t at, LineSource src, long long line_no) {
    // The timer's name is the word right before " (ms):".
    std::size_t begin = at;
    while (begin > 0 && is_name_char(text[begin - 1])) --begin;
    auto timer = text.substr(begin, at - begin);
    auto list = text.substr(at + k_timer_marker.size());
    // Recognised only as "key = value, ...": other "(ms):" lines are not statistics.
    if (timer.empty() || list.find('=') == npos) return;
    auto base = snake_case(timer);

    m_items.clear();
    for (std::size_t pos = 0; pos <= list.size();) {
      auto comma = list.find(',', pos);
      auto item = util::trim(list.substr(pos, comma == npos ? npos : comma - pos));
      pos = comma == npos ? list.size() + 1 : comma + 1;
      if (item.empty()) continue;
      auto eq = item.find('=');
      if (eq == npos)
        return bad(src, line_no, fmt::format("{}: '{}' has no value (line cut short?)", timer, excerpt_of(item)), text);
      auto key = util::trim(item.substr(0, eq));
      if (key.empty()) return bad(src, line_no, fmt::format("{}: a value without a statistic name", timer), text);
      auto raw = util::trim(item.substr(eq + 1));
      auto v = parse_number(raw);
      if (!v) return bad(src, line_no, fmt::format("{} {} '{}' is not a number", timer, key, excerpt_of(raw)), text);
      auto suffix = statistic_suffix(key);
      if (!suffix) return bad(src, line_no, fmt::format("{}: unreadable statistic '{}'", timer, excerpt_of(key)), text);
      m_items.emplace_back(base + *suffix + "_ms", *v);
    }
    // Only a line read in full gives its numbers.
    for (const auto& [name, v] : m_items) summary(metric(name, "ms", Better::Lower), v);
  }

  void throughput_line(std::string_view text, LineSource src, long long line_no) {
    auto s = skip_bracket_prefix(text);
    if (!s.starts_with(k_throughput_word)) return;
    auto after = s.substr(k_throughput_word.size());
    // "throughput" as a word, then a formula that ends with ": <number>"
    if (after.empty() || !(after.front() == ' ' || after.front() == ':')) return;
    auto colon = after.rfind(':');
    if (colon == npos) return;
    auto raw = util::trim(after.substr(colon + 1));
    auto v = parse_number(raw);
    if (!v) return bad(src, line_no, fmt::format("throughput '{}' is not a number", excerpt_of(raw)), text);
    if (m_throughput_id == k_unresolved) m_throughput_id = metric("throughput", "samples/s", Better::Higher);
    summary(m_throughput_id, *v);
  }

  static constexpr int k_unresolved = -2;
  int m_throughput_id = k_unresolved;
  std::vector<std::pair<std::string, double>> m_items;  // reused per timer line
};

}  // namespace

std::unique_ptr<OutputParser> make_ais_bench_parser(MetricRegistry& registry) {
  return std::make_unique<AisBenchParser>(registry);
}

}  // namespace perfgate::metrics
