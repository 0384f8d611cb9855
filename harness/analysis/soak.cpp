#include "harness/analysis/soak.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <span>

#include <fmt/format.h>

#include "harness/model/metric.hpp"
#include "harness/model/params.hpp"
#include "harness/stats/change_points.hpp"
#include "harness/stats/descriptive.hpp"
#include "harness/stats/stalls.hpp"
#include "harness/stats/trend.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/units.hpp"

namespace perfgate::analysis {

namespace {

// Whether the trial's own CPU moved from `before` to `after` (% of one core)
// far enough the way `sign` says for the machine's CPU pressure and the
// trial's run-queue wait beside it to be the trial's doing rather than the
// host's: a tenth of its level and two points at least. A sim spinning 20 %
// longer per step went 20 -> 26 % (+32 %) on a saturated machine.
// Returns how far it moved, relative to its level before and positive the
// way `sign` says (infinite from 0); nullopt when not far enough.
std::optional<double> trial_cpu_rise(double before, double after, double sign) {
  if ((after - before) * sign < std::max(2.0, 0.10 * std::fabs(before))) return std::nullopt;
  return before > 0 ? (after - before) * sign / before : HUGE_VAL;
}

bool is_time_metric(std::string_view name) {
  return name == "step_time_ms" || name == "latency_ms" || name.ends_with("_time_ms");
}

// The host sampler's series: what the machine did beside the trial. Windowed
// for host events, never findings of their own.
bool is_host_context(std::string_view name) {
  return name == k_host_probe_metric || name == k_host_other_cpu_metric || name == "host.cpu_pressure_pct" ||
         name == k_host_trial_wait_metric || name == k_host_wakeup_late_metric || name == k_trial_cpu_metric;
}

// Which series a soak report looks at: how long a step takes, how much gets
// done, memory, and the loss (for NaN only). Per-phase timings explain a
// finding but would bury it.
bool analysed(std::string_view name) {
  return is_time_metric(name) || name == "throughput" || model::is_memory_metric(name) || name == "loss" ||
         is_host_context(name);
}

// Analyses one series as it streams past: windows are summarised as they
// close, stalls are found chunk by chunk (with the rolling window's context on
// both sides, so the result equals a pass over the whole series), and only
// per-window numbers are kept. Memory stays bounded for 72-hour soaks.
class SeriesAnalyzer {
 public:
  SeriesAnalyzer(std::string metric, std::string unit, const SoakAnalysisOptions& opt, const HostPauses* host = nullptr)
      : m_opt(opt), m_host(host && !host->empty() ? host : nullptr), m_time_metric(is_time_metric(metric)) {
    m_m.metric = std::move(metric);
    m_m.unit = std::move(unit);
    m_m.memory = model::is_memory_metric(m_m.metric);
  }

  void feed(double t, double v) {
    ++m_m.samples;
    if (!std::isfinite(v)) {
      if (m_m.non_finite++ == 0) m_first_bad = {t, v, fmt::format("sample {}", m_m.samples - 1)};
      return;
    }
    if (m_m.metric == "loss") return;  // only its NaNs matter
    double start = std::floor(t / m_opt.window_s) * m_opt.window_s;
    if (!m_window.empty() && start != m_window_start) close_window();
    m_window_start = start;
    m_window.push_back(v);
    if (m_time_metric) {
      m_buf_t.push_back(t);
      m_buf_v.push_back(v);
      if (m_buf_base + m_buf_v.size() >= m_core + k_chunk + k_half) stall_chunk(false);
    }
  }

