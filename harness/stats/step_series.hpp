#pragma once
// One metric's step series of one trial, summarised as it streams in: the
// warm-up rule (fixed steps, fixed seconds, or automatic), a reservoir of
// steady values for quantiles, exact count, mean, spread, extremes and the
// harmonic mean. Pure: the runner's collector feeds it, tests feed it
// directly. Memory stays bounded for a 72-hour soak: at most k_max_kept
// steady values, and for `auto` at most k_auto_window leading values (a
// warm-up longer than that is not a warm-up any summary should rely on).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "harness/stats/running.hpp"
#include "harness/stats/steady_state.hpp"

namespace perfgate::stats {

struct WarmupRule {
  enum class Kind { None, Steps, Seconds, Auto };
  Kind kind = Kind::None;
  double amount = 0;  // steps or seconds
};

struct StepSummary {
  long long n_total = 0;  // values seen (finite or not)
  long long n_nonfinite = 0;
  long long n_steady = 0;  // finite values after the warm-up
  double mean = 0, median = 0, p90 = 0, p99 = 0, min = 0, max = 0, stddev = 0;
  double harmonic = 0;     // n / sum(1/x) when every steady value is positive, else the mean
  bool sampled = false;    // quantiles from a uniform sample of the steady values
  double first_value = 0;  // the first value of the series (finite or not)
  // warmup: auto only: what the classifier found on the leading values.
  std::optional<SteadyState> steady_state;
};

class StepSeries {
 public:
  static constexpr std::size_t k_max_kept = 100'000;
  static constexpr std::size_t k_auto_window = 20'000;

  explicit StepSeries(WarmupRule rule, std::uint64_t reservoir_seed = 0x9E3779B97F4A7C15ull,
                      SteadyStateOptions auto_options = {});

  // The next value, t_s seconds after the trial started.
  void add(double t_s, double value);

  // warmup: auto. The series holds its leading values until its warm-up is
  // resolved: by itself (its own classification) once k_auto_window values
  // are in or at finish(), or from another series of the trial (its step
  // times) through resolve(). A deferred series waits for resolve() up to
  // twice the window before it resolves itself.
  void defer_to_trial() { m_deferred = true; }
  bool resolved() const { return m_resolved; }
  // The classification of the leading values held so far (larger values are
  // slower when larger_is_slower).
  SteadyState classify(bool larger_is_slower = true) const;
  // Cuts the first `cut` values as warm-up; `state` is what the summary reports.
  void resolve(std::size_t cut, const SteadyState& state);
  // What resolve() recorded (auto rule, once resolved).
  const std::optional<SteadyState>& steady_state() const { return m_steady_state; }

  // The summary; the series is spent afterwards (its buffers freed).
  StepSummary finish(bool larger_is_slower = true);

  long long count() const { return m_n_total; }

 private:
  void keep_steady(double v);

  WarmupRule m_rule;
  SteadyStateOptions m_auto_options;
  long long m_n_total = 0, m_n_nonfinite = 0;
  double m_first_value = 0;
  bool m_resolved = false, m_deferred = false, m_larger_is_slower = true;
  std::vector<double> m_head;  // auto, until resolved: the leading finite values
  std::optional<SteadyState> m_steady_state;
  std::vector<double> m_steady;
  RunningMoments m_moments;  // of the steady values
  double m_inverse_sum = 0;
  bool m_all_positive = true;
  SplitMix64 m_reservoir;  // reservoir sampling's draws
};

}  // namespace perfgate::stats
