#include "harness/analysis/history.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "harness/stats/descriptive.hpp"

namespace perfgate::analysis {

namespace {

bool passes(const ConfigSummary& cs, const std::vector<std::string>& filters) {
  for (const auto& f : filters) {
    auto eq = f.find('=');
    std::string key = eq == std::string::npos ? f : f.substr(0, eq);
    std::string value = eq == std::string::npos ? "" : f.substr(eq + 1);
    if (key == "workload") {
      if (cs.workload != value) return false;
      continue;
    }
    auto it = cs.params.find(key);
    if (it == cs.params.end() || (eq != std::string::npos && it->second.text != value)) return false;
  }
  return true;
}

}  // namespace

std::vector<HistorySeries> history(const std::vector<RunSummary>& runs, const model::GatePolicy& policy,
                                   const HistoryOptions& opt) {
  std::vector<HistorySeries> out;
  std::map<std::string, std::size_t> index;
  for (const auto& rs : runs) {
    for (const auto& cs : rs.configs) {
      if (!passes(cs, opt.config_filters)) continue;
      for (const auto& row : cs.metrics) {
        const auto& name = row.info.name;
        bool wanted = opt.metrics.empty()
                          ? policy.match(name) != nullptr
                          : std::any_of(opt.metrics.begin(), opt.metrics.end(),
                                        [&](const std::string& m) { return model::glob_match(m, name); });
        if (!wanted) continue;
        std::vector<double> x;
        for (const auto& t : row.trials)
          if (std::isfinite(t.value)) x.push_back(t.value);
        if (x.empty()) continue;
        std::string key = cs.workload + '\x1f' + cs.params_json + '\x1f' + name;
        auto [pos, fresh] = index.try_emplace(key, out.size());
        if (fresh) {
          HistorySeries s;
          s.workload = cs.workload;
          s.params_json = cs.params_json;
          s.label = cs.label;
          s.metric = row.info;
          out.push_back(std::move(s));
        }
        out[pos->second].points.push_back(
            {rs.run.id, rs.run.git_commit, rs.run.started_at, stats::median(x), static_cast<int>(x.size())});
      }
    }
  }
  for (auto& s : out) {
    std::vector<double> v;
    for (const auto& p : s.points) v.push_back(p.value);
    const auto* rule = policy.match(s.metric.name);
    model::Better better = rule && rule->better ? *rule->better : s.metric.better;
    for (const auto& cp : stats::e_divisive(v, opt.change_points)) {
      HistoryChange c;
      c.index = cp.index;
      c.run_id = s.points[cp.index].run_id;
      c.commit = s.points[cp.index].commit;
      c.before = cp.before_median;
      c.after = cp.after_median;
      c.change_rel = cp.relative_change;
      c.p_value = cp.p_value;
      c.regression =
          (better == model::Better::Higher && c.change_rel < 0) || (better == model::Better::Lower && c.change_rel > 0);
      s.changes.push_back(c);
    }
  }
  return out;
}

}  // namespace perfgate::analysis