  MetricTrend finish(std::vector<Finding>& findings, std::vector<Finding>& host_events) {
    if (m_m.metric == "loss") {
      if (m_m.non_finite > 0)
        findings.push_back({"nan_loss",
                            m_m.metric,
                            static_cast<double>(m_m.non_finite),
                            "values",
                            fmt::format("{} NaN/Inf loss value(s), the first at {}", m_m.non_finite,
                                        util::format_hms(m_first_bad.t_s)),
                            {m_first_bad}});
      return m_m;
    }
    if (!m_window.empty()) close_window();
    if (m_time_metric) stall_chunk(true);
    if (m_wmed.empty()) return m_m;
    m_m.windows = static_cast<int>(m_wmed.size());
    m_m.first_window = m_wmed.front();
    m_m.last_window = m_wmed.back();
    if (is_host_context(m_m.metric)) {
      // Where the host's level changed: its own change points, with the
      // levels on both sides (host events are matched against them).
      m_m.window_t = m_wt;
      m_m.window_median = m_wmed;
      if (m_wmed.size() >= 6) {
        stats::ChangePointOptions cpo;
        cpo.significance = m_opt.significance;
        cpo.seed = m_opt.seed;
        cpo.min_segment = 3;
        for (const auto& cp : stats::e_divisive(m_wmed, cpo))
          m_m.steps.push_back({m_wt[cp.index] - m_opt.window_s / 2, cp.before_median, cp.after_median,
                               std::isfinite(cp.relative_change) ? cp.relative_change * 100.0 : std::nan(""),
                               cp.p_value});
      }
      return m_m;
    }
    if (!m_jitter.empty()) {
      m_m.jitter_median = stats::median(m_jitter);
      m_m.jitter_max = *std::max_element(m_jitter.begin(), m_jitter.end());
      m_m.cv_median = stats::median(m_cvs);
    }
    trend(findings);
    staircase(findings);
    if (m_time_metric) stalls_and_jitter(findings, host_events);
    return m_m;
  }

 private:
  static constexpr std::size_t k_window_points = 51;  // rolling median of a stall's neighbourhood
  static constexpr std::size_t k_half = k_window_points / 2;
  static constexpr std::size_t k_chunk = 1 << 16;

  void close_window() {
    std::span<const double> w(m_window);
    double med = stats::median(w);
    m_wt.push_back(m_window_start + m_opt.window_s / 2);
    m_wmed.push_back(med);
    if (w.size() >= 5 && med > 0) {
      m_jitter.push_back(stats::quantile(w, 0.99) / med);
      m_cvs.push_back(stats::cv(w));
    }
    m_window.clear();
  }

  // Stalls among points [m_core, m_core + k_chunk) (or to the end), given the
  // buffer holds them with k_half points of context on each side where they exist.
  void stall_chunk(bool last) {
    std::size_t end = m_buf_base + m_buf_v.size();
    std::size_t core_end = last ? end : std::min(end - k_half, m_core + k_chunk);
    if (core_end <= m_core) return;
    std::size_t from = m_core > k_half ? std::max(m_buf_base, m_core - k_half) : m_buf_base;
    std::size_t to = last ? end : std::min(end, core_end + k_half);
    std::span<const double> slice(m_buf_v.data() + (from - m_buf_base), to - from);
    for (const auto& st : stats::find_stalls(slice, k_window_points, m_opt.stall_factor)) {
      std::size_t g = from + st.index;
      if (g < m_core || g >= core_end) continue;
      const double t = m_buf_t[g - m_buf_base];
      // The stalled step ran from about its value (ms) before its record
      // until the record; a little slack for when perfgate read the line
      // and took the host's sample. The host explains the stall when it
      // took at least half the time the step spent above its baseline.
      if (m_host) {
        constexpr double k_slack_s = 0.05;
        auto pause = m_host->during(t - st.value / 1000.0 - k_slack_s, t + k_slack_s);
        if (pause.ms >= 0.5 * (st.value - st.baseline)) {
          if (m_m.host_stalls++ == 0) m_first_host_why = pause.why;
          m_worst_host_stall_ratio = std::max(m_worst_host_stall_ratio, st.ratio);
          if (m_host_stall_evidence.size() < 20)
            m_host_stall_evidence.push_back(
                {t, st.value, fmt::format("{:.1f}x the rolling median; {}", st.ratio, pause.why)});
          continue;
        }
      }
      ++m_m.stalls;
      m_m.worst_stall_ratio = std::max(m_m.worst_stall_ratio, st.ratio);
      if (m_stall_evidence.size() < 20)
        m_stall_evidence.push_back({t, st.value, fmt::format("{:.1f}x the rolling median", st.ratio)});
    }
    m_core = core_end;
    // Keep only the left context the next chunk needs.
    std::size_t keep_from = m_core > k_half ? m_core - k_half : 0;
    if (keep_from > m_buf_base) {
      auto drop = static_cast<std::ptrdiff_t>(keep_from - m_buf_base);
      m_buf_v.erase(m_buf_v.begin(), m_buf_v.begin() + drop);
      m_buf_t.erase(m_buf_t.begin(), m_buf_t.begin() + drop);
      m_buf_base = keep_from;
    }
  }

