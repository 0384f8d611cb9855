#include "harness/report/history_reporter.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/report/table.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::report {

namespace {

std::string describe(const analysis::HistoryChange& c, const analysis::HistorySeries& s) {
  return fmt::format("run {}{}: {} -> {} ({:+.1f}%, p {:.3f}){}", c.run_id,
                     c.commit.empty() ? "" : " (" + c.commit.substr(0, 10) + ")",
                     format_with_unit(c.before, s.metric.unit), format_with_unit(c.after, s.metric.unit),
                     c.change_rel * 100, c.p_value,
                     c.regression ? " worse" : (s.metric.better == model::Better::None ? "" : " better"));
}

}  // namespace

std::string history_table(const HistoryReport& r) {
  std::string out = fmt::format("history of suite {}: {} run(s); change points by E-divisive means, p < {} (seed {})\n",
                                r.suite, r.runs, r.significance, r.seed);
  for (const auto& w : r.warnings) out += "warning: " + w + "\n";
  out += "\n";
  TextTable t;
  using A = TextTable::Align;
  t.columns({"workload", "configuration", "metric", "runs", "first", "latest", "change points"},
            {A::Left, A::Left, A::Left, A::Right, A::Right, A::Right, A::Left});
  int changes = 0;
  for (const auto& s : *r.series) {
    std::vector<std::string> cps;
    for (const auto& c : s.changes) cps.push_back(describe(c, s));
    changes += static_cast<int>(s.changes.size());
    t.row({s.workload, s.label.empty() ? "-" : s.label, s.metric.name, std::to_string(s.points.size()),
           format_with_unit(s.points.front().value, s.metric.unit),
           format_with_unit(s.points.back().value, s.metric.unit), cps.empty() ? "none" : cps.front()});
    for (std::size_t i = 1; i < cps.size(); ++i) t.row({"", "", "", "", "", "", cps[i]});
  }
  out += t.render();
  out += fmt::format("\n{} series, {} change point(s)\n", r.series->size(), changes);
  return out;
}

std::string history_json(const HistoryReport& r) {
  using nlohmann::json;
  json j;
  j["suite"] = r.suite;
  j["runs"] = r.runs;
  j["significance"] = r.significance;
  j["seed"] = r.seed;
  j["warnings"] = r.warnings;
  json series = json::array();
  for (const auto& s : *r.series) {
    json pts = json::array();
    for (const auto& p : s.points)
      pts.push_back(
          {{"run", p.run_id}, {"commit", p.commit}, {"started_at", p.started_at}, {"value", p.value}, {"n", p.n}});
    json cps = json::array();
    for (const auto& c : s.changes)
      cps.push_back({{"index", c.index},
                     {"run", c.run_id},
                     {"commit", c.commit},
                     {"before", c.before},
                     {"after", c.after},
                     {"change", c.change_rel},
                     {"p", c.p_value},
                     {"regression", c.regression}});
    series.push_back({{"workload", s.workload},
                      {"params", json::parse(s.params_json, nullptr, false)},
                      {"label", s.label},
                      {"metric", s.metric.name},
                      {"unit", s.metric.unit},
                      {"better", model::to_string(s.metric.better)},
                      {"points", std::move(pts)},
                      {"change_points", std::move(cps)}});
  }
  j["series"] = std::move(series);
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace perfgate::report
