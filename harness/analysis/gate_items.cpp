#include "harness/analysis/gate.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

// The gate's items (gate.hpp, collect_items): a candidate's and its
// baselines' run summaries, matched by configuration and node class, as
// per-trial values per metric.

namespace perfgate::analysis {

std::vector<GateItem> collect_items(const RunSummary& cand, const std::vector<RunSummary>& base,
                                    const model::GatePolicy& policy, const std::vector<std::string>& metrics,
                                    const std::vector<RunSummary>& history) {
  return collect_items(std::vector<RunSummary>{cand}, base, policy, metrics, history);
}

std::vector<GateItem> collect_items(const std::vector<RunSummary>& cand_parts, const std::vector<RunSummary>& base,
                                    const model::GatePolicy& policy, const std::vector<std::string>& metrics,
                                    const std::vector<RunSummary>& history) {
  struct Side {
    bool present = false;
    int failed = 0, ok = 0, no_steady = 0, classified = 0;
    std::vector<std::string> failures;
    // metric -> values per run (one entry per run of this side)
    std::map<std::string, std::vector<std::vector<double>>> runs;
    std::map<std::string, int> non_finite;
  };
  struct Entry {
    std::string workload, params_json, label, node_class;
    Side base, cand, history;
    std::map<std::string, model::MetricInfo> infos;
    std::vector<std::string> metric_order;
    std::set<std::string> facts;
  };
  std::vector<Entry> entries;
  std::map<std::string, std::size_t> index;
  enum class Role { Cand, Base, History };
  auto add = [&](const RunSummary& rs, Role role) {
    for (const auto& cs : rs.configs) {
      // One node class's trials are compared with the same class's only.
      auto key = config_key(cs.workload, cs.params_json) + '\x1f' + rs.node_class;
      auto found = index.find(key);
      if (found == index.end()) {
        // History only widens the spread of configurations the gate compares.
        if (role == Role::History) continue;
        found = index.emplace(key, entries.size()).first;
        entries.push_back(Entry{cs.workload, cs.params_json, cs.label, rs.node_class, {}, {}, {}, {}, {}, {}});
      }
      Entry& e = entries[found->second];
      Side& side = role == Role::Cand ? e.cand : role == Role::Base ? e.base : e.history;
      side.present = true;
      side.failed += cs.trials_failed;
      side.ok += cs.trials_ok;
      for (const auto& [cls, n] : cs.steady_classes) {
        side.classified += n;
        if (cls == "no steady state") side.no_steady += n;
      }
      if (role == Role::Cand) side.failures.insert(side.failures.end(), cs.failures.begin(), cs.failures.end());
      for (const auto& row : cs.metrics) {
        if (row.fact) e.facts.insert(row.info.name);
        if (role != Role::History && e.infos.emplace(row.info.name, row.info).second)
          e.metric_order.push_back(row.info.name);
        auto& run = side.runs[row.info.name].emplace_back();
        for (const auto& t : row.trials) {
          if (std::isfinite(t.value))
            run.push_back(t.value);
          else
            ++side.non_finite[row.info.name];
        }
      }
    }
  };
  for (const auto& c : cand_parts) add(c, Role::Cand);
  for (const auto& b : base) add(b, Role::Base);
  for (const auto& h : history) add(h, Role::History);

  std::vector<GateItem> items;
  for (const auto& e : entries) {
    for (const auto& name : e.metric_order) {
      // Facts are settings, not measurements: never gated.
      if (e.facts.count(name)) continue;
      const model::MetricRule* rule = policy.match(name);
      if (metrics.empty()) {
        if (!rule) continue;
      } else if (std::none_of(metrics.begin(), metrics.end(),
                              [&](const std::string& m) { return model::glob_match(m, name); })) {
        continue;
      }
      GateItem it;
      it.workload = e.workload;
      it.params_json = e.params_json;
      it.label = model::with_node_class(e.label, e.node_class);
      it.node_class = e.node_class;
      it.metric = e.infos.at(name);
      it.rule = rule;
      auto fill = [&](const Side& s, SideValues& out) {
        out.present = s.present;
        out.failed = s.failed;
        out.ok = s.ok;
        out.failures = s.failures;
        out.no_steady = s.no_steady;
        out.classified = s.classified;
        if (auto v = s.runs.find(name); v != s.runs.end()) {
          out.runs = v->second;
          for (const auto& r : out.runs) out.values.insert(out.values.end(), r.begin(), r.end());
        }
        if (auto n = s.non_finite.find(name); n != s.non_finite.end()) out.non_finite = n->second;
      };
      fill(e.base, it.base);
      fill(e.cand, it.cand);
      if (auto h = e.history.runs.find(name); h != e.history.runs.end())
        for (const auto& r : h->second)
          if (!r.empty()) it.history.push_back(r);
      items.push_back(std::move(it));
    }
  }
  return items;
}

}  // namespace perfgate::analysis