  void trend(std::vector<Finding>& findings) {
    if (m_wmed.size() < 3) return;
    std::vector<double> hours(m_wt.size());
    for (std::size_t k = 0; k < m_wt.size(); ++k) hours[k] = m_wt[k] / 3600.0;
    // Over window medians (4,320 in 72 h at 60 s), not steps, whose noise is autocorrelated.
    auto ts = stats::theil_sen(hours, m_wmed);
    m_m.slope_per_h = ts.slope;
    m_m.slope_low_per_h = ts.low;
    m_m.slope_high_per_h = ts.high;
    // Relative to where the run started: the median of its first windows.
    std::size_t head = std::min<std::size_t>(3, m_wmed.size());
    double level = stats::median(std::span<const double>(m_wmed.data(), head));
    m_m.drift_pct_per_h = level != 0 ? ts.slope / std::fabs(level) * 100.0 : 0;
    m_m.trend_p = stats::mann_kendall(m_wmed).p_value;
    bool real = m_m.trend_p < m_opt.significance && (ts.low > 0 || ts.high < 0);
    const auto& wt = m_wt;
    const auto& wmed = m_wmed;
    // A rate per hour extrapolates: in a short run a tenth of a MB looks like
    // MB/h. The change over the run itself must matter too: 1 MB and 1 % of
    // the level for memory. For times and rates, the change at the slope's
    // confidence bound nearer zero must be at least a staircase step
    // (staircase_pct), the smallest level shift that is a finding: a shared
    // host's level moves several percent over seconds (flat 12-second soaks
    // here drifted +2.4 %, trend p 0.0013, and +6.6 %, 95 % CI +3.5 to
    // +8.7 %, trend p 0.0008, beside two busy loops). A day-long soak over
    // the %/h threshold changes far more than that, so only short runs are
    // spared.
    double span_h = (wt.back() - wt.front()) / 3600.0;
    const double sure_slope = ts.low > 0 ? ts.low : ts.high < 0 ? -ts.high : 0;
    bool material = m_m.memory ? ts.slope * span_h >= std::max(1.0, 0.01 * std::fabs(level))
                               : level != 0 && sure_slope * span_h / std::fabs(level) * 100 >= m_opt.staircase_pct;
    real = real && material;
    if (real && m_m.memory && ts.slope > m_opt.memory_mb_per_h) {
      findings.push_back(
          {"memory_growth",
           m_m.metric,
           ts.slope,
           "MB/h",
           fmt::format("{} grows {:.1f} MB/h (95% CI {:.1f} to {:.1f}; trend p {:.2g}): {:.1f} -> {:.1f} MB",
                       m_m.metric, ts.slope, ts.low, ts.high, m_m.trend_p, m_m.first_window, m_m.last_window),
           {{wt.front(), wmed.front(), "first window"}, {wt.back(), wmed.back(), "last window"}}});
    } else if (real && !m_m.memory && std::fabs(m_m.drift_pct_per_h) > m_opt.drift_pct_per_h &&
               !better_direction(m_m.drift_pct_per_h)) {
      // As for staircases: a run that speeds up is drawn with its slope but
      // is not a stability finding (a flat soak measured -2.8 % over its
      // first 11 s on a quiet CI machine, -792 %/h).
      findings.push_back({"drift",
                          m_m.metric,
                          m_m.drift_pct_per_h,
                          "%/h",
                          fmt::format("{} drifts {:+.2f} %/h (trend p {:.2g}): {} -> {} {}", m_m.metric,
                                      m_m.drift_pct_per_h, m_m.trend_p, util::format_value(m_m.first_window),
                                      util::format_value(m_m.last_window), m_m.unit),
                          {{wt.front(), wmed.front(), "first window"}, {wt.back(), wmed.back(), "last window"}}});
    }
  }

  // Staircases: level shifts between windows, located by change points.
  void staircase(std::vector<Finding>& findings) {
    if (m_m.memory || m_wmed.size() < 8) return;
    stats::ChangePointOptions cpo;
    cpo.significance = m_opt.significance;
    cpo.seed = m_opt.seed;
    cpo.min_segment = 3;
    for (const auto& cp : stats::e_divisive(m_wmed, cpo)) {
      double pct = cp.relative_change * 100.0;
      if (!(std::fabs(pct) >= m_opt.staircase_pct)) continue;
      StaircaseStep st{m_wt[cp.index] - m_opt.window_s / 2, cp.before_median, cp.after_median, pct, cp.p_value};
      m_m.steps.push_back(st);
      // A step for the better (times down, throughput up) is drawn and listed
      // but is not a stability finding: a soak fails on degradation.
      if (better_direction(pct)) continue;
      findings.push_back(
          {"staircase",
           m_m.metric,
           pct,
           "%",
           fmt::format("{} steps {:+.1f} % at {} ({} -> {} {}, p {:.2g})", m_m.metric, pct, util::format_hms(st.t_s),
                       util::format_value(st.before), util::format_value(st.after), m_m.unit, st.p_value),
           {{st.t_s, st.after, "first window after the step"}}});
    }
  }

