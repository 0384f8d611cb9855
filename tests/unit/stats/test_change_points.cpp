#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numbers>
#include <random>
#include <utility>
#include <vector>

#include "harness/stats/change_points.hpp"
#include "tests/unit/support/seeded_draws.hpp"

using namespace perfgate::stats;

namespace {

// Portable test data: Box-Muller over mt19937_64.
using perfgate::test::std_normal;
using perfgate::test::uniform01;

struct Step {
  std::size_t index;     // first point at the new level
  double relative_size;  // relative to the base level
};

// A history around `base` with relative noise `noise` and level steps.
std::vector<double> series(std::size_t n, std::uint64_t seed, const std::vector<Step>& steps, double noise = 0.01,
                           double base = 1000) {
  std::mt19937_64 gen(seed);
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    double level = 1;
    for (const Step& s : steps)
      if (i >= s.index) level += s.relative_size;
    v[i] = base * (level + noise * std_normal(gen));
  }
  return v;
}

// Q(m) of Matteson & James with alpha = 1 and the segment end fixed, the
// O(n^2)-per-split way, for checking the O(n log n) pass.
double naive_q(const std::vector<double>& x, std::size_t m) {
  const std::size_t n = x.size();
  double between = 0, left = 0, right = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      const double d = std::fabs(x[i] - x[j]);
      if (j < m)
        left += d;
      else if (i >= m)
        right += d;
      else
        between += d;
    }
  const auto a = static_cast<double>(m), b = static_cast<double>(n - m);
  const double e = 2 * between / (a * b) - 2 * left / (a * (a - 1)) - 2 * right / (b * (b - 1));
  return a * b / (a + b) * e;
}

}  // namespace

TEST_CASE("e_divisive finds a 5% step at index 200 of 365 with 1% noise", "[stats]") {
  for (std::uint64_t seed : {1u, 2u, 3u, 4u, 5u}) {
    INFO("data seed " << seed);
    const auto x = series(365, seed, {{200, 0.05}});
    ChangePointOptions opt;
    opt.seed = seed;
    const auto cps = e_divisive(x, opt);
    REQUIRE(cps.size() == 1);
    CHECK(std::abs(static_cast<long>(cps[0].index) - 200) <= 2);
    CHECK(cps[0].p_value <= opt.significance);
    CHECK(cps[0].p_value == Approx(1.0 / 200));  // no permutation reached the observed statistic
    CHECK(cps[0].before_median == Approx(1000).epsilon(0.005));
    CHECK(cps[0].after_median == Approx(1050).epsilon(0.005));
    CHECK(cps[0].relative_change == Approx(0.05).margin(0.005));
  }
}

TEST_CASE("e_divisive finds a regression and a later recovery", "[stats]") {
  for (std::uint64_t seed : {11u, 12u, 13u}) {
    INFO("data seed " << seed);
    const auto x = series(365, seed, {{120, -0.05}, {250, 0.08}});
    const auto cps = e_divisive(x);
    REQUIRE(cps.size() == 2);
    CHECK(std::abs(static_cast<long>(cps[0].index) - 120) <= 2);
    CHECK(std::abs(static_cast<long>(cps[1].index) - 250) <= 2);
    // Medians are per segment between change points.
    CHECK(cps[0].before_median == Approx(1000).epsilon(0.005));
    CHECK(cps[0].after_median == Approx(950).epsilon(0.005));
    CHECK(cps[1].before_median == cps[0].after_median);
    CHECK(cps[1].after_median == Approx(1030).epsilon(0.005));
    CHECK(cps[0].relative_change < 0);
    CHECK(cps[1].relative_change > 0);
  }
}

TEST_CASE("e_divisive: max_change_points keeps the most pronounced change", "[stats]") {
  const auto x = series(365, 21, {{100, 0.03}, {260, 0.15}});
  ChangePointOptions opt;
  opt.max_change_points = 1;
  const auto cps = e_divisive(x, opt);
  REQUIRE(cps.size() == 1);
  CHECK(std::abs(static_cast<long>(cps[0].index) - 260) <= 2);
  opt.max_change_points = 0;
  CHECK(e_divisive(x, opt).empty());
}

TEST_CASE("e_divisive finds nothing in flat noisy series", "[stats]") {
  for (std::uint64_t seed = 100; seed < 110; ++seed) {
    INFO("data seed " << seed);
    const auto x = series(365, seed, {});
    ChangePointOptions opt;
    opt.seed = seed;
    CHECK(e_divisive(x, opt).empty());
  }
}

