// parser: regex. Suite-declared patterns whose named groups are metrics, for
// logs no preset knows (docs/suite-format.md, "Reading logs").

#include <algorithm>

#include <fmt/format.h>

#include "harness/metrics/output_parser.hpp"
#include "harness/util/user_regex.hpp"

namespace perfgate::metrics {
namespace {

class RegexParser final : public OutputParser {
 public:
  struct Group {
    std::size_t index;  // regex group number
    std::string metric;
    std::string unit;
    std::optional<model::Better> better;
    int id = -2;  // -2: not seen yet; the metric is registered at its first match
  };
  struct Compiled {
    std::string text;  // as the suite wrote it, for messages
    util::UserRegex re;
    bool summary = false;
    std::size_t step_group = 0;  // 0: no `step` group
    std::vector<Group> groups;
  };

  RegexParser(MetricRegistry& registry, std::vector<Compiled> patterns)
      : OutputParser(registry), m_patterns(std::move(patterns)) {}

 private:
  void line(std::string_view text, LineSource src, long long line_no, double t_s) override {
    // RE2: linear in the line, so every line the reader keeps (up to 1 MiB;
    // longer ones are counted by OutputParser) is tried.
    for (auto& p : m_patterns) {
      if (!p.re.search(text, m_match)) continue;
      read(p, text, src, line_no, t_s);
    }
  }

  void read(Compiled& p, std::string_view text, LineSource src, long long line_no, double t_s) {
    long long step_no = m_last_step + 1;
    if (p.step_group > 0 && m_match[p.step_group].data() != nullptr) {
      auto v = parse_number(m_match[p.step_group]);
      if (!v || !(*v >= 0) || *v > 9e18)
        return bad(src, line_no,
                   fmt::format("regex '{}': step '{}' is not a non-negative number", p.text, m_match[p.step_group]),
                   text);
      step_no = static_cast<long long>(*v);
    }
    m_values.clear();
    for (auto& g : p.groups) {
      const auto sub = m_match[g.index];
      if (sub.data() == nullptr) continue;  // an optional group that took no part
      auto v = parse_number(sub);
      if (!v) {
        bad(src, line_no, fmt::format("regex '{}': {} '{}' is not a number", p.text, g.metric, sub), text);
        return;
      }
      if (g.id == -2) g.id = metric(g.metric, g.unit, g.better);
      if (g.id < 0) continue;
      m_values.emplace_back(g.id, *v);
    }
    if (m_values.empty()) return;
    if (p.summary) {
      for (auto [id, v] : m_values) summary(id, v);
      return;
    }
    m_last_step = step_no;
    step(step_no, t_s, m_values);
  }

  std::vector<Compiled> m_patterns;
  std::vector<std::string_view> m_match;
  std::vector<std::pair<int, double>> m_values;
  long long m_last_step = -1;
};

}  // namespace

Expected<std::unique_ptr<OutputParser>> make_regex_parser(MetricRegistry& registry,
                                                          const std::vector<model::LogPattern>& patterns) {
  if (patterns.empty()) return Error::input("the regex parser needs at least one pattern");
  std::vector<RegexParser::Compiled> compiled;
  for (const auto& lp : patterns) {
    const auto where = fmt::format("{}: regex '{}'", lp.loc.str(), lp.regex);
    auto re = util::UserRegex::compile(lp.regex);
    if (!re) return Error::input(fmt::format("{}: {}", where, re.error().message));
    RegexParser::Compiled c;
    c.text = lp.regex;
    c.re = std::move(*re);
    c.summary = lp.summary;
    for (std::size_t i = 0; i < c.re.groups(); ++i) {
      const auto& name = c.re.group_names()[i];
      if (name.empty()) continue;
      if (name == "step") {
        c.step_group = i + 1;
        continue;
      }
      RegexParser::Group g{i + 1, name, "", std::nullopt};
      if (auto u = lp.units.find(name); u != lp.units.end()) g.unit = u->second;
      if (auto b = lp.better.find(name); b != lp.better.end()) g.better = b->second;
      c.groups.push_back(std::move(g));
    }
    if (c.groups.empty())
      return Error::input(
          fmt::format("{} names no metric; name a group after the metric it feeds, "
                      "e.g. '(?<step_time_ms>[0-9.]+)'",
                      where));
    auto is_group = [&](const std::string& metric_name) {
      return std::any_of(c.groups.begin(), c.groups.end(), [&](const auto& g) { return g.metric == metric_name; });
    };
    for (const auto& [metric_name, unit] : lp.units)
      if (!is_group(metric_name))
        return Error::input(
            fmt::format("{}: a unit is given for '{}', which is not a group of the regex", where, metric_name));
    for (const auto& [metric_name, dir] : lp.better)
      if (!is_group(metric_name))
        return Error::input(
            fmt::format("{}: a direction is given for '{}', which is not a group of the regex", where, metric_name));
    compiled.push_back(std::move(c));
  }
  return std::unique_ptr<OutputParser>(std::make_unique<RegexParser>(registry, std::move(compiled)));
}

}  // namespace perfgate::metrics
