#pragma once
// Change points over past runs: for each (configuration, metric), the series
// of per-run medians in run order, and where its level shifted.

#include <cstdint>
#include <string>
#include <vector>

#include "harness/analysis/run_summary.hpp"
#include "harness/model/verdict.hpp"
#include "harness/stats/change_points.hpp"

namespace perfgate::analysis {

struct HistoryPoint {
  long long run_id = 0;
  std::string commit;
  double started_at = 0;
  double value = 0;  // median of the run's trial values
  int n = 0;         // trials behind it
};

struct HistoryChange {
  std::size_t index = 0;  // into points: the first run after the change
  long long run_id = 0;
  std::string commit;
  double before = 0, after = 0;
  double change_rel = 0;
  double p_value = 1;
  bool regression = false;  // in the metric's bad direction
};

struct HistorySeries {
  std::string workload, params_json, label;
  model::MetricInfo metric;
  std::vector<HistoryPoint> points;
  std::vector<HistoryChange> changes;
};

struct HistoryOptions {
  std::vector<std::string> metrics;         // globs; empty: the gated metrics of `policy`
  std::vector<std::string> config_filters;  // KEY=VALUE on parameters, or workload=NAME; all must hold
  stats::ChangePointOptions change_points;
};

// `runs` in chronological order (oldest first).
std::vector<HistorySeries> history(const std::vector<RunSummary>& runs, const model::GatePolicy& policy,
                                   const HistoryOptions& opt);

}  // namespace perfgate::analysis
