#pragma once
// Comparisons of a candidate against a baseline, per (configuration,
// metric), and the verdicts a gate draws from them. The core is a pure
// function of trial values, so the calibration benchmark feeds it the same
// way the CLI does.

#include <functional>
#include <string>
#include <vector>

#include "harness/analysis/run_summary.hpp"
#include "harness/model/verdict.hpp"
#include "harness/util/error.hpp"

namespace perfgate::analysis {

// A configuration's identity across runs: its workload and parameters.
std::string config_key(const std::string& workload, const std::string& params_json);

// The trial values of one side of one comparison.
struct SideValues {
  bool present = false;        // the configuration ran on this side at all
  std::vector<double> values;  // finite per-trial values of the metric, run after run
  // The same values per run (the baseline's runs; the candidate is one run).
  // When empty, `values` counts as one run.
  std::vector<std::vector<double>> runs;
  int failed = 0;                     // trials of the configuration that failed
  int ok = 0;                         // trials of the configuration that succeeded
  int non_finite = 0;                 // trials whose value was NaN or infinite
  std::vector<std::string> failures;  // why each failed trial failed (exit code, signal, first error line)
  int no_steady = 0, classified = 0;  // warmup auto: trials with no steady state, of those classified
};

struct GateItem {
  std::string workload, params_json, label;
  std::string node_class;  // '' unless the gate compares node classes apart
  model::MetricInfo metric;
  const model::MetricRule* rule = nullptr;  // the policy rule, nullptr when compared ad hoc
  SideValues base, cand;
  // Older runs of the configuration, read for the run-to-run spread only.
  std::vector<std::vector<double>> history;
};

// What a gate concluded: every comparison (one per configuration and metric,
// plus one per configuration whose trials failed), the joint tests, and the
// size of the multiple-comparison family that set the level.
struct Evaluation {
  std::vector<model::Comparison> comparisons;
  std::vector<model::JointTest> joint;
  int family = 0;         // tests under the false-discovery control
  double alpha_lone = 0;  // the raw p a lone discovery needs in this family
};

// The multiple-comparison correction runs over every test together:
// comparisons, failed-trial tests and joint tests.
Evaluation evaluate_gate(const std::vector<GateItem>& items, const model::GatePolicy& policy);
// The comparisons of evaluate_gate.
std::vector<model::Comparison> evaluate(const std::vector<GateItem>& items, const model::GatePolicy& policy);

// Items from run summaries: the candidate against the trials of the baseline
// runs, for each metric the policy gates (or `metrics` when given: those,
// gated or not). `history` runs add their values for the run-to-run spread.
std::vector<GateItem> collect_items(const RunSummary& cand, const std::vector<RunSummary>& base,
                                    const model::GatePolicy& policy, const std::vector<std::string>& metrics = {},
                                    const std::vector<RunSummary>& history = {});
// The same over runs summarised per node class (NodeClassView::summarise):
// one item per configuration, metric and node class, each side holding only
// the summaries of its class; the label names the class when it is set.
std::vector<GateItem> collect_items(const std::vector<RunSummary>& cand_parts, const std::vector<RunSummary>& base,
                                    const model::GatePolicy& policy, const std::vector<std::string>& metrics,
                                    const std::vector<RunSummary>& history);

struct VerdictCounts {
  int regression = 0, improvement = 0, unchanged = 0, inconclusive = 0, missing = 0, failed = 0;
  int total() const { return regression + improvement + unchanged + inconclusive + missing + failed; }
};
VerdictCounts count_verdicts(const std::vector<model::Comparison>& cs);

// Adaptive mode: more candidate trials for comparisons that are inconclusive
// or suspicious (raw p below the screening level and a change beyond the
// threshold, yet not significant after correction), until each is decided
// or its configuration has `max_trials` candidate trials.
struct AdaptiveOptions {
  int max_trials = 20;  // candidate trials per configuration, all told
  int max_batch = 5;    // most trials added to one configuration per round
};

struct TrialRequest {
  std::string workload, params_json, label;
  int count = 0;
};

// Supplies the gate's items and runs requested trials. The CLI runs real
// trials into the candidate run; the calibration benchmark draws numbers.
class TrialSource {
 public:
  virtual ~TrialSource() = default;
  virtual Expected<std::vector<GateItem>> items() = 0;
  virtual Status add_trials(const std::vector<TrialRequest>& requests) = 0;
};

struct GateOutcome {
  std::vector<model::Comparison> comparisons;
  std::vector<model::JointTest> joint;
  int family = 0;
  double alpha_lone = 0;
  int rounds = 0;        // adaptive rounds run
  int looks = 1;         // most evaluations the adaptive mode could make (see adaptive_gate)
  int trials_added = 0;  // candidate trials the adaptive mode launched
};

Expected<GateOutcome> adaptive_gate(TrialSource& source, const model::GatePolicy& policy, const AdaptiveOptions& opt);

// The level of the adaptive mode's last look, which decides: the policy's
// FDR less the share its interim looks spend (adaptive_gate). Resolution is
// judged here whenever the mode may look more than once.
model::GatePolicy adaptive_final_policy(const model::GatePolicy& policy);

// How many times the adaptive mode may look at the data: once, then once per
// batch of max_batch trials until the configuration with fewest candidate
// trials reaches max_trials.
int adaptive_looks(const std::vector<GateItem>& items, const AdaptiveOptions& opt);

// The comparisons the adaptive mode would re-run, and how many trials each
// configuration gets next: undecided ones that may hide a regression, and
// underpowered ones (up to the trials their test needs to reach the level).
std::vector<TrialRequest> adaptive_requests(const std::vector<model::Comparison>& cs, const model::GatePolicy& policy,
                                            const AdaptiveOptions& opt);

// Sorted most severe first, then by |change|.
void sort_by_severity(std::vector<model::Comparison>& cs);

// The host probe's median over a run's trials (each trial's mean reading of
// host.probe_ms); NaN when the run did not probe.
double host_probe_median(const RunSummary& rs);
// What the probe says next to a gate's verdicts: "" when either run did not
// probe, else one sentence (slower, faster, or steady, with both medians).
std::string host_probe_note(double cand_ms, double base_ms, bool flagged);

// Comparisons that could not have flagged a lone regression (and did not flag one).
int count_underpowered(const std::vector<model::Comparison>& cs);

}  // namespace perfgate::analysis
