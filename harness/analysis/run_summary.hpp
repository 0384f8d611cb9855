#pragma once
// Per configuration and metric of one run: the trial values and what they
// say together (median, distribution-free 95 % interval of the median, CV).
// The trial is the unit of replication: steps were already summarised per
// trial by the runner.

#include <map>
#include <string>
#include <vector>

#include "harness/model/metric.hpp"
#include "harness/model/params.hpp"
#include "harness/store/store.hpp"

namespace perfgate::analysis {

struct TrialValue {
  long long trial_id = 0;
  int repeat = 0;
  double value = 0;  // the per-trial number
  model::MetricSummary summary;
};

struct MetricRow {
  model::MetricInfo info;
  int n = 0;  // trials with a value
  double median = 0, mean = 0, min = 0, max = 0, cv = 0;
  double ci_low = 0, ci_high = 0, ci_coverage = 0;
  bool harness_metric = false;  // added by perfgate (wall time, RSS), not reported by the workload
  // A fact (a setting the workload reports): marked so by the workload or its
  // parser, or a per-trial number without a direction that never varied.
  // Shown once as key=value, never with an interval, never gated.
  bool fact = false;
  std::vector<TrialValue> trials;
};

struct ConfigSummary {
  long long config_id = 0;
  std::string workload;
  model::Params params;
  std::string params_json;
  std::string label;  // "bucket_mb=25 graph_mode=eager" (without the workload)
  int trials_ok = 0;
  int trials_failed = 0;
  std::vector<std::string> failures;  // "repeat 2: exited with code 1; ..."
  std::string primary_metric;         // as recorded with the run ("" for runs from before v3)
  std::vector<std::string> notes;     // e.g. a fact that differs between trials
  // warmup: auto: how many trials fell in each class ("flat" -> 4).
  std::map<std::string, int> steady_classes;
  std::vector<MetricRow> metrics;  // step metrics first, then per-trial numbers
  const MetricRow* find(std::string_view metric) const;
};

// A device whose trials were slower than the same configurations' trials on
// the node's other devices, every time: a bad card, not a slow configuration.
struct SlowDevice {
  std::string host;
  std::string device_kind;
  std::string devices;      // "3" or "2,3"
  int trials = 0;           // its trials with the primary metric
  double median_worse = 0;  // median of how much worse each was than its configuration elsewhere (0.12: 12 %)
  std::string text() const;
};

struct RunSummary {
  store::RunRecord run;
  // The node class these trials ran on when a gate compares classes apart
  // (analysis/node_class.hpp); '' for a whole run.
  std::string node_class;
  std::vector<ConfigSummary> configs;
  std::vector<model::TrialRecord> trials;
  int trials_ok = 0, trials_failed = 0, trials_interrupted = 0;
  int trials_lost = 0;  // attempts lost with their fleet worker (not failures of the workload)
  std::vector<SlowDevice> slow_devices;
};

// Devices of a run on several slots whose trials were all worse, on each
// configuration's primary metric, than the median of that configuration's
// trials on the other devices, by a median of at least `min_worse`, over at
// least `min_trials` trials. "All worse" alone befalls a sound device with
// probability 2^-k (1/8 at 3 trials, so about one of 8 devices); the margin
// is what keeps jitter out: at 2 % trial noise a sound device's median of 3
// is 5 % worse only when 2 of its 3 trials are 2.5 sigma out, about 1 in
// 8,000.
std::vector<SlowDevice> find_slow_devices(const RunSummary& rs, double min_worse = 0.05, int min_trials = 3);

// A trial's error on one line: its first clause and the last line of the
// stderr it quotes ("exited with code 1: ModuleNotFoundError: No module
// named 'torch'"), for tables and one-line reports.
std::string brief_error(const std::string& error);

RunSummary summarise_run(const store::RunData& data, double ci_level = 0.95);

}  // namespace perfgate::analysis
