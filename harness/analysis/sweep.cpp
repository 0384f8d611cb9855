#include "harness/analysis/sweep.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "harness/stats/descriptive.hpp"
#include "harness/stats/mann_whitney.hpp"
#include "harness/stats/multiple.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::analysis {

namespace {

std::vector<double> values_of(const MetricRow& row) {
  std::vector<double> v;
  for (const auto& t : row.trials)
    if (std::isfinite(t.value)) v.push_back(t.value);
  return v;
}

std::string full_label(const ConfigSummary& c) { return c.workload + (c.label.empty() ? "" : " " + c.label); }

// The metric a sweep ranks by default: the configurations' recorded primary,
// else throughput, else step time, else the first measurement reported.
std::string default_metric(const RunSummary& rs) {
  for (const auto& c : rs.configs)
    if (!c.primary_metric.empty()) return c.primary_metric;
  for (const char* name : {"throughput", "step_time_ms"})
    for (const auto& c : rs.configs)
      if (c.find(name)) return name;
  for (const auto& c : rs.configs)
    for (const auto& m : c.metrics)
      if (!m.harness_metric && !m.fact) return m.info.name;
  return "";
}

}  // namespace

std::vector<std::string> varying_parameters(const RunSummary& rs) {
  std::map<std::string, std::set<std::string>> seen;
  for (const auto& c : rs.configs)
    for (const auto& [k, v] : c.params) seen[k].insert(v.text);
  std::vector<std::string> out;
  for (const auto& [k, vals] : seen)
    if (vals.size() > 1) out.push_back(k);
  if (std::set<std::string> workloads =
          [&] {
            std::set<std::string> w;
            for (const auto& c : rs.configs) w.insert(c.workload);
            return w;
          }();
      workloads.size() > 1)
    out.insert(out.begin(), "workload");
  return out;
}