  bool better_direction(double pct) const {
    if (m_time_metric) return pct < 0;
    if (m_m.metric == "throughput") return pct > 0;
    return false;  // loss and other series: either way is news
  }

  void stalls_and_jitter(std::vector<Finding>& findings, std::vector<Finding>& host_events) {
    if (m_m.stalls > 0)
      findings.push_back({"stalls", m_m.metric, static_cast<double>(m_m.stalls), "steps",
                          fmt::format("{} stall(s) in {}: steps over {:.0f}x their rolling median, the worst {:.1f}x",
                                      m_m.stalls, m_m.metric, m_opt.stall_factor, m_m.worst_stall_ratio),
                          m_stall_evidence});
    if (m_m.host_stalls > 0)
      host_events.push_back(
          {"stalls", m_m.metric, static_cast<double>(m_m.host_stalls), "steps",
           fmt::format("{} stall(s) in {} while the host held the trial up, the worst {:.1f}x [host event: {}]",
                       m_m.host_stalls, m_m.metric, m_worst_host_stall_ratio,
                       m_m.host_stalls > 1 ? "the first: " + m_first_host_why : m_first_host_why),
           m_host_stall_evidence});
    // Persistent jitter, not one noisy window: the typical window's tail decides.
    if (m_m.jitter_median > m_opt.jitter_p99_over_p50)
      findings.push_back(
          {"jitter",
           m_m.metric,
           m_m.jitter_median,
           "p99/p50",
           fmt::format("{} jitter: p99/p50 {:.2f} in the median window (up to {:.2f}; CV median {:.1f} %)", m_m.metric,
                       m_m.jitter_median, m_m.jitter_max, m_m.cv_median * 100),
           {}});
  }

  const SoakAnalysisOptions& m_opt;
  const HostPauses* m_host;  // null: no host series, every stall is the workload's
  bool m_time_metric;
  MetricTrend m_m;
  Evidence m_first_bad{};
  double m_window_start = 0;
  std::vector<double> m_window;
  std::vector<double> m_wt, m_wmed, m_jitter, m_cvs;
  std::vector<double> m_buf_t, m_buf_v;
  std::size_t m_buf_base = 0;  // global index of m_buf_v[0]
  std::size_t m_core = 0;      // first point whose stall test is pending
  std::vector<Evidence> m_stall_evidence;
  std::vector<Evidence> m_host_stall_evidence;
  double m_worst_host_stall_ratio = 0;
  std::string m_first_host_why;
};

}  // namespace

MetricTrend analyse_series(const std::string& metric, const std::string& unit, const std::vector<double>& t_s,
                           const std::vector<double>& values, const SoakAnalysisOptions& opt,
                           std::vector<Finding>& findings, const HostPauses* host, std::vector<Finding>* host_events) {
  SeriesAnalyzer a(metric, unit, opt, host);
  for (std::size_t i = 0; i < values.size() && i < t_s.size(); ++i) a.feed(t_s[i], values[i]);
  std::vector<Finding> ignored;
  return a.finish(findings, host_events ? *host_events : ignored);
}

void HostPauses::add(std::string_view metric, double t_s, double value) {
  if (!std::isfinite(t_s) || !std::isfinite(value)) return;
  if (metric == k_host_trial_wait_metric) {
    m_wait.t.push_back(t_s);
    m_wait.v.push_back(std::max(0.0, value) / 100.0);
  } else if (metric == k_host_wakeup_late_metric) {
    m_late.t.push_back(t_s);
    m_late.v.push_back(std::max(0.0, value));
  }
}

void HostPauses::finish() {
  // Each sample describes the interval since the one before; the first
  // (since the sampler started, before the trial) has none and is left out.
  for (Series* s : {&m_wait, &m_late}) {
    if (!std::is_sorted(s->t.begin(), s->t.end())) {  // in time order, as `during` searches them
      std::vector<std::size_t> order(s->t.size());
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return s->t[a] < s->t[b]; });
      std::vector<double> t, v;
      for (auto i : order) {
        t.push_back(s->t[i]);
        v.push_back(s->v[i]);
      }
      s->t = std::move(t);
      s->v = std::move(v);
    }
    if (s->v.size() < 2) continue;
    std::span<const double> intervals(s->v.data() + 1, s->v.size() - 1);
    s->typical = stats::median(intervals);
    s->spread = stats::scaled_mad(intervals);
  }
}

