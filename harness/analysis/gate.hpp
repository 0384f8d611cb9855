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

// The trial values of one side of one comparison.
struct SideValues {
  bool present = false;          // the configuration ran on this side at all
  std::vector<double> values;    // finite per-trial values of the metric
  int failed = 0;                // trials of the configuration that failed
  int non_finite = 0;            // trials whose value was NaN or infinite
};

struct GateItem {
  std::string workload, params_json, label;
  model::MetricInfo metric;
  const model::MetricRule* rule = nullptr;  // the policy rule, nullptr when compared ad hoc
  SideValues base, cand;
};

// Every comparison of the items, with adjusted p-values and verdicts. The
// multiple-comparison correction runs over every tested item together.
std::vector<model::Comparison> evaluate(const std::vector<GateItem>& items, const model::GatePolicy& policy);

// Items from run summaries: the candidate against the pooled trials of the
// baseline runs, for each metric the policy gates (or `metrics` when given:
// those, gated or not).
std::vector<GateItem> collect_items(const RunSummary& cand, const std::vector<RunSummary>& base,
                                    const model::GatePolicy& policy, const std::vector<std::string>& metrics = {});

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
  int max_trials = 20;   // candidate trials per configuration, all told
  int max_batch = 5;     // most trials added to one configuration per round
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
  int rounds = 0;            // adaptive rounds run
  int looks = 1;             // most evaluations the adaptive mode could make (see adaptive_gate)
  int trials_added = 0;      // candidate trials the adaptive mode launched
};

Expected<GateOutcome> adaptive_gate(TrialSource& source, const model::GatePolicy& policy, const AdaptiveOptions& opt);

// How many times the adaptive mode may look at the data: once, then once per
// batch of max_batch trials until the configuration with fewest candidate
// trials reaches max_trials.
int adaptive_looks(const std::vector<GateItem>& items, const AdaptiveOptions& opt);

// The comparisons the adaptive mode would re-run, and how many trials each configuration gets next.
std::vector<TrialRequest> adaptive_requests(const std::vector<model::Comparison>& cs, const model::GatePolicy& policy,
                                            const AdaptiveOptions& opt);

// Sorted most severe first, then by |change|.
void sort_by_severity(std::vector<model::Comparison>& cs);

}  // namespace perfgate::analysis