TEST_CASE("e_divisive false-positive rate on flat series is near the significance", "[stats]") {
  // 300 null series at significance 0.01: about 3 expected to show a change;
  // P(Binomial(300, 0.01) >= 10) < 0.001.
  int flagged = 0;
  for (std::uint64_t seed = 1000; seed < 1300; ++seed) {
    const auto x = series(120, seed, {}, 0.02);
    ChangePointOptions opt;
    opt.seed = seed;
    flagged += e_divisive(x, opt).empty() ? 0 : 1;
  }
  CHECK(flagged < 10);
}

TEST_CASE("e_divisive is reproducible for a seed", "[stats]") {
  const auto x = series(200, 31, {{70, 0.02}, {140, -0.02}}, 0.015);
  ChangePointOptions opt;
  opt.seed = 12345;
  opt.significance = 0.05;
  const auto a = e_divisive(x, opt);
  const auto b = e_divisive(x, opt);
  REQUIRE(a.size() == b.size());
  REQUIRE_FALSE(a.empty());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].index == b[i].index);
    CHECK(a[i].p_value == b[i].p_value);
    CHECK(a[i].before_median == b[i].before_median);
    CHECK(a[i].after_median == b[i].after_median);
  }
}

TEST_CASE("e_divisive candidate equals the naive argmax of Q", "[stats]") {
  // significance 1 accepts the root candidate whatever its p-value, so the
  // first change point is the argmax of Q over the whole series.
  ChangePointOptions opt;
  opt.significance = 1;
  opt.permutations = 1;
  opt.max_change_points = 1;
  for (std::uint64_t seed = 200; seed < 220; ++seed) {
    INFO("data seed " << seed);
    // Mix of flat, stepped, and large-offset series (centring must keep precision).
    const double base = seed % 3 == 0 ? 1e9 : 10.0;
    std::vector<Step> steps;
    if (seed % 2 == 0) steps.push_back({20 + seed % 30, 0.3e-6 * (seed % 3 == 0 ? 1 : 1e5)});
    const auto x = series(60 + seed % 7, seed, steps, seed % 3 == 0 ? 1e-8 : 0.05, base);
    std::size_t best_m = 0;
    double best_q = -std::numeric_limits<double>::infinity();
    for (std::size_t m = 4; m <= x.size() - 4; ++m) {
      const double q = naive_q(x, m);
      if (q > best_q) {
        best_q = q;
        best_m = m;
      }
    }
    const auto cps = e_divisive(x, opt);
    if (best_q <= 0) {
      CHECK(cps.empty());
      continue;
    }
    REQUIRE(cps.size() == 1);
    CHECK(cps[0].index == best_m);
  }
}

TEST_CASE("e_divisive finds a step near the start", "[stats]") {
  const auto x = series(100, 41, {{8, 0.2}});
  const auto cps = e_divisive(x);
  REQUIRE(cps.size() == 1);
  CHECK(std::abs(static_cast<long>(cps[0].index) - 8) <= 1);
}

TEST_CASE("e_divisive degenerate inputs", "[stats]") {
  const std::vector<double> empty;
  CHECK(e_divisive(empty).empty());
  const std::vector<double> short_series = {1, 2, 3, 10, 11, 12, 13};  // < 2 * min_segment
  CHECK(e_divisive(short_series).empty());
  const std::vector<double> constant(365, 42.0);
  CHECK(e_divisive(constant).empty());
  auto with_nan = series(100, 1, {{50, 0.1}});
  with_nan[10] = std::numeric_limits<double>::quiet_NaN();
  CHECK(e_divisive(with_nan).empty());
  with_nan[10] = std::numeric_limits<double>::infinity();
  CHECK(e_divisive(with_nan).empty());

  const auto stepped = series(100, 2, {{50, 0.1}});
  ChangePointOptions opt;
  opt.permutations = 0;  // nothing can be significant
  CHECK(e_divisive(stepped, opt).empty());
  opt = {};
  opt.min_segment = 0;  // acts as 2
  const auto cps = e_divisive(stepped, opt);
  REQUIRE_FALSE(cps.empty());
  CHECK(std::abs(static_cast<long>(cps.front().index) - 50) <= 2);

  // A step from 0: the relative change is undefined.
  std::vector<double> from_zero(40, 0.0);
  for (std::size_t i = 20; i < 40; ++i) from_zero[i] = 5.0 + 0.01 * static_cast<double>(i % 3);
  const auto z = e_divisive(from_zero);
  REQUIRE(z.size() == 1);
  CHECK(z[0].index == 20);
  CHECK(z[0].before_median == 0);
  CHECK(std::isnan(z[0].relative_change));

  // Ties everywhere: two plateaus of repeated values.
  std::vector<double> plateaus(30, 1.0);
  for (std::size_t i = 15; i < 30; ++i) plateaus[i] = 2.0;
  const auto t = e_divisive(plateaus);
  REQUIRE(t.size() == 1);
  CHECK(t[0].index == 15);
}
