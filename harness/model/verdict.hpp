#pragma once
// Gate policy and verdicts: what a comparison of a candidate run against its
// baseline concluded, per (configuration, metric).

#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/model/metric.hpp"

namespace perfgate::model {

enum class VerdictKind { Regression, Improvement, Unchanged, Inconclusive, Missing, Failed };

std::string_view to_string(VerdictKind v);
std::optional<VerdictKind> verdict_from_string(std::string_view s);
// Most severe first: regression, failed, missing, inconclusive, improvement, unchanged.
int severity_rank(VerdictKind v);

// A comparison's label with its node class: "bucket_mb=25 @ pool-a/3f2a1b"
// (the label alone when node_class is empty).
std::string with_node_class(const std::string& label, const std::string& node_class);

enum class Correction { BenjaminiHochberg, Holm };
std::string_view to_string(Correction c);

// What a gate does when some comparison cannot reach the policy's level at
// its trial counts (the smallest p its test can give is above the level a
// lone regression needs): run more candidate trials where the suite can be
// run again, fail with the trials needed, or only warn.
enum class Underpowered { Adaptive, Fail, Warn };
std::string_view to_string(Underpowered u);
// How candidate trial failures are judged: strict makes any failure where the
// baseline had none a failed verdict; test needs Fisher's exact test to say
// the failed fraction rose.
enum class FailurePolicy { Strict, Test };
std::string_view to_string(FailurePolicy f);

// One rule of a gate policy. `pattern` is a metric name or a glob (`*_ms`).
struct MetricRule {
  std::string pattern;
  std::optional<Better> better;         // default: the metric's recorded direction
  std::optional<double> threshold_rel;  // practical threshold, 0.03 = 3 %
  std::optional<int> min_trials;
  bool gate = true;    // false: `ignore: true` in the policy
  std::string source;  // "configs/gate.yaml:12" for messages
};

struct GatePolicy {
  std::string path;   // where it came from, empty for the built-in default
  double fdr = 0.01;  // false-discovery rate across one gate
  Correction correction = Correction::BenjaminiHochberg;
  int min_trials = 3;         // per side, below it the comparison is inconclusive
  double screening_p = 0.05;  // adaptive mode: "suspicious" below this raw p
  // Baseline trials this many scaled MADs (and twice the threshold) from the
  // baseline's median are left out as hiccups of past runs, when they are
  // rare (at most a fifth of the baseline); 0 keeps all.
  double baseline_outlier_mads = 5;
  double power = 0.8;  // for the extra-trials estimate and the detectable change
  Underpowered underpowered = Underpowered::Adaptive;
  FailurePolicy failures = FailurePolicy::Strict;
  // Older runs of the candidate's suite and machine read for the run-to-run
  // spread only (not the baseline's level), up to this many runs in all
  // with the baseline's; 0 reads none.
  int history_runs = 10;
  // Both levels of noise (trials and runs) must reject; false judges on the
  // pooled trials alone, as perfgate did before (calibration compares both).
  bool two_level = true;
  double confidence = 0.95;               // of the shift interval
  int bootstrap_resamples = 0;            // > 0: also a bootstrap interval of the median ratio
  unsigned long long bootstrap_seed = 1;  // recorded in reports, so intervals reproduce
  // Defaults by kind of metric when a rule gives no threshold.
  double throughput_threshold = 0.03;
  double latency_threshold = 0.05;
  double memory_threshold = 0.10;
  // A change of perfgate's own peak_rss_mb smaller than this many MB is
  // within the threshold, whatever its percentage: a workload smaller than
  // perfgate (plus the kernel's counter slack) is measured from 50 ms samples
  // that miss its last moments, and 10 % of 10 MB is below what they resolve
  // (docs/metric-protocol.md). 0: no floor.
  double peak_rss_floor_mb = 32;
  // Metrics gated, first match wins. A metric no rule matches is not gated.
  std::vector<MetricRule> rules;

