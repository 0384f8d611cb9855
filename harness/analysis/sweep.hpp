#pragma once
// A sweep: the configurations of one run ranked by one metric, the best one,
// and whether it is better than each of the others by more than the practical
// threshold once the choice of the best is accounted for. The CLI's
// `perfgate sweep`, the end of `perfgate run` and the dashboard's sweep page
// all use this.
//
// Method. The best is the configuration with the best median (in the
// metric's direction). It is compared with every other configuration by a
// two-sided Mann-Whitney test, and the k - 1 p-values are adjusted with Holm's
// step-down: two-sided so that picking the best by its own sample does not
// count as evidence of direction, and adjusted over every comparison the
// choice implies, a conservative nonparametric stand-in for Hsu's
// multiple comparisons with the best (Hsu 1984, "Constrained simultaneous
// confidence intervals for multiple comparisons with the best", Ann. Stat.
// 12:1136-1144). The best beats another configuration when the adjusted p is
// at most alpha and its Hodges-Lehmann advantage exceeds the threshold;
// otherwise the two are tied. "No clear winner" when it ties with the
// runner-up. For a tie the report gives the repeats per configuration that
// would likely separate them (Noether's sample size at the adjusted level).

#include <optional>
#include <string>
#include <vector>

#include "harness/analysis/run_summary.hpp"
#include "harness/model/verdict.hpp"

namespace perfgate::analysis {

struct SweepOptions {
  std::string metric;                                       // empty: the run's primary metric
  std::vector<std::string> axes;                            // parameters of the two-axis table (0 or 2)
  double alpha = 0.05;                                      // of the comparisons with the best, after Holm
  model::GatePolicy policy = model::default_gate_policy();  // practical thresholds
};

struct SweepEntry {
  const ConfigSummary* config = nullptr;
  std::string label;  // workload and parameters
  int rank = 0;       // 1: the best
  int n = 0;
  double median = 0, ci_low = 0, ci_high = 0, ci_coverage = 0;
  bool min_max = false;  // the interval is [min, max]: too few trials for 95 %
  // Against the best (the best's own fields stay empty):
  double advantage_rel = 0;  // how much better the best is, relative to this one (HL shift)
  double p_value = 1, p_adjusted = 1;
  bool beaten = false;          // the best is better beyond the threshold, significantly
  int repeats_to_separate = 0;  // tied: trials per configuration likely to separate them; -1 if no number will
  // The test cannot reach alpha at these trial counts whatever the data (the
  // smallest Mann-Whitney p, Holm-adjusted, is above it): a tie of resolution.
  bool underpowered = false;
  double min_p_adjusted = 0;
};

struct SweepCell {
  std::string row, column;  // values of the two axes
  int entry = -1;           // index into entries of the best configuration in the cell; -1: none
  int configurations = 0;   // configurations in the cell (more when other parameters vary)
};

struct SweepResult {
  std::string metric, unit;
  model::Better better = model::Better::None;
  double threshold_rel = 0;
  std::vector<SweepEntry> entries;          // ranked, best first
  bool clear_winner = false;                // the best beats the runner-up
  std::vector<std::string> tied_with_best;  // labels of configurations the best does not beat
  std::vector<std::string> axes;            // the table's axes when asked
  std::vector<std::string> rows, columns;
  std::vector<SweepCell> cells;
  std::vector<std::string> notes;
};

// The parameters that take more than one value across the run's configurations.
std::vector<std::string> varying_parameters(const RunSummary& rs);

// Errors: a run with one configuration, a metric no configuration reported (with
// did-you-mean), a metric without a direction, axes that do not vary.
Expected<SweepResult> rank_sweep(const RunSummary& rs, const SweepOptions& opt);

}  // namespace perfgate::analysis
