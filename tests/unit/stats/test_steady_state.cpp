#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "harness/stats/steady_state.hpp"
#include "harness/stats/step_series.hpp"

using namespace perfgate::stats;

namespace {

std::vector<double> noisy_level(double level, double sd, int n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> d(level, sd);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(d(rng));
  return v;
}

}  // namespace

TEST_CASE("a flat series is flat from its first step", "[stats]") {
  auto s = classify_steady_state(noisy_level(10, 0.1, 200, 1));
  CHECK(s.kind == SeriesClass::Flat);
  CHECK(s.steady_start == 0);
  CHECK(s.compile_steps == 0);
  CHECK(s.steady_median == Approx(10).epsilon(0.005));
}

TEST_CASE("a compile step 50x the steady level is cut and counted", "[stats]") {
  auto x = noisy_level(20, 0.2, 100, 2);
  x[0] = 1000;  // graph mode: the first step compiles
  x[1] = 400;
  auto s = classify_steady_state(x);
  CHECK(s.compile_steps == 2);
  CHECK(s.kind == SeriesClass::Flat);
  CHECK(s.steady_start == 2);
  CHECK(s.steady_median == Approx(20).epsilon(0.005));
}

TEST_CASE("a step warm-up: steady where the trailing level starts", "[stats]") {
  auto x = noisy_level(10, 0.1, 150, 3);
  for (int i = 0; i < 30; ++i) x[static_cast<std::size_t>(i)] += 1.5;  // 15 sigma slower for 30 steps
  auto s = classify_steady_state(x);
  CHECK(s.kind == SeriesClass::Warmup);
  CHECK(s.steady_start >= 28);
  CHECK(s.steady_start <= 32);
  CHECK(s.steady_median == Approx(10).epsilon(0.005));
}

TEST_CASE("a series that got slower and stayed slower is a slowdown", "[stats]") {
  auto x = noisy_level(10, 0.1, 150, 4);
  for (std::size_t i = 50; i < x.size(); ++i) x[i] += 2;
  auto s = classify_steady_state(x);
  CHECK(s.kind == SeriesClass::Slowdown);
  CHECK(s.steady_start >= 48);
  CHECK(s.steady_start <= 52);
}

TEST_CASE("a level reached only at the very end is no steady state", "[stats]") {
  auto x = noisy_level(10, 0.1, 100, 5);
  for (std::size_t i = 0; i < 90; ++i) x[i] += 3;  // the last 10 steps alone are the final level
  auto s = classify_steady_state(x);
  CHECK(s.kind == SeriesClass::NoSteadyState);
}

TEST_CASE("isolated spikes do not make a flat series change", "[stats]") {
  auto x = noisy_level(10, 0.1, 300, 6);
  for (std::size_t i = 7; i < x.size(); i += 37) x[i] *= 4;  // a GC pause or checkpoint write every 37 steps
  auto s = classify_steady_state(x);
  CHECK(s.kind == SeriesClass::Flat);
  CHECK(s.steady_start == 0);
  CHECK(s.change_points == 0);
}

TEST_CASE("autocorrelated noise is not a run of level shifts", "[stats]") {
  // AR(1) with phi 0.7: slow wanders a short-term noise estimate would call changes.
  std::mt19937_64 rng(7);
  std::normal_distribution<double> e(0, 0.1 * std::sqrt(1 - 0.49));
  std::vector<double> x;
  double ar = 0;
  for (int i = 0; i < 400; ++i) {
    ar = 0.7 * ar + e(rng);
    x.push_back(10 + ar);
  }
  auto s = classify_steady_state(x);
  CHECK(s.kind == SeriesClass::Flat);
  CHECK(s.steady_median == Approx(10).epsilon(0.005));
  // The same series with a 10-sigma warm-up over 40 steps in front is still found.
  for (std::size_t i = 0; i < 40; ++i) x[i] += 1.0;
  auto w = classify_steady_state(x);
  CHECK(w.kind == SeriesClass::Warmup);
  CHECK(w.steady_start >= 35);
  CHECK(w.steady_start <= 45);
}

TEST_CASE("StepSeries: fixed warm-up steps per metric, seconds, and auto with a cut from the trial", "[stats]") {
  StepSeries steps(WarmupRule{WarmupRule::Kind::Steps, 3});
  for (int i = 0; i < 10; ++i) steps.add(i, i < 3 ? 100.0 : 10.0);
  auto a = steps.finish();
  CHECK(a.n_total == 10);
  CHECK(a.n_steady == 7);
  CHECK(a.median == 10);
  CHECK(a.first_value == 100);

  StepSeries secs(WarmupRule{WarmupRule::Kind::Seconds, 2.5});
  for (int i = 0; i < 10; ++i) secs.add(i, i);
  CHECK(secs.finish().n_steady == 7);  // t = 3 .. 9

  // Auto: the series classifies itself at finish...
  StepSeries own(WarmupRule{WarmupRule::Kind::Auto, 0});
  auto x = noisy_level(20, 0.2, 100, 6);
  x[0] = 900;
  for (std::size_t i = 0; i < x.size(); ++i) own.add(static_cast<double>(i), x[i]);
  auto b = own.finish();
  REQUIRE(b.steady_state);
  CHECK(b.steady_state->compile_steps == 1);
  CHECK(b.n_steady == 99);
  CHECK(b.median == Approx(20).epsilon(0.01));

  // ...or takes the trial's cut (its step times') when it defers.
  StepSeries deferred(WarmupRule{WarmupRule::Kind::Auto, 0});
  deferred.defer_to_trial();
  for (int i = 0; i < 50; ++i) deferred.add(i, 1.0 * i);
  SteadyState state;
  state.kind = SeriesClass::Warmup;
  state.steady_start = 20;
  deferred.resolve(20, state);
  CHECK(deferred.resolved());
  deferred.add(50, 50.0);
  auto c = deferred.finish();
  CHECK(c.n_steady == 31);
  CHECK(c.min == 20);
  REQUIRE(c.steady_state);
  CHECK(c.steady_state->kind == SeriesClass::Warmup);
}

TEST_CASE("StepSeries keeps exact moments and a reservoir past its bound", "[stats]") {
  StepSeries s(WarmupRule{});
  const std::size_t n = StepSeries::k_max_kept + 5000;
  for (std::size_t i = 0; i < n; ++i) s.add(static_cast<double>(i), static_cast<double>(i % 100));
  auto r = s.finish();
  CHECK(r.n_steady == static_cast<long long>(n));
  CHECK(r.sampled);
  CHECK(r.min == 0);
  CHECK(r.max == 99);
  CHECK(r.mean == Approx(49.5).epsilon(1e-3));
  CHECK(r.median == Approx(49.5).margin(2));
}
