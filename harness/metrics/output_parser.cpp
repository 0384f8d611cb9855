#include "harness/metrics/output_parser.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "harness/util/strings.hpp"

namespace perfgate::metrics {

void OutputParser::feed_line(std::string_view text, LineSource src, bool oversized, double t_s) {
  long long line_no = ++m_lines[static_cast<int>(src)];
  // Nothing a parser recognises is a megabyte long; a cut line is not worth a
  // guess, but it is counted (notes()).
  if (oversized) {
    if (m_oversized++ == 0) m_first_oversized = fmt::format("{} line {}", to_string(src), line_no);
    return;
  }
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  line(text, src, line_no, t_s);
}

int OutputParser::metric(std::string_view name, std::string_view unit, std::optional<model::Better> better, bool fact) {
  int id = m_registry.id(name);
  if (id < 0) return id;
  auto i = static_cast<std::size_t>(id);
  if (i >= m_announced.size()) m_announced.resize(i + 1, false);
  if (!m_announced[i]) {
    m_announced[i] = true;
    if (!unit.empty()) m_registry.sink().on_meta_unit(id, unit);
    if (better) m_registry.sink().on_meta_better(id, *better);
    if (fact) m_registry.sink().on_meta_fact(id);
  }
  return id;
}

void OutputParser::step(long long step_no, double t_s, const std::vector<std::pair<int, double>>& values) {
  if (values.empty()) return;
  ++m_records;
  m_registry.sink().on_step(step_no, t_s, values);
}

void OutputParser::summary(int id, double value) {
  if (id < 0) return;
  ++m_records;
  m_registry.sink().on_summary(id, value);
}

std::vector<std::string> OutputParser::notes() const {
  auto out = m_notes;
  if (m_oversized > 0)
    out.push_back(fmt::format("{} line(s) longer than the 1 MiB a line is read to were not parsed (first: {})",
                              m_oversized, m_first_oversized));
  return out;
}

void OutputParser::bad(LineSource src, long long line_no, std::string reason, std::string_view text) {
  m_malformed.add(src, line_no, std::move(reason), text);
}

std::vector<std::string> primary_preference(std::string_view parser) {
  if (parser == "gbench") return {};
  if (parser == "ais_bench") return {"npu_compute_time_ms"};
  return {"throughput", "step_time_ms"};
}

std::string default_primary(std::string_view parser, const std::vector<std::string>& reported) {
  auto has = [&](std::string_view name) { return std::find(reported.begin(), reported.end(), name) != reported.end(); };
  if (parser == "gbench") {
    for (const auto& m : reported)
      if (m.find(".real_time_") != std::string::npos) return m;
  }
  for (const auto& name : primary_preference(parser))
    if (has(name)) return name;
  return reported.empty() ? std::string() : reported.front();
}

std::optional<double> parse_number(std::string_view text) {
  auto t = util::trim(text);
  if (t.empty()) return std::nullopt;
  if (t.front() == '+') t.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec == std::errc::result_out_of_range) {
    // Beyond double range: still a number, and a huge one (a loss scale, a diverging loss).
    return t.front() == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  if (ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
  return v;
}

std::string_view skip_bracket_prefix(std::string_view s) {
  s = util::trim(s);
  while (!s.empty() && s.front() == '[') {
    auto close = s.find(']');
    if (close == std::string_view::npos) break;
    s = s.substr(close + 1);
    if (!s.empty() && s.front() == ':') s.remove_prefix(1);
    s = util::trim(s);
  }
  return s;
}

std::string snake_case(std::string_view text) {
  std::string out;
  bool gap = false;
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      if (gap && !out.empty()) out += '_';
      gap = false;
      out += static_cast<char>(std::tolower(u));
    } else if (c == '%') {
      if (!out.empty()) out += '_';
      out += "pct";
      gap = false;
    } else {
      gap = true;
    }
  }
  return out;
}

const std::vector<std::string>& parser_names() {
  static const std::vector<std::string> names = {"jsonl",     "megatron", "mindspore", "modelzoo",
                                                 "ais_bench", "gbench",   "regex"};
  return names;
}

Expected<std::unique_ptr<OutputParser>> make_output_parser(const model::MetricsSpec& spec, MetricRegistry& registry) {
  const auto& p = spec.parser;
  if (p == "megatron") return make_megatron_parser(registry);
  if (p == "mindspore") {
    double batch = 0;
    if (!spec.batch_size.empty()) {
      auto b = parse_number(spec.batch_size);
      if (!b || !(*b > 0) || std::isinf(*b))
        return Error::input(
            fmt::format("{}: metrics.batch_size '{}' is not a positive number", spec.loc.str(), spec.batch_size));
      batch = *b;
    }
    return make_mindspore_parser(registry, batch);
  }
  if (p == "modelzoo") return make_modelzoo_parser(registry);
  if (p == "ais_bench") return make_ais_bench_parser(registry);
  if (p == "gbench") return make_gbench_parser(registry, spec.file);
  if (p == "regex") return make_regex_parser(registry, spec.patterns);
  return Error::input(fmt::format("{}: no output parser named '{}'", spec.loc.str(), p));
}

}  // namespace perfgate::metrics
