#pragma once
// What a soak run did over time: per trial and metric, windows of the series,
// the drift (Theil-Sen slope, Mann-Kendall test), staircase slowdowns (change
// points over window medians), stalls, jitter, memory growth, NaN loss and
// hangs — each finding with the evidence behind it (times and values).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness/store/store.hpp"
#include "harness/util/error.hpp"

namespace perfgate::analysis {

struct SoakAnalysisOptions {
  double window_s = 60;
  double significance = 0.01;        // of the trend test and the change points
  double drift_pct_per_h = 1.0;      // |drift| of a time/rate metric that is a finding
  double memory_mb_per_h = 10.0;     // memory growth that is a finding
  double staircase_pct = 5.0;        // a level shift of at least this is a staircase step
  double stall_factor = 3.0;         // a step this many times its rolling median is a stall
  double jitter_p99_over_p50 = 3.0;  // jittery when the median window's p99/p50 exceeds this
  std::uint64_t seed = 1;            // permutation tests of the change points
  // Sees every sample of every series of the run as it streams past, warm-up
  // and series the analysis skips included: the dashboard draws them from
  // the same pass over the store instead of a second one.
  std::function<void(long long trial_id, const model::MetricInfo& metric, double t_s, double value)> on_sample;
};

struct Evidence {
  double t_s = 0;  // seconds since the trial started
  double value = 0;
  std::string note;
};

struct Finding {
  std::string kind;  // drift | memory_growth | staircase | stalls | jitter | nan_loss | hang | no_steps
  std::string metric;
  double value = 0;  // drift %/h, MB/h, step size %, stall count, worst p99/p50, NaN count, last step time
  std::string unit;
  std::string summary;  // one line for people
  std::vector<Evidence> evidence;
};

struct StaircaseStep {
  double t_s = 0;  // start of the first window after the change
  double before = 0, after = 0;
  double change_pct = 0;
  double p_value = 1;
};

struct MetricTrend {
  std::string metric, unit;
  bool memory = false;
  long long samples = 0;
  int windows = 0;
  double first_window = 0, last_window = 0;                           // window medians
  double slope_per_h = 0, slope_low_per_h = 0, slope_high_per_h = 0;  // Theil-Sen over window medians
  double drift_pct_per_h = 0;                                         // slope relative to the first windows' level
  double trend_p = 1;                                                 // Mann-Kendall over window medians
  std::vector<StaircaseStep> steps;
  int stalls = 0;  // the workload's: not during a pause of the host
  double worst_stall_ratio = 0;
  int host_stalls = 0;                       // stalls while the host paused the trial (host events)
  double jitter_median = 0, jitter_max = 0;  // p99/p50 per window
  double cv_median = 0;                      // per window
  long long non_finite = 0;
  // The host sampler's series only: window centres and medians, from which
  // host events are judged.
  std::vector<double> window_t, window_median;
};

struct TrialSoak {
  long long trial_id = 0;
  std::string workload, label;
  std::string status;
  std::string error;
  double wall_s = 0;
  long long steps = 0;
  std::vector<MetricTrend> metrics;
  std::vector<Finding> findings;  // what the workload did
  // Findings the host explains: a workload's staircase or drift that
  // coincides with the host probe slowing, or other processes taking CPU,
  // the same way (the machine slowed, not the code). Shown, never failed on.
  std::vector<Finding> host_events;
};

// The host sampler's series that tell a busy machine (sampler `host`).
inline constexpr std::string_view k_host_probe_metric = "host.probe_ms";
inline constexpr std::string_view k_host_other_cpu_metric = "host.other_cpu_pct";
inline constexpr std::string_view k_host_trial_wait_metric = "host.trial_cpu_wait_pct";
inline constexpr std::string_view k_host_wakeup_late_metric = "host.wakeup_late_ms";
// The trial's own CPU (sampler `proc`, % of one core): a trial that asks for
// more CPU on a full machine waits more for a core and raises the machine's
// CPU pressure itself, so those two witness the host only when this did not
// rise with them.
inline constexpr std::string_view k_trial_cpu_metric = "host.cpu_pct";

// When the host held a trial up, sampling interval by interval: how long the
// trial's threads waited for a core (host.trial_cpu_wait_pct: the guest's
// scheduler) and how late a thread that wakes every 5 ms woke
// (host.wakeup_late_ms: the whole machine paused, as when the hypervisor
// deschedules the VM). A stalled step inside such a pause is the host's.
class HostPauses {
 public:
  // One host sample (seconds since the trial started), in time order per
  // metric; other metrics are ignored.
  void add(std::string_view metric, double t_s, double value);
  // Call once every sample is in: the typical level and spread of each.
  void finish();
  bool empty() const { return m_wait.t.size() < 2 && m_late.t.size() < 2; }

  // How much of [from_s, to_s] the host took beyond its typical share, in
  // ms, and which witness says so ("" and 0 when neither stood out). A
  // sampling interval counts when it overlaps the span and its value lies
  // more than three robust deviations (MAD x 1.4826) above the median
  // interval's.
  struct Pause {
    double ms = 0;
    std::string why;
  };
  Pause during(double from_s, double to_s) const;

 private:
  struct Series {
    std::vector<double> t, v;  // v: wait per ms of interval (fraction), or the canary's worst lateness in ms
    double typical = 0, spread = 0;
  };
  Series m_wait, m_late;
};

// Moves the findings the host explains from `findings` to `host_events`,
// each with the host's evidence appended to its summary.
void separate_host_events(TrialSoak& trial, const SoakAnalysisOptions& opt);

struct SoakReport {
  store::RunRecord run;
  SoakAnalysisOptions options;
  std::vector<TrialSoak> trials;
};

// Pure: one metric's series (times in seconds since the trial start). With
// `host`, the stalls it explains go to `host_events` instead of `findings`.
MetricTrend analyse_series(const std::string& metric, const std::string& unit, const std::vector<double>& t_s,
                           const std::vector<double>& values, const SoakAnalysisOptions& opt,
                           std::vector<Finding>& findings, const HostPauses* host = nullptr,
                           std::vector<Finding>* host_events = nullptr);

// The window a soak ran with (stored with the run); 60 s for runs from
// before it was stored, or that were not soaks.
double stored_soak_window_s(store::Store& st, long long run_id);

// Every trial of a run, from the store.
Expected<SoakReport> analyse_soak(store::Store& st, long long run_id, const SoakAnalysisOptions& opt);

}  // namespace perfgate::analysis