  // The rule a metric falls under, or nullptr.
  const MetricRule* match(std::string_view metric) const;
  // Practical threshold for a metric (rule, then its kind).
  double threshold_for(const MetricInfo& m, const MetricRule* rule) const;
};

// The policy used when no --policy is given (the shipped configs/gate.yaml says the same).
GatePolicy default_gate_policy();

// Shell-style glob (fnmatch(3)): *, ?, [classes].
bool glob_match(std::string_view pattern, std::string_view text);

// The name of the comparison of a configuration's failed trials.
inline constexpr std::string_view k_trials_failed_metric = "trials_failed";

// The outcome of one (configuration, metric) comparison, with every number.
struct Comparison {
  std::string workload;
  std::string params_json;
  std::string label;  // "bucket_mb=25 graph_mode=eager" (with " @ node_class" when set)
  // The node class compared ("pool-a/3f2a1b": hostname class / fingerprint
  // hash), when the candidate ran on more than one; '' otherwise.
  std::string node_class;
  MetricInfo metric;
  VerdictKind verdict = VerdictKind::Inconclusive;
  double threshold_rel = 0;
  // The absolute floor, in the metric's unit, that set threshold_rel (the
  // policy's peak_rss_floor, 32 MB); 0 when the percentage stood.
  double threshold_floor = 0;
  int n_base = 0, n_cand = 0;
  int failed_base = 0, failed_cand = 0;  // trials that produced no value
  // Candidate trials of the configuration, ok or failed, with this metric or
  // without (a trial too short for a peak RSS): what the adaptive gate spent.
  int trials_cand = 0;
  double base_median = 0, cand_median = 0;
  double change_rel = 0;                           // Hodges-Lehmann shift / baseline median
  double change_low_rel = 0, change_high_rel = 0;  // its interval
  double interval_coverage = 0;
  // Bootstrap interval of median(candidate) / median(baseline), when asked
  // (--bootstrap); NaN otherwise.
  double ratio = std::nan(""), ratio_low = std::nan(""), ratio_high = std::nan("");
  double u = 0;
  double p_value = 1, p_adjusted = 1;
  bool tested = false;    // a test was run (enough values on both sides)
  bool exact = false;     // exact U distribution
  int extra_trials = 0;   // inconclusive: candidate trials likely to decide it
  int added_trials = 0;   // adaptive mode: candidate trials it launched
  int base_left_out = 0;  // baseline trials left out as hiccups (n_base counts the rest)
  std::string note;       // why, when the numbers do not say it
  // Two levels of noise (docs/statistics.md): the trial-level Mann-Whitney p
  // and the run-level test of the candidate run against the baseline runs;
  // p_value is the larger (both must reject).
  double p_trials = 1;
  double p_runs = std::nan("");      // NaN when the run-level test could not run
  bool run_spread_known = false;     // the baseline's runs (or history) gave a run-to-run spread
  double run_sd_rel = std::nan("");  // that spread, relative to the baseline median
  int base_runs = 0;                 // baseline runs with values
  int history_runs = 0;              // older runs read for the spread only
  // Resolution at the gate's size: the smallest change this comparison would
  // have flagged as significant with the noise it saw (relative; infinite
  // when its test cannot reach the level a lone regression needs), and the
  // candidate trials in all that would let it.
  double detectable_rel = std::nan("");
  bool underpowered = false;
  int trials_for_resolution = 0;      // -1: no number of candidate trials will do
  bool joint = false;                 // decided by the joint test of its metric across configurations
  bool trials_cannot_decide = false;  // the runs' spread keeps it undecided whatever the candidate adds
  std::vector<std::string> failures;  // failed candidate trials: exit code / signal / first error line
};

// A shift tested jointly across the configurations of one metric: van
// Elteren's stratified rank test and Stouffer's combination of the run-level
// tests (both must reject).
struct JointTest {
  std::string metric;
  Better better = Better::None;
  int configs = 0;
  int moved_bad = 0, moved_good = 0;  // configurations beyond their thresholds each way
  double change_median_rel = 0;       // median of the configurations' changes
  double threshold_rel = 0;           // median of their thresholds
  double p_van_elteren = 1, p_stouffer = std::nan("");
  double p_value = 1, p_adjusted = 1;
  VerdictKind verdict = VerdictKind::Inconclusive;
};

}  // namespace perfgate::model