HostPauses::Pause HostPauses::during(double from_s, double to_s) const {
  Pause out;
  // Sample k covers (t[k-1], t[k]]: the ones overlapping [from, to].
  auto overlapping = [&](const Series& s, auto&& each) {
    if (s.t.size() < 2) return;
    auto k = static_cast<std::size_t>(std::lower_bound(s.t.begin(), s.t.end(), from_s) - s.t.begin());
    for (k = std::max<std::size_t>(k, 1); k < s.t.size() && s.t[k - 1] <= to_s; ++k) each(k);
  };
  // The guest's scheduler: run-queue wait beyond the typical share, summed
  // over the unusual intervals (wait of several threads adds up: a trial of
  // eight threads held up 100 ms each waited 800 ms).
  double wait_ms = 0;
  overlapping(m_wait, [&](std::size_t k) {
    const double excess = m_wait.v[k] - m_wait.typical;
    if (excess > 3 * m_wait.spread) wait_ms += excess * (m_wait.t[k] - m_wait.t[k - 1]) * 1000.0;
  });
  // The whole machine: the canary's worst lateness beyond its typical worst.
  double late_ms = 0;
  overlapping(m_late, [&](std::size_t k) {
    const double excess = m_late.v[k] - m_late.typical;
    if (excess > 3 * m_late.spread) late_ms = std::max(late_ms, excess);
  });
  if (wait_ms >= late_ms && wait_ms > 0) {
    out.ms = wait_ms;
    out.why = fmt::format("the trial's threads waited {:.0f} ms more than usual for a core", wait_ms);
  } else if (late_ms > 0) {
    out.ms = late_ms;
    out.why = fmt::format("the machine paused: a thread due every 5 ms woke {:.0f} ms late", late_ms);
  }
  return out;
}

