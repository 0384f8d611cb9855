#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "harness/analysis/soak.hpp"
#include "harness/stats/stalls.hpp"
#include "harness/store/store.hpp"
#include "tests/unit/support/backends.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;
using analysis::Finding;

namespace {

// A step-time series: `n` steps every `dt_s`, around `level` ms with 2 % noise.
struct Series {
  std::vector<double> t, v;
};

Series steps(std::size_t n, double dt_s, double level, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  Series s;
  for (std::size_t i = 0; i < n; ++i) {
    s.t.push_back(static_cast<double>(i) * dt_s);
    s.v.push_back(level * (1 + 0.02 * z(rng)));
  }
  return s;
}

std::vector<Finding> of_kind(const std::vector<Finding>& fs, const std::string& kind) {
  std::vector<Finding> out;
  for (const auto& f : fs)
    if (f.kind == kind) out.push_back(f);
  return out;
}

analysis::SoakAnalysisOptions options(double window_s) {
  analysis::SoakAnalysisOptions o;
  o.window_s = window_s;
  return o;
}

}  // namespace

TEST_CASE("a flat series has no finding", "[soak]") {
  auto s = steps(20'000, 0.05, 20, 1);  // 1000 s
  std::vector<Finding> fs;
  auto m = analysis::analyse_series("step_time_ms", "ms", s.t, s.v, options(20), fs);
  CHECK(fs.empty());
  CHECK(m.windows == 50);
  CHECK(std::fabs(m.drift_pct_per_h) < 5);
  CHECK(m.stalls == 0);
}

TEST_CASE("stalls are found across chunk boundaries exactly as in one pass", "[soak]") {
  // 200k steps: the streaming analysis works in chunks of 65,536 with context.
  auto s = steps(200'000, 0.01, 10, 2);
  std::vector<std::size_t> at = {5, 1000, 65'535, 65'536, 65'537, 65'560, 131'071, 131'072, 199'990};
  for (auto i : at) s.v[i] = 60;  // 6x
  std::vector<Finding> fs;
  auto m = analysis::analyse_series("step_time_ms", "ms", s.t, s.v, options(60), fs);
  auto whole = stats::find_stalls(s.v, 51, 3.0);
  CHECK(m.stalls == static_cast<int>(whole.size()));
  CHECK(m.stalls == static_cast<int>(at.size()));
  auto st = of_kind(fs, "stalls");
  REQUIRE(st.size() == 1);
  REQUIRE(st[0].evidence.size() == at.size());
  CHECK(st[0].evidence[0].t_s == Approx(0.05));
  CHECK(st[0].evidence[3].t_s == Approx(655.36));
  CHECK(m.worst_stall_ratio == Approx(6).epsilon(0.1));
}

TEST_CASE("a leak is memory growth at its rate, a drift is a drift", "[soak]") {
  std::vector<double> t, rss, step;
  std::mt19937_64 rng(3);
  std::normal_distribution<double> z(0, 1);
  for (int i = 0; i < 7200; ++i) {  // two hours, 1 Hz
    t.push_back(i);
    rss.push_back(1000 + 30.0 * i / 3600.0 + z(rng));                    // +30 MB/h
    step.push_back(20 * (1 + 0.05 * i / 3600.0) * (1 + 0.01 * z(rng)));  // +5 %/h
  }
  std::vector<Finding> fs;
  auto mem = analysis::analyse_series("host.rss_mb", "MB", t, rss, options(60), fs);
  CHECK(mem.memory);
  CHECK(mem.slope_per_h == Approx(30).epsilon(0.05));
  auto growth = of_kind(fs, "memory_growth");
  REQUIRE(growth.size() == 1);
  CHECK(growth[0].value == Approx(30).epsilon(0.05));
  fs.clear();
  auto tm = analysis::analyse_series("step_time_ms", "ms", t, step, options(60), fs);
  CHECK(tm.drift_pct_per_h == Approx(5).epsilon(0.1));
  CHECK(tm.trend_p < 1e-6);
  CHECK(of_kind(fs, "drift").size() == 1);
  // The same drift for the better (step time falling, throughput rising) is
  // measured but is not a finding.
  std::vector<double> faster, rate;
  for (std::size_t i = 0; i < step.size(); ++i) {
    faster.push_back(40 - step[i]);
    rate.push_back(1000.0 / faster.back());
  }
  fs.clear();
  auto down = analysis::analyse_series("step_time_ms", "ms", t, faster, options(60), fs);
  CHECK(down.drift_pct_per_h < -4);
  CHECK(of_kind(fs, "drift").empty());
  fs.clear();
  auto up = analysis::analyse_series("throughput", "samples/s", t, rate, options(60), fs);
  CHECK(up.drift_pct_per_h > 4);
  CHECK(of_kind(fs, "drift").empty());
}

TEST_CASE("a staircase is located and sized", "[soak]") {
  auto s = steps(36'000, 0.05, 20, 4);                              // 30 min
  for (std::size_t i = 18'000; i < s.v.size(); ++i) s.v[i] *= 1.2;  // +20 % at 900 s
  std::vector<Finding> fs;
  auto m = analysis::analyse_series("step_time_ms", "ms", s.t, s.v, options(30), fs);
  REQUIRE(m.steps.size() == 1);
  CHECK(m.steps[0].t_s == Approx(900).margin(30));
  CHECK(m.steps[0].change_pct == Approx(20).margin(2));
  CHECK(of_kind(fs, "staircase").size() == 1);
  CHECK(of_kind(fs, "stalls").empty());  // a new level is not a run of stalls
}

TEST_CASE("a step for the better is listed but is not a finding", "[soak]") {
  auto s = steps(36'000, 0.05, 20, 5);
  for (std::size_t i = 18'000; i < s.v.size(); ++i) s.v[i] *= 0.8;  // steps 20 % faster at 900 s
  std::vector<Finding> fs;
  auto m = analysis::analyse_series("step_time_ms", "ms", s.t, s.v, options(30), fs);
  REQUIRE(m.steps.size() == 1);
  CHECK(m.steps[0].change_pct == Approx(-20).margin(2));
  CHECK(of_kind(fs, "staircase").empty());
  // For throughput the worse direction is down: the same 0.8x step is a finding.
  fs.clear();
  auto tp = analysis::analyse_series("throughput", "samples/s", s.t, s.v, options(30), fs);
  REQUIRE(tp.steps.size() == 1);
  CHECK(tp.steps[0].change_pct == Approx(-20).margin(2));
  CHECK(of_kind(fs, "staircase").size() == 1);
}

TEST_CASE("NaN loss is counted with the first one's time", "[soak]") {
  std::vector<double> t = {0, 1, 2, 3, 4}, loss = {2.0, 1.9, std::nan(""), INFINITY, 1.7};
  std::vector<Finding> fs;
  auto m = analysis::analyse_series("loss", "", t, loss, options(60), fs);
  CHECK(m.non_finite == 2);
  auto nan = of_kind(fs, "nan_loss");
  REQUIRE(nan.size() == 1);
  CHECK(nan[0].value == 2);
  CHECK(nan[0].evidence.at(0).t_s == 2);
}

TEST_CASE("short and empty series do not crash", "[soak]") {
  std::vector<Finding> fs;
  std::vector<double> none;
  auto m = analysis::analyse_series("step_time_ms", "ms", none, none, options(60), fs);
  CHECK(m.windows == 0);
  std::vector<double> t = {0, 1}, v = {10, 11};
  m = analysis::analyse_series("step_time_ms", "ms", t, v, options(60), fs);
  CHECK(m.windows == 1);
  CHECK(fs.empty());
}

TEST_CASE("a short run's drift must change the level by a staircase step, surely, to be a finding", "[soak]") {
  // 12 s at 20 Hz: the level moves +2.4 % (what a shared host does over
  // seconds, trend clearly significant), then +6 % with little noise, then
  // +6 % with the noise of a busy machine (each step 5 %: the slope's
  // 95 % interval then reaches below 5 % of the level over the run).
  auto series = [](double total_change, double noise) {
    std::vector<double> t, step;
    std::mt19937_64 rng(5);
    std::normal_distribution<double> z(0, 1);
    for (int i = 0; i < 240; ++i) {
      t.push_back(i * 0.05);
      step.push_back(50 * (1 + total_change * i / 239.0) * (1 + noise * z(rng)));
    }
    return std::pair{t, step};
  };
  std::vector<Finding> fs;
  auto [t1, s1] = series(0.024, 0.002);
  auto small = analysis::analyse_series("step_time_ms", "ms", t1, s1, options(1), fs);
  CHECK(small.trend_p < 0.01);
  CHECK(of_kind(fs, "drift").empty());
  fs.clear();
  auto [t2, s2] = series(0.06, 0.002);
  analysis::analyse_series("step_time_ms", "ms", t2, s2, options(1), fs);
  CHECK(of_kind(fs, "drift").size() == 1);
  fs.clear();
  auto [t3, s3] = series(0.06, 0.05);
  auto noisy = analysis::analyse_series("step_time_ms", "ms", t3, s3, options(1), fs);
  CHECK(noisy.trend_p < 0.01);
  CHECK(noisy.slope_low_per_h * 11.95 / 3600 / 50 * 100 < 5);
  CHECK(of_kind(fs, "drift").empty());
}

namespace {

// A 30 s trial's series in 1 s windows, at `before` and from `at_s` on at
// `after`, with the change point there (at significance `p`) if it moved.
analysis::MetricTrend stepped_series(std::string name, double at_s, double before, double after, double p) {
  analysis::MetricTrend m;
  m.metric = std::move(name);
  for (int w = 0; w < 30; ++w) {
    m.window_t.push_back(w + 0.5);
    m.window_median.push_back(w + 0.5 >= at_s ? after : before);
  }
  if (before != after) m.steps.push_back({at_s, before, after, 100 * (after / before - 1), p});
  return m;
}

// A 30 s trial with 1 s windows whose other processes' CPU steps from 8 to
// 129 % of a core at 5 s and, if `back_at_s` is finite, returns to 8 % then;
// and a step-time staircase found at `step_at_s`.
analysis::TrialSoak busy_host_trial(double step_at_s, double back_at_s) {
  analysis::TrialSoak trial;
  trial.wall_s = 30;
  analysis::MetricTrend host;
  host.metric = std::string(analysis::k_host_other_cpu_metric);
  for (int w = 0; w < 30; ++w) {
    const double t = w + 0.5;
    host.window_t.push_back(t);
    host.window_median.push_back(t >= 5 && t < back_at_s ? 129 : 8);
  }
  host.steps.push_back({5, 8, 129, 1512, 0.001});
  if (std::isfinite(back_at_s)) host.steps.push_back({back_at_s, 129, 8, -94, 0.001});
  trial.metrics.push_back(host);
  trial.findings.push_back(
      {"staircase", "step_time_ms", 15.8, "%", "step_time_ms: a step of +15.8 %", {{step_at_s, 87, ""}}});
  return trial;
}

}  // namespace

TEST_CASE("a workload step that follows a host change that still holds is a host event", "[soak]") {
  // near_s here is max(5 windows, 15 % of 30 s) = 5 s; the step comes 6 s
  // after the host's (what a soak on this machine did once: the steps slowed
  // at once and again six seconds later).
  auto trial = busy_host_trial(11, INFINITY);
  analysis::separate_host_events(trial, options(1));
  CHECK(trial.findings.empty());
  REQUIRE(trial.host_events.size() == 1);
  CHECK_THAT(trial.host_events[0].summary, Catch::Contains("other processes' CPU went 8 -> 129 %"));
}

TEST_CASE("a host change that ended, or ended long ago, explains no later step", "[soak]") {
  SECTION("the host went back to idle before the step") {
    auto trial = busy_host_trial(11, 7);
    analysis::separate_host_events(trial, options(1));
    CHECK(trial.findings.size() == 1);
    CHECK(trial.host_events.empty());
  }
  SECTION("the step comes more than three times the nearness after the host's") {
    // 21 s after the host's step at 5 s, where 3 x 5 s reach to 20 s.
    auto trial = busy_host_trial(26, INFINITY);
    analysis::separate_host_events(trial, options(1));
    CHECK(trial.findings.size() == 1);
    CHECK(trial.host_events.empty());
  }
  SECTION("a step in the other direction is not the busy host's") {
    auto trial = busy_host_trial(11, INFINITY);
    trial.findings[0].value = -15.8;
    analysis::separate_host_events(trial, options(1));
    CHECK(trial.findings.size() == 1);
  }
}

TEST_CASE("the host probe alone explains only a workload step in the same windows or just after", "[soak]") {
  // What CI saw once: a neighbour slowed the probe +36 % at 10 s, nothing
  // else on the host moved, and the injected staircase came at 15 s.
  auto trial_with = [](double step_at_s, double other_cpu_after) {
    analysis::TrialSoak trial;
    trial.wall_s = 30;
    trial.metrics.push_back(stepped_series(std::string(analysis::k_host_probe_metric), 10, 1.0, 1.36, 0.001));
    trial.metrics.push_back(
        stepped_series(std::string(analysis::k_host_other_cpu_metric), 10, 8, other_cpu_after, 0.001));
    trial.findings.push_back(
        {"staircase", "step_time_ms", 40, "%", "step_time_ms: a step of +40 %", {{step_at_s, 12.6, ""}}});
    return trial;
  };
  SECTION("five windows after the probe's step, nothing else moved: the workload's finding") {
    auto trial = trial_with(15, 8);
    analysis::separate_host_events(trial, options(1));
    REQUIRE(trial.findings.size() == 1);
    CHECK(trial.host_events.empty());
  }
  SECTION("within three windows of it: the host's") {
    auto trial = trial_with(12, 8);
    analysis::separate_host_events(trial, options(1));
    CHECK(trial.findings.empty());
    REQUIRE(trial.host_events.size() == 1);
    CHECK_THAT(trial.host_events[0].summary, Catch::Contains("the host probe took +36 %"));
  }
  SECTION("three windows before the probe's step: the workload's finding, a cause comes first") {
    auto trial = trial_with(7, 8);
    analysis::separate_host_events(trial, options(1));
    REQUIRE(trial.findings.size() == 1);
    CHECK(trial.host_events.empty());
  }
  SECTION("one window before it: the host's, as close as change points are placed") {
    auto trial = trial_with(9, 8);
    analysis::separate_host_events(trial, options(1));
    CHECK(trial.findings.empty());
    CHECK(trial.host_events.size() == 1);
  }
  SECTION("five windows after, other processes took a core: the host's") {
    auto trial = trial_with(15, 110);
    analysis::separate_host_events(trial, options(1));
    CHECK(trial.findings.empty());
    REQUIRE(trial.host_events.size() == 1);
    CHECK_THAT(trial.host_events[0].summary, Catch::Contains("other processes' CPU went 8 -> 110 %"));
  }
}

TEST_CASE("CPU pressure that rose with the trial's own CPU is the trial's doing, not the host's", "[soak]") {
  // A saturated machine: pressure 66 -> 77 % at 14 s, the step +27.6 % at
  // 15 s (what a sim spinning 20 % longer per step did beside three busy loops).
  auto trial_with = [](double cpu_before, double cpu_after) {
    analysis::TrialSoak trial;
    trial.wall_s = 30;
    trial.metrics.push_back(stepped_series("host.cpu_pressure_pct", 14, 66, 77, 0.005));
    trial.metrics.push_back(stepped_series(std::string(analysis::k_host_trial_wait_metric), 15, 25, 28, 0.005));
    trial.metrics.push_back(
        stepped_series(std::string(analysis::k_trial_cpu_metric), 15, cpu_before, cpu_after, 0.005));
    trial.findings.push_back(
        {"staircase", "step_time_ms", 27.6, "%", "step_time_ms: a step of +27.6 %", {{15, 39.6, ""}}});
    return trial;
  };
  SECTION("the trial's CPU stayed: the host got busier") {
    auto trial = trial_with(20, 20);
    analysis::separate_host_events(trial, options(1));
    CHECK(trial.findings.empty());
    REQUIRE(trial.host_events.size() == 1);
    CHECK_THAT(trial.host_events[0].summary, Catch::Contains("CPU pressure"));
  }
  SECTION("the trial's CPU fell: it got less of the machine") {
    auto trial = trial_with(20, 15);
    analysis::separate_host_events(trial, options(1));
    CHECK(trial.findings.empty());
    CHECK(trial.host_events.size() == 1);
  }
  SECTION("the trial's CPU rose 20 -> 26 %: the slowdown is the workload's") {
    auto trial = trial_with(20, 26);
    analysis::separate_host_events(trial, options(1));
    REQUIRE(trial.findings.size() == 1);
    CHECK(trial.findings[0].metric == "step_time_ms");
    CHECK(trial.host_events.empty());
  }
  SECTION("a rise under a tenth of the trial's level is noise, not demand") {
    auto trial = trial_with(60, 64);
    analysis::separate_host_events(trial, options(1));
    CHECK(trial.findings.empty());
  }
}

TEST_CASE("a probe slowed by the trial's own extra CPU does not explain the trial's step", "[soak]") {
  // What a run alone saw: the sim spun longer per step from 15 s (its CPU
  // 4 -> 20 % of a core), the step +21 %, and the probe +16 % in the same
  // window, nothing else moving. A host that slows CPU work raises a
  // workload's CPU share by about as much as the probe, no more.
  auto trial_with = [](double probe_after, double cpu_before, double cpu_after) {
    analysis::TrialSoak trial;
    trial.wall_s = 30;
    trial.metrics.push_back(stepped_series(std::string(analysis::k_host_probe_metric), 15, 4.56, probe_after, 0.005));
    trial.metrics.push_back(
        stepped_series(std::string(analysis::k_trial_cpu_metric), 15, cpu_before, cpu_after, 0.005));
    trial.findings.push_back(
        {"staircase", "step_time_ms", 21.2, "%", "step_time_ms: a step of +21.2 %", {{15, 20.5, ""}}});
    trial.findings.push_back({"drift", "step_time_ms", 2980, "%/h", "step_time_ms drifts", {{0.5, 17.1, ""}}});
    return trial;
  };
  SECTION("the trial's CPU +400 %, the probe +16 %: the workload's step and drift") {
    auto trial = trial_with(5.29, 4, 20);
    analysis::separate_host_events(trial, options(1));
    CHECK(trial.findings.size() == 2);
    CHECK(trial.host_events.empty());
  }
  SECTION("from no CPU at all: the workload's") {
    auto trial = trial_with(5.29, 0, 20);
    analysis::separate_host_events(trial, options(1));
    CHECK(trial.findings.size() == 2);
  }
  SECTION("the trial's CPU +15 %, the probe +20 %: a slower host, whose event it is") {
    auto trial = trial_with(5.47, 40, 46);
    analysis::separate_host_events(trial, options(1));
    CHECK(trial.findings.empty());
    REQUIRE(trial.host_events.size() == 2);
    CHECK_THAT(trial.host_events[0].summary + trial.host_events[1].summary,
               Catch::Contains("the host probe took +20 %"));
  }
  SECTION("the trial's CPU unchanged, the probe +16 %: the host's") {
    auto trial = trial_with(5.29, 20, 20);
    analysis::separate_host_events(trial, options(1));
    CHECK(trial.findings.empty());
    CHECK(trial.host_events.size() == 2);
  }
}

TEST_CASE("host pauses: an unusual interval's wait or lateness, beyond the typical one", "[soak]") {
  analysis::HostPauses h;
  // Wait 2 % of each 250 ms interval (5 ms), the canary 1 ms late; the
  // interval ending at 5.0 s waited 42 % (105 ms), the one at 8.0 s saw the
  // canary 300 ms late.
  for (int k = 0; k <= 40; ++k) {
    const double t = 0.25 * k;
    h.add(analysis::k_host_trial_wait_metric, t, k == 20 ? 42 : 2);
    h.add(analysis::k_host_wakeup_late_metric, t, k == 32 ? 301 : 1);
  }
  h.add("host.probe_ms", 5.0, 1e6);  // not a witness of pauses
  h.finish();
  auto wait = h.during(4.8, 4.9);              // inside (4.75, 5.0]
  CHECK(wait.ms == Approx(100).margin(0.01));  // (42 % - 2 %) of 250 ms
  CHECK(wait.why.find("waited 100 ms more than usual for a core") != std::string::npos);
  auto late = h.during(7.8, 7.95);
  CHECK(late.ms == Approx(300).margin(0.01));
  CHECK(late.why.find("woke 300 ms late") != std::string::npos);
  // Both in the span: the larger witness speaks.
  CHECK(h.during(4.9, 7.9).ms == Approx(300).margin(0.01));
  // Elsewhere, and before or after every sample: nothing.
  CHECK(h.during(2.0, 2.4).ms == 0);
  CHECK(h.during(2.0, 2.4).why.empty());
  CHECK(h.during(-5, -4).ms == 0);
  CHECK(h.during(20, 21).ms == 0);
  // The same samples given last first: the same answers.
  analysis::HostPauses reversed;
  for (int k = 40; k >= 0; --k) {
    const double t = 0.25 * k;
    reversed.add(analysis::k_host_trial_wait_metric, t, k == 20 ? 42 : 2);
    reversed.add(analysis::k_host_wakeup_late_metric, t, k == 32 ? 301 : 1);
  }
  reversed.finish();
  CHECK(reversed.during(4.8, 4.9).ms == Approx(100).margin(0.01));
  CHECK(reversed.during(7.8, 7.95).ms == Approx(300).margin(0.01));
  CHECK(reversed.during(2.0, 2.4).ms == 0);
}

TEST_CASE("a stall while the host paused is a host event; the same stall without one is a finding", "[soak]") {
  // 60 s of 25 ms steps; one step of 130 ms (5.2x) at 30 s, like the single
  // stretched step a shared VM once gave a flat 12-second soak.
  auto s = steps(2400, 0.025, 25, 7);
  s.v[1200] = 130;
  const double at_s = s.t[1200];
  SECTION("the canary woke late across the stalled step") {
    analysis::HostPauses paused;
    for (double t = 0; t <= 60; t += 0.25) {
      paused.add(analysis::k_host_trial_wait_metric, t, 2);
      // The interval that holds the stalled step's span.
      paused.add(analysis::k_host_wakeup_late_metric, t, std::fabs(t - 30.0) < 1e-9 ? 101 : 1);
    }
    paused.finish();
    std::vector<Finding> fs, host;
    auto m = analysis::analyse_series("step_time_ms", "ms", s.t, s.v, options(1), fs, &paused, &host);
    CHECK(m.stalls == 0);
    CHECK(m.host_stalls == 1);
    CHECK(of_kind(fs, "stalls").empty());
    auto ev = of_kind(host, "stalls");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].summary.find("[host event: the machine paused") != std::string::npos);
    REQUIRE(ev[0].evidence.size() == 1);
    CHECK(ev[0].evidence[0].t_s == Approx(at_s));
  }
  SECTION("the trial waited for a core across it") {
    analysis::HostPauses waited;
    for (double t = 0; t <= 60; t += 0.25) {
      waited.add(analysis::k_host_trial_wait_metric, t, std::fabs(t - 30.0) < 1e-9 ? 45 : 3);
      waited.add(analysis::k_host_wakeup_late_metric, t, 1);
    }
    waited.finish();
    std::vector<Finding> fs, host;
    auto m = analysis::analyse_series("step_time_ms", "ms", s.t, s.v, options(1), fs, &waited, &host);
    CHECK(m.host_stalls == 1);
    CHECK(m.stalls == 0);
    CHECK(of_kind(host, "stalls").at(0).summary.find("waited 105 ms more than usual") != std::string::npos);
  }
  SECTION("a host that held it up too little, elsewhere, or always as much is no excuse") {
    for (int variant = 0; variant < 3; ++variant) {
      analysis::HostPauses h;
      for (double t = 0; t <= 60; t += 0.25) {
        const bool here = std::fabs(t - 30.0) < 1e-9;
        double late = 1;
        if (variant == 0 && here) late = 40;                         // less than half the 105 ms excess
        if (variant == 1 && std::fabs(t - 40.0) < 1e-9) late = 300;  // ten seconds later
        if (variant == 2) late = 100;  // a canary always this late: the trial's own load, not a pause
        h.add(analysis::k_host_trial_wait_metric, t, 2);
        h.add(analysis::k_host_wakeup_late_metric, t, late);
      }
      h.finish();
      std::vector<Finding> fs, host;
      auto m = analysis::analyse_series("step_time_ms", "ms", s.t, s.v, options(1), fs, &h, &host);
      INFO("variant " << variant);
      CHECK(m.stalls == 1);
      CHECK(m.host_stalls == 0);
      CHECK(of_kind(fs, "stalls").size() == 1);
      CHECK(host.empty());
    }
  }
  SECTION("no host series: every stall is the workload's") {
    std::vector<Finding> fs;
    auto m = analysis::analyse_series("step_time_ms", "ms", s.t, s.v, options(1), fs);
    CHECK(m.stalls == 1);
    CHECK(of_kind(fs, "stalls").size() == 1);
  }
}

TEST_CASE("a soak's sampled memory starts where its steps became steady", "[soak]") {
  // A workload that first touches its memory during its warm-up steps (slow,
  // on a loaded machine): the proc sampler's RSS climbs from 20 to 300 MB over
  // the first 3 s, then stays. The steps' own cut (5 warm-up steps) marks
  // where the trial became steady, and the sampled series starts there too:
  // no memory growth over an 18 s soak.
  test::TempDir dir("soak-warmup");
  auto st = test::open_or_fail(test::database_for("sqlite", dir / "p.db"));
  store::RunRecord r;
  r.suite = "soak-it";
  r.started_at = 1700000000;
  r.status = model::RunStatus::Running;
  r.host = "h";
  r.kind = model::RunKind::Soak;
  auto run = st->begin_run(r);
  REQUIRE(run);
  auto config = st->config_id("sim", "{}");
  REQUIRE(config);
  model::TrialRecord t;
  t.run_id = *run;
  t.config_id = *config;
  t.status = model::TrialStatus::Running;
  t.started_at = 1700000000;
  auto trial = st->begin_trial(t);
  REQUIRE(trial);
  t.id = *trial;
  auto step_id = st->metric_id(model::MetricInfo::inferred("step_time_ms"));
  auto rss_id = st->metric_id(model::MetricInfo::inferred("host.rss_mb"));
  REQUIRE(step_id);
  REQUIRE(rss_id);
  std::vector<store::SampleRow> rows;
  // Five warm-up steps of 600 ms, then 30 ms steps to 18 s.
  double at = 0;
  long long step = 0;
  for (; step < 5; ++step) rows.push_back({*step_id, step, at += 0.6, 600});
  for (; at < 18; ++step) rows.push_back({*step_id, step, at += 0.03, 30.0 + static_cast<double>(step % 3)});
  for (int i = 0; i < 72; ++i) {  // every 250 ms
    const double ts = 0.25 * (i + 1);
    rows.push_back({*rss_id, i, ts, ts < 3 ? 20 + 280 * ts / 3 : 300 + 0.1 * (i % 2)});
  }
  REQUIRE(st->append_samples(t.id, rows));
  model::MetricSummary sm;
  sm.metric = "step_time_ms";
  sm.n_total = step;
  sm.n_steady = step - 5;
  sm.value = sm.median = 30;
  t.summaries.push_back(sm);
  std::vector<long long> summary_ids = {*step_id};
  // The sampler's series may carry a summary of its own, whose cut counts its
  // samples, not steps (nothing cut, as when it had no warm-up to count).
  const bool rss_summary = GENERATE(false, true);
  INFO("host.rss_mb with a summary of its own: " << rss_summary);
  if (rss_summary) {
    model::MetricSummary rs;
    rs.metric = "host.rss_mb";
    rs.n_total = rs.n_steady = 72;
    rs.value = rs.median = 300;
    t.summaries.push_back(rs);
    summary_ids.push_back(*rss_id);
  }
  t.status = model::TrialStatus::Ok;
  t.steps = step;
  t.wall_s = 18;
  REQUIRE(st->finish_trial(t, summary_ids));
  REQUIRE(st->finish_run(*run, model::RunStatus::Completed, 1700000018));

  auto rep = analysis::analyse_soak(*st, *run, options(1));
  REQUIRE(rep);
  REQUIRE(rep->trials.size() == 1);
  const auto& ts = rep->trials[0];
  INFO(ts.findings.size() << " finding(s); the first: " << (ts.findings.empty() ? "" : ts.findings[0].summary));
  CHECK(of_kind(ts.findings, "memory_growth").empty());
  bool saw_rss = false;
  for (const auto& m : ts.metrics)
    if (m.metric == "host.rss_mb") {
      saw_rss = true;
      CHECK(m.first_window == Approx(300).margin(1));  // the first window after the warm-up (3 s)
    }
  CHECK(saw_rss);
}
