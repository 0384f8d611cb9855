#include "harness/analysis/soak.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <span>

#include <fmt/format.h>

#include "harness/model/metric.hpp"
#include "harness/model/params.hpp"
#include "harness/stats/change_points.hpp"
#include "harness/stats/descriptive.hpp"
#include "harness/stats/trend.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::analysis {

namespace {

bool is_time_metric(std::string_view name) {
  return name == "step_time_ms" || name == "latency_ms" || name.ends_with("_time_ms");
}

// Which series a soak report looks at: how long a step takes, how much gets
// done, memory, and the loss (for NaN only). Per-phase timings explain a
// finding but would bury it.
bool analysed(std::string_view name) {
  return is_time_metric(name) || name == "throughput" || model::is_memory_metric(name) || name == "loss";
}

std::string hms(double s) {
  long long t = static_cast<long long>(std::llround(std::max(0.0, s)));
  return fmt::format("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60);
}

}  // namespace

MetricTrend analyse_series(const std::string& metric, const std::string& unit, const std::vector<double>& t_s,
                           const std::vector<double>& values, const SoakAnalysisOptions& opt,
                           std::vector<Finding>& findings) {
  MetricTrend m;
  m.metric = metric;
  m.unit = unit;
  m.memory = model::is_memory_metric(metric);
  m.samples = static_cast<long long>(values.size());

  // NaN / Inf: in the loss they are a finding of their own; elsewhere they are left out.
  std::vector<double> t, y;
  t.reserve(values.size());
  y.reserve(values.size());
  Evidence first_bad{};
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::isfinite(values[i])) {
      t.push_back(t_s[i]);
      y.push_back(values[i]);
    } else if (m.non_finite++ == 0) {
      first_bad = {t_s[i], values[i], fmt::format("sample {}", i)};
    }
  }
  if (metric == "loss") {
    if (m.non_finite > 0) {
      Finding f{"nan_loss", metric, static_cast<double>(m.non_finite), "values",
                fmt::format("{} NaN/Inf loss value(s), the first at {}", m.non_finite, hms(first_bad.t_s)), {first_bad}};
      findings.push_back(std::move(f));
    }
    return m;
  }
  if (y.empty()) return m;

  // Windows by time: the series is summarised per window so steps inside a
  // window (autocorrelated) count once, and long soaks stay cheap.
  std::vector<double> wt, wmed;
  std::vector<double> jitter, cvs;
  std::size_t i = 0;
  while (i < y.size()) {
    double start = std::floor(t[i] / opt.window_s) * opt.window_s;
    std::size_t j = i;
    while (j < y.size() && t[j] < start + opt.window_s) ++j;
    std::span<const double> w(y.data() + i, j - i);
    double med = stats::median(w);
    wt.push_back(start + opt.window_s / 2);
    wmed.push_back(med);
    if (w.size() >= 5 && med > 0) {
      jitter.push_back(stats::quantile(w, 0.99) / med);
      cvs.push_back(stats::cv(w));
    }
    i = j;
  }
  m.windows = static_cast<int>(wmed.size());
  m.first_window = wmed.front();
  m.last_window = wmed.back();
  if (!jitter.empty()) {
    m.jitter_median = stats::median(jitter);
    m.jitter_max = *std::max_element(jitter.begin(), jitter.end());
    m.cv_median = stats::median(cvs);
  }

  if (wmed.size() >= 3) {
    std::vector<double> hours(wt.size());
    for (std::size_t k = 0; k < wt.size(); ++k) hours[k] = wt[k] / 3600.0;
    auto ts = stats::theil_sen(hours, wmed);
    m.slope_per_h = ts.slope;
    m.slope_low_per_h = ts.low;
    m.slope_high_per_h = ts.high;
    // Relative to where the run started: the median of its first windows.
    std::size_t head = std::min<std::size_t>(3, wmed.size());
    double level = stats::median(std::span<const double>(wmed.data(), head));
    m.drift_pct_per_h = level != 0 ? ts.slope / std::fabs(level) * 100.0 : 0;
    m.trend_p = stats::mann_kendall(wmed).p_value;
    bool real = m.trend_p < opt.significance && (ts.low > 0 || ts.high < 0);
    if (real && m.memory && ts.slope > opt.memory_mb_per_h) {
      findings.push_back({"memory_growth", metric, ts.slope, "MB/h",
                          fmt::format("{} grows {:.1f} MB/h (95% CI {:.1f} to {:.1f}; trend p {:.2g}): {:.1f} -> {:.1f} MB",
                                      metric, ts.slope, ts.low, ts.high, m.trend_p, m.first_window, m.last_window),
                          {{wt.front(), wmed.front(), "first window"}, {wt.back(), wmed.back(), "last window"}}});
    } else if (real && !m.memory && std::fabs(m.drift_pct_per_h) > opt.drift_pct_per_h) {
      findings.push_back({"drift", metric, m.drift_pct_per_h, "%/h",
                          fmt::format("{} drifts {:+.2f} %/h (trend p {:.2g}): {} -> {} {}", metric, m.drift_pct_per_h,
                                      m.trend_p, util::format_value(m.first_window), util::format_value(m.last_window), unit),
                          {{wt.front(), wmed.front(), "first window"}, {wt.back(), wmed.back(), "last window"}}});
    }
  }

  // Staircases: level shifts between windows, located by change points.
  if (!m.memory && wmed.size() >= 8) {
    stats::ChangePointOptions cpo;
    cpo.significance = opt.significance;
    cpo.seed = opt.seed;
    cpo.min_segment = 3;
    for (const auto& cp : stats::e_divisive(wmed, cpo)) {
      double pct = cp.relative_change * 100.0;
      if (!(std::fabs(pct) >= opt.staircase_pct)) continue;
      StaircaseStep st{wt[cp.index] - opt.window_s / 2, cp.before_median, cp.after_median, pct, cp.p_value};
      m.steps.push_back(st);
      findings.push_back({"staircase", metric, pct, "%",
                          fmt::format("{} steps {:+.1f} % at {} ({} -> {} {}, p {:.2g})", metric, pct, hms(st.t_s),
                                      util::format_value(st.before), util::format_value(st.after), unit, st.p_value),
                          {{st.t_s, st.after, "first window after the step"}}});
    }
  }

  // Stalls and jitter: only for times of a step.
  if (is_time_metric(metric)) {
    auto stalls = stats::find_stalls(y, 51, opt.stall_factor);
    m.stalls = static_cast<int>(stalls.size());
    if (!stalls.empty()) {
      Finding f{"stalls", metric, static_cast<double>(stalls.size()), "steps", "", {}};
      for (const auto& s : stalls) {
        m.worst_stall_ratio = std::max(m.worst_stall_ratio, s.ratio);
        if (f.evidence.size() < 20) f.evidence.push_back({t[s.index], s.value, fmt::format("{:.1f}x the rolling median", s.ratio)});
      }
      f.summary = fmt::format("{} stall(s) in {}: steps over {:.0f}x their rolling median, the worst {:.1f}x", stalls.size(),
                              metric, opt.stall_factor, m.worst_stall_ratio);
      findings.push_back(std::move(f));
    }
    // Persistent jitter, not one noisy window: the typical window's tail decides.
    if (m.jitter_median > opt.jitter_p99_over_p50) {
      findings.push_back({"jitter", metric, m.jitter_max, "p99/p50",
                          fmt::format("{} jitter: p99/p50 {:.2f} in the median window (up to {:.2f}; CV median {:.1f} %)", metric,
                                      m.jitter_median, m.jitter_max, m.cv_median * 100),
                          {}});
    }
  }
  return m;
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
    for (const auto& [info, id] : *metrics) {
      if (!analysed(info.name)) continue;
      auto rows = st.load_samples(tr.id, id);
      if (!rows) return rows.error();
      // Warm-up steps (compile, first batches) are not the long run: skip as
      // many as the trial's summary left out of its steady state.
      std::size_t skip = 0;
      for (const auto& sm : tr.summaries)
        if (sm.metric == info.name && !sm.is_scalar && sm.n_total > sm.n_steady)
          skip = static_cast<std::size_t>(sm.n_total - sm.n_steady);
      std::vector<double> t, v;
      t.reserve(rows->size());
      v.reserve(rows->size());
      for (std::size_t k = std::min(skip, rows->size()); k < rows->size(); ++k) {
        t.push_back((*rows)[k].t_s);
        v.push_back((*rows)[k].value);
      }
      ts.metrics.push_back(analyse_series(info.name, info.unit, t, v, opt, ts.findings));
    }
    if (tr.error.starts_with("hang:")) {
      double last = -1;
      // "... arrived at 12.3 s": the time of the last step, for the evidence.
      if (auto at = tr.error.find("arrived at "); at != std::string::npos) last = std::atof(tr.error.c_str() + at + 11);
      ts.findings.push_back({"hang", "", last, "s", tr.error.substr(0, tr.error.find(';')), {{last, last, "last step"}}});
    }
    rep.trials.push_back(std::move(ts));
  }
  return rep;
}

}  // namespace perfgate::analysis