namespace {

// The median of a host series' windows whose centres lie in [from, to); NaN when none.
double windows_median(const MetricTrend& m, double from, double to) {
  std::vector<double> v;
  for (std::size_t i = 0; i < m.window_t.size(); ++i)
    if (m.window_t[i] >= from && m.window_t[i] < to) v.push_back(m.window_median[i]);
  return v.empty() ? std::nan("") : stats::median(v);
}

// Whether a host step at st (of series m) still holds at time t > st.t_s:
// the host's windows from its step up to t stay nearer its new level than
// its old one.
bool host_change_holds(const MetricTrend& m, const StaircaseStep& st, double t) {
  const double level = windows_median(m, st.t_s, t);
  if (!std::isfinite(level)) return false;
  return std::fabs(level - st.after) < std::fabs(level - st.before);
}

// Whether the host moved near time t the way that would slow (sign > 0) or
// speed up the workload: one of its series has a change point within
// `near_s` of t large enough to matter (the probe 10 % slower, other
// processes a quarter of a core busier, CPU pressure 10 points higher).
// A workload does not always answer a host change in one step (a busier
// machine slowed a soak's steps at once and again six seconds later, as
// the hypervisor's share or the CPU's clock followed), so a host change
// that still holds also explains a step up to three times `near_s` after it.
// The probe alone does not: it is slowed by whatever slows the machine in
// the same windows as the workload, so its step explains only a workload
// step within `probe_near_s` (three windows) of it, and never one it
// follows by more than `probe_late_s` (a window, the placement's error): a
// cause does not come after its effect. The soak test, run alone, once saw
// the probe step +22 % at 18 s, three seconds after an injected +22 %
// staircase that spun the sim's CPU 4 -> 20 % of a core. A lagging workload
// answer is explained by demand the host series can name (other processes'
// CPU, pressure, the trial's wait). CI once hid an injected +40 % staircase
// at 15 s behind a neighbour's +36 % probe step at 10 s, nothing else moved;
// the busy loops that slowed a soak six seconds late raised other
// processes' CPU 0 -> 118 % of a core.
// "" when none did, else one phrase saying which and how much.
// Whether the trial's own CPU stepped the way that, on a full machine, makes
// it wait more for a core (sign > 0) or less, near time t: then the CPU
// pressure and the trial's run-queue wait moved because the workload asked
// for more (or less) CPU, which is the workload's change, not the host's. A
// sim whose steps spun 20 % longer on a saturated 2-core machine raised the
// machine's pressure 65 -> 78 % and its own wait with it. The largest such
// rise (as trial_cpu_rise gives it), nullopt when none.
std::optional<double> trial_cpu_step_near(const TrialSoak& trial, double t, double near_s, double sign) {
  std::optional<double> largest;
  for (const auto& m : trial.metrics) {
    if (m.metric != k_trial_cpu_metric) continue;
    for (const auto& st : m.steps) {
      if (std::fabs(t - st.t_s) > near_s) continue;
      if (auto rise = trial_cpu_rise(st.before, st.after, sign)) largest = std::max(largest.value_or(*rise), *rise);
    }
  }
  return largest;
}

// Whether the trial's own CPU moved so much more than the probe that its
// demand, not the host, explains the probe: a host that slows CPU work by
// a fraction p raises a workload's CPU share by about p at most (the same
// work takes longer; a workload that waits for I/O between its bursts keeps
// its step time), while a workload that asks for more CPU raises it by
// whatever it asks. Twice the probe's change is the margin. On this 2-core
// VM the sim's own extra spin (its CPU 4 -> 20 % of a core, +400 %) slowed
// the probe +16 % in the same window and +22 % three seconds later, with
// nothing else on the machine moving.
bool own_demand_explains_probe(std::optional<double> own_rise, double probe_change) {
  return own_rise && *own_rise > 2 * probe_change;
}

std::string host_step_near(const TrialSoak& trial, double t, double near_s, double probe_near_s, double probe_late_s,
                           double sign) {
  const std::optional<double> own_rise = trial_cpu_step_near(trial, t, near_s, sign);
  const bool self_demand = own_rise.has_value();
  for (const auto& m : trial.metrics) {
    for (const auto& st : m.steps) {
      const double lag_s = t - st.t_s;
      const bool near = std::fabs(lag_s) <= near_s;
      const bool follows = lag_s > near_s && lag_s <= 3 * near_s && host_change_holds(m, st, t);
      if (!near && !follows) continue;
      if (m.metric == k_host_probe_metric && st.before > 0) {
        if (std::fabs(lag_s) > probe_near_s || lag_s < -probe_late_s) continue;
        // The probe's own noise is a few percent; a tenth is the machine.
        const double change = st.after / st.before - 1;
        if (change * sign >= 0.10 && !own_demand_explains_probe(own_rise, change * sign))
          return fmt::format("the host probe took {:+.0f} % from {}", 100 * change, util::format_hms(st.t_s));
      } else if (m.metric == k_host_other_cpu_metric) {
        if ((st.after - st.before) * sign >= 25)
          return fmt::format("other processes' CPU went {:.0f} -> {:.0f} % of a core at {}", st.before, st.after,
                             util::format_hms(st.t_s));
      } else if (m.metric == "host.cpu_pressure_pct" && !self_demand) {
        if ((st.after - st.before) * sign >= 10)
          return fmt::format("CPU pressure (tasks waiting for a core) went {:.0f} -> {:.0f} % at {}", st.before,
                             st.after, util::format_hms(st.t_s));
      } else if (m.metric == k_host_trial_wait_metric && !self_demand) {
        // Waiting a tenth of the time more for a core is a tenth slower at least.
        if ((st.after - st.before) * sign >= 10)
          return fmt::format("the trial's threads waited for a core {:.0f} -> {:.0f} % of the time from {}", st.before,
                             st.after, util::format_hms(st.t_s));
      }
    }
  }
  return "";
}

// The same over a whole trial, for drifts: the host's first third against
// the rest of its windows.
std::string host_drift(const TrialSoak& trial, double sign) {
  const double third = trial.wall_s / 3;
  // As for steps: a trial that asked for more CPU raised the pressure and
  // its own wait itself.
  std::optional<double> own_rise;
  for (const auto& m : trial.metrics) {
    if (m.metric != k_trial_cpu_metric || m.window_t.empty()) continue;
    const double before = windows_median(m, -1e300, third), after = windows_median(m, third, 1e300);
    if (std::isfinite(before) && std::isfinite(after)) own_rise = trial_cpu_rise(before, after, sign);
  }
  const bool self_demand = own_rise.has_value();
  for (const auto& m : trial.metrics) {
    if (m.window_t.empty()) continue;
    const double before = windows_median(m, -1e300, third), after = windows_median(m, third, 1e300);
    if (!std::isfinite(before) || !std::isfinite(after)) continue;
    if (m.metric == k_host_probe_metric && before > 0 && (after / before - 1) * sign >= 0.10 &&
        !own_demand_explains_probe(own_rise, (after / before - 1) * sign))
      return fmt::format("the host probe took {:+.0f} % after the first third", 100 * (after / before - 1));
    if (m.metric == k_host_other_cpu_metric && (after - before) * sign >= 25)
      return fmt::format("other processes' CPU went {:.0f} -> {:.0f} % of a core", before, after);
    if (self_demand) continue;
    if (m.metric == "host.cpu_pressure_pct" && (after - before) * sign >= 10)
      return fmt::format("CPU pressure went {:.0f} -> {:.0f} %", before, after);
    if (m.metric == k_host_trial_wait_metric && (after - before) * sign >= 10)
      return fmt::format("the trial's threads waited for a core {:.0f} -> {:.0f} % of the time", before, after);
  }
  return "";
}

}  // namespace