Expected<SweepResult> rank_sweep(const RunSummary& rs, const SweepOptions& opt) {
  if (rs.configs.size() < 2)
    return Error::input(fmt::format("run {} has {} configuration{}: a sweep ranks several (run a suite with a matrix)",
                                    rs.run.id, rs.configs.size(), rs.configs.size() == 1 ? "" : "s"));
  SweepResult r;
  r.metric = opt.metric.empty() ? default_metric(rs) : opt.metric;
  // Every metric any configuration reported, for the error message.
  std::set<std::string> known;
  for (const auto& c : rs.configs)
    for (const auto& m : c.metrics)
      if (!m.fact) known.insert(m.info.name);
  std::vector<std::string> known_list(known.begin(), known.end());
  if (r.metric.empty() || !known.count(r.metric))
    return Error::input(fmt::format("run {} has no metric '{}' to rank by{}; metrics: {}", rs.run.id, r.metric,
                                    util::did_you_mean(r.metric, known_list), util::join(known_list, ", ")));

  for (const auto& c : rs.configs) {
    const MetricRow* row = c.find(r.metric);
    if (!row || row->n == 0) {
      r.notes.push_back(
          fmt::format("{}: no value of {} (trials failed: {})", full_label(c), r.metric, c.trials_failed));
      continue;
    }
    SweepEntry e;
    e.config = &c;
    e.label = full_label(c);
    e.n = row->n;
    e.median = row->median;
    e.ci_low = row->ci_low;
    e.ci_high = row->ci_high;
    e.ci_coverage = row->ci_coverage;
    e.min_max = row->ci_coverage < 0.95;
    if (r.unit.empty()) r.unit = row->info.unit;
    if (r.better == model::Better::None) r.better = row->info.better;
    r.entries.push_back(std::move(e));
  }
  if (r.better == model::Better::None)
    return Error::input(
        fmt::format("{} has no better direction (higher or lower): nothing to rank by; name one with "
                    "--metric or say it in the workload's meta",
                    r.metric));
  if (r.entries.size() < 2)
    return Error::input(fmt::format("only {} configuration(s) of run {} reported {}: nothing to rank", r.entries.size(),
                                    rs.run.id, r.metric));
  const bool higher = r.better == model::Better::Higher;
  std::stable_sort(r.entries.begin(), r.entries.end(), [&](const SweepEntry& a, const SweepEntry& b) {
    return higher ? a.median > b.median : a.median < b.median;
  });
  for (std::size_t i = 0; i < r.entries.size(); ++i) r.entries[i].rank = static_cast<int>(i) + 1;
  model::MetricInfo info{r.metric, r.unit, r.better};
  r.threshold_rel = opt.policy.threshold_for(info, opt.policy.match(r.metric));

  // The best against each other, Holm over the k - 1 two-sided tests.
  const auto best_values = values_of(*r.entries[0].config->find(r.metric));
  std::vector<double> p;
  for (std::size_t i = 1; i < r.entries.size(); ++i) {
    auto& e = r.entries[i];
    const auto other = values_of(*e.config->find(r.metric));
    auto mw = stats::mann_whitney_u(other, best_values);
    auto hl = stats::hodges_lehmann(other, best_values, 0.95);
    // Advantage of the best over this one, relative to this one's median, in the good direction.
    const double scale = std::fabs(e.median) > 0 ? std::fabs(e.median) : 1;
    e.advantage_rel = (higher ? hl.shift : -hl.shift) / scale;
    e.p_value = mw.p_value;
    p.push_back(mw.p_value);
  }
  auto adjusted = stats::holm(p);
  const double alpha_each = opt.alpha / std::max<std::size_t>(1, p.size());  // Holm's first step
  for (std::size_t i = 1; i < r.entries.size(); ++i) {
    auto& e = r.entries[i];
    e.p_adjusted = adjusted[i - 1];
    e.beaten = e.p_adjusted <= opt.alpha && e.advantage_rel > r.threshold_rel;
    const auto other = values_of(*e.config->find(r.metric));
    // Holm's first step multiplies by k - 1: below this no data can go.
    e.min_p_adjusted =
        std::min(1.0, stats::mann_whitney_min_p(best_values.size(), other.size()) * static_cast<double>(p.size()));
    e.underpowered = e.min_p_adjusted > opt.alpha;
    if (!e.beaten) {
      r.tied_with_best.push_back(e.label);
      // Trials per configuration that would likely separate them: the
      // observed advantage (at least the threshold) against the spread inside
      // each configuration (not across both: that spread holds the lead
      // itself), and never fewer than the test needs to reach alpha at all.
      const double sd = best_values.size() > 1 && other.size() > 1
                            ? std::hypot(stats::stddev(best_values), stats::stddev(other)) / std::sqrt(2.0)
                            : 0;
      const double shift = std::max(std::fabs(e.advantage_rel), r.threshold_rel) * std::fabs(e.median);
      int need = stats::mann_whitney_trials_needed(shift, sd, alpha_each, opt.policy.power);
      if (need != std::numeric_limits<int>::max()) {
        int resolvable = 2;
        while (resolvable < 200 && stats::mann_whitney_min_p(static_cast<std::size_t>(resolvable),
                                                             static_cast<std::size_t>(resolvable)) > alpha_each)
          ++resolvable;
        need = std::max(need, resolvable);
      }
      e.repeats_to_separate = need == std::numeric_limits<int>::max() ? -1 : need;
    }
  }
  r.clear_winner = r.entries[1].beaten;

  if (!opt.axes.empty()) {
    if (opt.axes.size() != 2)
      return Error::input(fmt::format("--axes takes two parameters (rows,columns), found {}", opt.axes.size()));
    auto varying = varying_parameters(rs);
    for (const auto& a : opt.axes)
      if (std::find(varying.begin(), varying.end(), a) == varying.end())
        return Error::input(fmt::format("--axes: '{}' does not vary in run {}{}; parameters that vary: {}", a,
                                        rs.run.id, util::did_you_mean(a, varying), util::join(varying, ", ")));
    r.axes = opt.axes;
    auto value_of = [&](const ConfigSummary& c, const std::string& axis) -> std::string {
      if (axis == "workload") return c.workload;
      auto it = c.params.find(axis);
      return it == c.params.end() ? "-" : it->second.text;
    };
    std::vector<std::string> rows, cols;
    for (const auto& e : r.entries) {
      auto rv = value_of(*e.config, opt.axes[0]), cv = value_of(*e.config, opt.axes[1]);
      if (std::find(rows.begin(), rows.end(), rv) == rows.end()) rows.push_back(rv);
      if (std::find(cols.begin(), cols.end(), cv) == cols.end()) cols.push_back(cv);
    }
    // Natural order of the values: numbers by value, the rest as text.
    auto natural = [](const std::string& a, const std::string& b) {
      char* ea = nullptr;
      char* eb = nullptr;
      double x = std::strtod(a.c_str(), &ea), y = std::strtod(b.c_str(), &eb);
      bool na = ea && *ea == '\0' && !a.empty(), nb = eb && *eb == '\0' && !b.empty();
      if (na && nb) return x < y;
      if (na != nb) return na;
      return a < b;
    };
    std::sort(rows.begin(), rows.end(), natural);
    std::sort(cols.begin(), cols.end(), natural);
    r.rows = rows;
    r.columns = cols;
    for (const auto& rv : rows)
      for (const auto& cv : cols) {
        SweepCell cell{rv, cv, -1, 0};
        for (std::size_t i = 0; i < r.entries.size(); ++i) {
          const auto& c = *r.entries[i].config;
          if (value_of(c, opt.axes[0]) != rv || value_of(c, opt.axes[1]) != cv) continue;
          ++cell.configurations;
          if (cell.entry < 0) cell.entry = static_cast<int>(i);  // entries are ranked: the first is the cell's best
        }
        r.cells.push_back(cell);
      }
    if (std::any_of(r.cells.begin(), r.cells.end(), [](const SweepCell& c) { return c.configurations > 1; }))
      r.notes.push_back("other parameters vary too: each cell shows its best configuration");
  }
  return r;
}

}  // namespace perfgate::analysis
