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

enum class Correction { BenjaminiHochberg, Holm };
std::string_view to_string(Correction c);

// One rule of a gate policy. `pattern` is a metric name or a glob (`*_ms`).
struct MetricRule {
  std::string pattern;
  std::optional<Better> better;          // default: the metric's recorded direction
  std::optional<double> threshold_rel;   // practical threshold, 0.03 = 3 %
  std::optional<int> min_trials;
  bool gate = true;                      // false: `ignore: true` in the policy
  std::string source;                    // "configs/gate.yaml:12" for messages
};

struct GatePolicy {
  std::string path;                      // where it came from, empty for the built-in default
  double fdr = 0.01;                     // false-discovery rate across one gate
  Correction correction = Correction::BenjaminiHochberg;
  int min_trials = 3;                    // per side, below it the comparison is inconclusive
  double screening_p = 0.05;             // adaptive mode: "suspicious" below this raw p
  // Baseline trials this many scaled MADs (and twice the threshold) from the
  // baseline's median are left out as hiccups of past runs, when they are
  // rare (at most a fifth of the baseline); 0 keeps all.
  double baseline_outlier_mads = 5;
  double power = 0.8;                    // for the extra-trials estimate
  double confidence = 0.95;              // of the shift interval
  int bootstrap_resamples = 0;           // > 0: also a bootstrap interval of the median ratio
  unsigned long long bootstrap_seed = 1; // recorded in reports, so intervals reproduce
  // Defaults by kind of metric when a rule gives no threshold.
  double throughput_threshold = 0.03;
  double latency_threshold = 0.05;
  double memory_threshold = 0.10;
  // Metrics gated, first match wins. A metric no rule matches is not gated.
  std::vector<MetricRule> rules;

  // The rule a metric falls under, or nullptr.
  const MetricRule* match(std::string_view metric) const;
  // Practical threshold for a metric (rule, then its kind).
  double threshold_for(const MetricInfo& m, const MetricRule* rule) const;
};

// The policy used when no --policy is given (the shipped configs/gate.yaml says the same).
GatePolicy default_gate_policy();

// Shell-style glob with * and ?.
bool glob_match(std::string_view pattern, std::string_view text);

// The outcome of one (configuration, metric) comparison, with every number.
struct Comparison {
  std::string workload;
  std::string params_json;
  std::string label;                     // "bucket_mb=25 graph_mode=eager"
  MetricInfo metric;
  VerdictKind verdict = VerdictKind::Inconclusive;
  double threshold_rel = 0;
  int n_base = 0, n_cand = 0;
  int failed_base = 0, failed_cand = 0;  // trials that produced no value
  double base_median = 0, cand_median = 0;
  double change_rel = 0;                 // Hodges-Lehmann shift / baseline median
  double change_low_rel = 0, change_high_rel = 0;  // its interval
  double interval_coverage = 0;
  // Bootstrap interval of median(candidate) / median(baseline), when asked
  // (--bootstrap); NaN otherwise.
  double ratio = std::nan(""), ratio_low = std::nan(""), ratio_high = std::nan("");
  double u = 0;
  double p_value = 1, p_adjusted = 1;
  bool tested = false;                   // a test was run (enough values on both sides)
  bool exact = false;                    // exact U distribution
  int extra_trials = 0;                  // inconclusive: candidate trials likely to decide it
  int added_trials = 0;                  // adaptive mode: candidate trials it launched
  int base_left_out = 0;                 // baseline trials left out as hiccups (n_base counts the rest)
  std::string note;                      // why, when the numbers do not say it
};

}  // namespace perfgate::model