void separate_host_events(TrialSoak& trial, const SoakAnalysisOptions& opt) {
  // Slower means a larger value for times, a smaller one for rates.
  auto slower_sign = [](const std::string& metric) { return is_time_metric(metric) ? 1.0 : -1.0; };
  // Change points are placed to within a few windows: a host step this
  // close is the same event.
  const double near_s = std::max(5 * opt.window_s, 0.15 * trial.wall_s);
  const double probe_near_s = 3 * opt.window_s;
  std::vector<std::string> why(trial.findings.size());
  std::map<std::string, std::pair<int, int>> steps;  // metric -> (staircases, host-explained ones)
  for (std::size_t i = 0; i < trial.findings.size(); ++i) {
    const auto& f = trial.findings[i];
    if (f.kind != "staircase" || f.evidence.empty()) continue;
    const double t = f.evidence.front().t_s;
    const double sign = f.value > 0 ? slower_sign(f.metric) : -slower_sign(f.metric);
    why[i] = host_step_near(trial, t, near_s, probe_near_s, opt.window_s, sign);
    auto& [all, explained] = steps[f.metric];
    ++all;
    explained += why[i].empty() ? 0 : 1;
  }
  for (std::size_t i = 0; i < trial.findings.size(); ++i) {
    const auto& f = trial.findings[i];
    if (f.kind != "drift") continue;
    if (auto s = steps.find(f.metric); s != steps.end() && s->second.first > 0 && s->second.first == s->second.second) {
      why[i] = "the drift is the step the host explains";
      continue;
    }
    // A slow drift: the host's first third against the rest.
    const double sign = f.value > 0 ? slower_sign(f.metric) : -slower_sign(f.metric);
    if (auto moved = host_drift(trial, sign); !moved.empty()) why[i] = "the host moved the same way (" + moved + ")";
  }
  std::vector<Finding> kept;
  for (std::size_t i = 0; i < trial.findings.size(); ++i) {
    auto& f = trial.findings[i];
    if (why[i].empty()) {
      kept.push_back(std::move(f));
    } else {
      f.summary += " [host event: " + why[i] + "]";
      trial.host_events.push_back(std::move(f));
    }
  }
  trial.findings = std::move(kept);
}

double stored_soak_window_s(store::Store& st, long long run_id) {
  constexpr double k_default_window_s = 60;
  auto data = st.load_run(run_id);
  if (!data || !(data->run.soak_window_s > 0)) return k_default_window_s;
  return data->run.soak_window_s;
}

Expected<SoakReport> analyse_soak(store::Store& st, long long run_id, const SoakAnalysisOptions& opt) {
  auto data = st.load_run(run_id);
  if (!data) return data.error();
  SoakReport rep;
  rep.run = data->run;
  rep.options = opt;
  std::map<long long, const store::ConfigRecord*> configs;
  for (const auto& c : data->configs) configs[c.id] = &c;
  for (const auto& tr : data->trials) {
    TrialSoak ts;
    ts.trial_id = tr.id;
    if (auto c = configs.find(tr.config_id); c != configs.end()) {
      ts.workload = c->second->workload;
      ts.label = model::params_label(model::params_from_json(c->second->params_json));
    }
    ts.status = std::string(model::to_string(tr.status));
    ts.error = tr.error;
    ts.wall_s = tr.wall_s;
    ts.steps = tr.steps;
    auto metrics = st.sampled_metrics(tr.id);
    if (!metrics) return metrics.error();
    // The host's series first: a stall is judged against the host's pauses
    // as the step series streams past. The report keeps the store's order.
    std::map<std::string, std::size_t> stored_position;
    for (const auto& entry : *metrics) stored_position.emplace(entry.first.name, stored_position.size());
    std::stable_partition(metrics->begin(), metrics->end(),
                          [](const auto& entry) { return is_host_context(entry.first.name); });
    // When the trial's warm-up ended: the time of its first steady step, in
    // the step series the summary cut most from. Series with no steady cut of
    // their own (the samplers': the trial's memory, the devices') start there
    // too. A workload first touching its memory during its first steps on a
    // loaded machine (seconds, beside ten busy loops) was read as memory
    // growth of 225 MB/h over an 18 s soak.
    long long warmup_steps = 0;
    std::string warmup_metric;
    for (const auto& sm : tr.summaries)
      if (!sm.is_scalar && sm.n_total - sm.n_steady > warmup_steps)
        warmup_steps = sm.n_total - sm.n_steady, warmup_metric = sm.metric;
    double warmup_end_s = -1;
    for (const auto& entry : *metrics) {
      if (entry.first.name != warmup_metric) continue;
      long long seen = 0;
      auto streamed = st.for_each_sample(tr.id, entry.second, [&](const store::SampleRow& row) {
        if (seen++ == warmup_steps) warmup_end_s = row.t_s;
      });
      if (!streamed) return streamed.error();
    }
    HostPauses pauses;
    bool pauses_done = false;
    for (const auto& entry : *metrics) {
      // Named, not a structured binding: clang 14 (the fuzz build) cannot capture those in lambdas.
      const auto& info = entry.first;
      const auto id = entry.second;
      if (!analysed(info.name)) {
        if (!opt.on_sample) continue;
        auto streamed = st.for_each_sample(
            tr.id, id, [&](const store::SampleRow& row) { opt.on_sample(tr.id, info, row.t_s, row.value); });
        if (!streamed) return streamed.error();
        continue;
      }
      // Warm-up steps (compile, first batches) are not the long run: skip as
      // many as the trial's summary left out of its steady state.
      long long skip = 0;
      for (const auto& sm : tr.summaries)
        if (sm.metric == info.name && !sm.is_scalar && sm.n_total > sm.n_steady) skip = sm.n_total - sm.n_steady;
      const bool host_series = is_host_context(info.name);
      // The host's own series are context over the whole trial; the trial's
      // other series start where its steps became steady, a sampled series
      // with a summary of its own too (its summary's cut counts samples, a
      // quarter second each, not steps: the sampler's RSS of a sim that
      // touched its 294 MB before its first step, 4.5 s in beside eight busy
      // loops, read as memory growth of 295 MB/h).
      const double from_s = !host_series ? warmup_end_s : -1;
      if (!host_series && !pauses_done) {
        pauses.finish();
        pauses_done = true;
      }
      SeriesAnalyzer a(info.name, info.unit, opt, host_series ? nullptr : &pauses);
      long long seen = 0;
      auto streamed = st.for_each_sample(tr.id, id, [&](const store::SampleRow& row) {
        if (opt.on_sample) opt.on_sample(tr.id, info, row.t_s, row.value);
        if (host_series) pauses.add(info.name, row.t_s, row.value);
        if (seen++ >= skip && row.t_s >= from_s) a.feed(row.t_s, row.value);
      });
      if (!streamed) return streamed.error();
      ts.metrics.push_back(a.finish(ts.findings, ts.host_events));
    }
    std::stable_sort(ts.metrics.begin(), ts.metrics.end(), [&](const MetricTrend& a, const MetricTrend& b) {
      return stored_position[a.metric] < stored_position[b.metric];
    });
    if (tr.error.starts_with("hang:")) {
      // When the last step arrived: the evidence.
      const double last = tr.last_step_s;
      ts.findings.push_back(
          {"hang", "", last, "s", tr.error.substr(0, tr.error.find(';')), {{last, last, "last step"}}});
    } else if (tr.status == model::TrialStatus::Ok && tr.steps == 0) {
      // A soak shorter than --hang-after whose workload never reported a
      // step ends "ok": nothing was measured, which a release checklist must
      // not read as "no findings".
      ts.findings.push_back({"no_steps",
                             "",
                             tr.wall_s,
                             "s",
                             fmt::format("no step record in the whole {} trial, so nothing to judge{}",
                                         util::format_hms(tr.wall_s), tr.notes.empty() ? "" : " (" + tr.notes + ")"),
                             {}});
    }
    separate_host_events(ts, opt);
    rep.trials.push_back(std::move(ts));
  }
  return rep;
}

}  // namespace perfgate::analysis
