#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include <boost/math/distributions/normal.hpp>
#include <nlohmann/json.hpp>

#include "harness/stats/pairwise_slopes.hpp"
#include "harness/stats/trend.hpp"
#include "tests/unit/support/paths.hpp"
#include "tests/unit/support/seeded_draws.hpp"

using namespace perfgate::stats;

// Reference values: tests/data/stats/trend_reference.json, written by
// tests/data/stats/gen_trend_reference.py with SciPy 1.10 / NumPy 1.24
// (Debian bookworm): scipy.stats.theilslopes(y, x, alpha=level,
// method='joint'), and Mann-Kendall S by brute force in NumPy with p from the
// tie-corrected, continuity-corrected normal approximation (cross-checked
// there against scipy.stats.kendalltau).

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

nlohmann::json load_reference(const std::string& name) {
  std::ifstream in(perfgate::test::data_dir() + "/stats/" + name);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

std::vector<double> doubles(const nlohmann::json& j) { return j.get<std::vector<double>>(); }
double number_or_nan(const nlohmann::json& j) { return j.is_null() ? k_nan : j.get<double>(); }

// Portable test data: Box-Muller over mt19937_64 (std::normal_distribution
// differs between standard libraries).
using perfgate::test::std_normal;
using perfgate::test::uniform01;

// Both NaN, equal, or within rel of want.
bool close(double got, double want, double rel = 1e-9) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want || std::fabs(got - want) <= rel * std::fabs(want);
}

// Theil-Sen the slow way: every slope, sorted, and Sen's ranks as SciPy 1.10
// computes them (the formula itself is checked against SciPy separately).
SlopeEstimate brute_theil_sen(const std::vector<double>& x, const std::vector<double>& y, double level = 0.95) {
  SlopeEstimate r;
  r.n = x.size();
  std::vector<double> s;
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = 0; j < x.size(); ++j)
      if (x[j] > x[i]) s.push_back((y[j] - y[i]) / (x[j] - x[i]));
  std::sort(s.begin(), s.end());
  const std::size_t nt = s.size();
  r.slope = (s[(nt - 1) / 2] + s[nt / 2]) / 2;
  auto tie_sum = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    std::int64_t sum = 0;
    for (std::size_t i = 0; i < v.size();) {
      std::size_t j = i;
      while (j < v.size() && v[j] == v[i]) ++j;
      const auto t = static_cast<std::int64_t>(j - i);
      sum += t * (t - 1) * (2 * t + 5);
      i = j;
    }
    return sum;
  };
  const auto n = static_cast<std::int64_t>(x.size());
  const double sigsq = (1.0 / 18.0) * static_cast<double>(n * (n - 1) * (2 * n + 5) - tie_sum(x) - tie_sum(y));
  const double alpha = level > 0.5 ? 1 - level : level;
  const double z = boost::math::quantile(boost::math::normal_distribution<double>(), alpha / 2);
  if (sigsq >= 0) {
    const double sigma = std::sqrt(sigsq), ntd = static_cast<double>(nt);
    const double ru = std::min(std::nearbyint((ntd - z * sigma) / 2), ntd - 1);
    const double rl = std::max(std::nearbyint((ntd + z * sigma) / 2) - 1, 0.0);
    r.low = s[static_cast<std::size_t>(rl)];
    r.high = s[static_cast<std::size_t>(ru)];
  } else {
    r.low = r.high = k_nan;
  }
  std::vector<double> res(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) res[i] = y[i] - r.slope * x[i];
  std::sort(res.begin(), res.end());
  r.intercept = (res[(res.size() - 1) / 2] + res[res.size() / 2]) / 2;
  return r;
}

// Bit for bit (rel = 0), or within rel where theil_sen documents that it may
// return another value of a cluster of slopes that agree to 1e-9.
void check_identical(const SlopeEstimate& got, const SlopeEstimate& want, double rel = 0) {
  auto same = [rel](double a, double b) { return a == b || std::fabs(a - b) <= rel * std::fabs(b); };
  CHECK(got.n == want.n);
  CHECK(same(got.slope, want.slope));
  CHECK(same(got.intercept, want.intercept));
  if (std::isnan(want.low)) {
    CHECK(std::isnan(got.low));
    CHECK(std::isnan(got.high));
  } else {
    CHECK(same(got.low, want.low));
    CHECK(same(got.high, want.high));
  }
}

}  // namespace

// ---- Theil-Sen ------------------------------------------------------------------------------------

TEST_CASE("Theil-Sen slope, intercept and interval against SciPy 1.10", "[stats]") {
  const auto ref = load_reference("trend_reference.json");
  const auto& cases = ref.at("theil_sen");
  REQUIRE(cases.size() > 40);
  for (const auto& c : cases) {
    const auto x = doubles(c.at("x"));
    const auto y = doubles(c.at("y"));
    const double level = c.at("level");
    INFO(c.at("name").get<std::string>() << " n=" << x.size() << " level=" << level);
    const auto r = theil_sen(x, y, level);
    CHECK(r.n == x.size());
    CHECK(close(r.slope, number_or_nan(c.at("slope"))));
    CHECK(close(r.intercept, number_or_nan(c.at("intercept"))));
    CHECK(close(r.low, number_or_nan(c.at("low"))));
    CHECK(close(r.high, number_or_nan(c.at("high"))));
  }
}

TEST_CASE("Theil-Sen exact selection equals sorting every slope", "[stats]") {
  // The fast path (randomized selection over inversions) must give the same
  // order statistics, bit for bit, as sorting all pairwise slopes, also for
  // the shapes that defeat sampling: ties in x, massive ties among slopes (at
  // 0 and elsewhere), a median next to a tie, large offsets, extreme scales.
  // Slopes that differ only by rounding (a noise-free line) may come back as
  // another member of their cluster: within 1e-9.
  std::mt19937_64 gen(20240715);
  struct Shape {
    const char* name;
    std::size_t n;
    double rel;
  };
  for (const Shape& shape :
       {Shape{"noise", 1500, 0}, Shape{"quantized", 1200, 0}, Shape{"repeated_x", 1300, 0},
        Shape{"line_0.1", 900, 1e-9}, Shape{"constant", 700, 0}, Shape{"unix_time", 1100, 0}, Shape{"two_x", 1000, 0},
        Shape{"x_and_y_ties", 1400, 0}, Shape{"outliers", 2500, 0}, Shape{"descending", 800, 0},
        Shape{"tiny_slope_huge_y", 1000, 0}, Shape{"step", 1600, 0}, Shape{"mostly_zero_slopes", 1500, 0},
        Shape{"line_plus_bit", 1000, 0}, Shape{"sawtooth", 1700, 1e-9}, Shape{"heavy_tail", 2000, 0},
        Shape{"tiny_scale", 900, 0}, Shape{"huge_scale", 900, 0}}) {
    const std::string name = shape.name;
    const std::size_t n = shape.n;
    std::vector<double> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) {
      const auto t = static_cast<double>(i);
      const double e = std_normal(gen);
      if (name == "noise") x[i] = t, y[i] = 0.3 * t + 20 * e;
      if (name == "quantized") x[i] = t, y[i] = std::round(100 + 0.001 * t + 2 * e);
      if (name == "repeated_x") x[i] = std::floor(t / 4), y[i] = std::round(10 * (1 - 0.01 * t + e)) / 10;
      if (name == "line_0.1") x[i] = t, y[i] = 0.1 * t;
      if (name == "constant") x[i] = t, y[i] = 3.25;
      if (name == "unix_time") x[i] = 1.7e9 + 0.05 * t, y[i] = 1e3 + 0.01 * t + e;
      if (name == "two_x") x[i] = static_cast<double>(i % 2), y[i] = std::round(5 * e) / 5;
      if (name == "x_and_y_ties") x[i] = std::floor(uniform01(gen) * 60), y[i] = std::floor(uniform01(gen) * 5);
      if (name == "outliers") x[i] = t * 0.5, y[i] = 50 + 0.02 * t + e + (uniform01(gen) < 0.05 ? 40 : 0);
      if (name == "descending") x[i] = -t, y[i] = 3 * t + e;
      if (name == "tiny_slope_huge_y") x[i] = t, y[i] = 1e9 + 1e-7 * t + 1e-6 * e;
      if (name == "step") x[i] = t, y[i] = i < n / 2 ? 10 : 11;  // half the slopes 0, the median just above
      if (name == "mostly_zero_slopes") x[i] = t, y[i] = uniform01(gen) < 0.9 ? 5 : 5 + std::round(e);
      if (name == "line_plus_bit") x[i] = t, y[i] = 2 * t + (uniform01(gen) < 0.5 ? 1 : 0);  // half exactly 2
      if (name == "sawtooth") x[i] = t, y[i] = static_cast<double>(i % 97) + 0.001 * t;
      if (name == "heavy_tail") x[i] = t, y[i] = 0.01 * t + std::tan(3.14159 * (uniform01(gen) - 0.5));
      if (name == "tiny_scale") x[i] = t * 1e-250, y[i] = (0.5 * t + e) * 1e-250;
      if (name == "huge_scale") x[i] = t * 1e200, y[i] = (0.5 * t + e) * 1e200;
    }
    // Shuffle: the input order must not matter.
    for (std::size_t i = n - 1; i > 0; --i) {
      const auto j = static_cast<std::size_t>(uniform01(gen) * static_cast<double>(i + 1));
      std::swap(x[i], x[j]);
      std::swap(y[i], y[j]);
    }
    for (double level : {0.95, 0.8}) {
      INFO(name << " n=" << n << " level=" << level);
      check_identical(theil_sen(x, y, level), brute_theil_sen(x, y, level), shape.rel);
    }
  }
}

TEST_CASE("Theil-Sen exact at 5,000 points equals sorting 12.5 M slopes", "[stats]") {
  std::mt19937_64 gen(5);
  std::vector<double> x(5000), y(5000);
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<double>(i) * 0.05;
    y[i] = 80 + 0.4 * x[i] + 3 * std_normal(gen) + (i % 97 == 0 ? 30 : 0);
  }
  check_identical(theil_sen(x, y, 0.95), brute_theil_sen(x, y));
}

TEST_CASE("Theil-Sen at 200k points stays within 1 % and covers the truth", "[stats]") {
  // 200,000 points have 2e10 pairs, all of them ranked exactly without
  // being materialised (a 72-hour series of 1 Hz samples).
  constexpr double truth = 2e-4;
  std::mt19937_64 gen(11);
  const std::size_t n = 200'000;
  std::vector<double> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<double>(i);                                                       // 1 Hz
    y[i] = 100 + truth * x[i] + 2 * std_normal(gen) + (uniform01(gen) < 0.01 ? 50 : 0);  // noise and stalls
  }
  const auto r = theil_sen(x, y);
  INFO("slope " << r.slope << " [" << r.low << ", " << r.high << "]");
  CHECK(r.n == n);
  CHECK(std::fabs(r.slope - truth) < 0.01 * truth);
  CHECK(r.low <= truth);
  CHECK(truth <= r.high);
  CHECK(r.low < r.slope);
  CHECK(r.slope < r.high);
  CHECK(std::fabs(r.intercept - 100) < 0.1);
  // Deterministic: the selection's samples do not change between calls.
  const auto again = theil_sen(x, y);
  CHECK(again.slope == r.slope);
  CHECK(again.low == r.low);
  CHECK(again.high == r.high);
}

TEST_CASE("Theil-Sen beyond 2^25 slopes with no usable rounding bound reads a stratified subsample", "[stats]") {
  // The exact selection needs a lower bound on the gap between distinct x to
  // bound rounding; a gap of one subnormal (x = 0 and x = 4.9e-324) makes
  // that bound infinite. Past 2^25 pairs (256 MB of slopes) the answer then
  // comes from 2^23 stratified pairs rather than from every slope: inexact,
  // but bounded in memory. 8,200 points: 33,615,900 pairs.
  constexpr double truth = 0.5;
  std::mt19937_64 gen(8200);
  const std::size_t n = 8200;
  std::vector<double> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<double>(i);
    y[i] = 1e4 + truth * x[i] + 40 * std_normal(gen);
  }
  x[1] = std::numeric_limits<double>::denorm_min();
  y[1] = y[0];  // that pair's slope is 0, finite
  // The same points without the two a subnormal apart: every slope ranked exactly.
  const std::vector<double> x_exact(x.begin() + 2, x.end()), y_exact(y.begin() + 2, y.end());
  CHECK_FALSE(PairwiseSlopes(x, y).selects_exactly());
  CHECK(PairwiseSlopes(x_exact, y_exact).selects_exactly());
  const auto sub = theil_sen(x, y);
  const auto exact = theil_sen(x_exact, y_exact);
  INFO("subsample " << sub.slope << " [" << sub.low << ", " << sub.high << "], exact " << exact.slope << " ["
                    << exact.low << ", " << exact.high << "]");
  CHECK(sub.n == n);
  CHECK(std::isfinite(sub.slope));
  // 2^23 samples place a quantile within about 0.0002 (in probability) of
  // its rank; measured, the three answers lie within 0.03 of the interval's
  // half-width (0.00037) of the exact ones: a quarter leaves room.
  const double half_width = (exact.high - exact.low) / 2;
  CHECK(half_width > 0);
  CHECK(std::fabs(sub.slope - exact.slope) < 0.25 * half_width);
  CHECK(std::fabs(sub.low - exact.low) < 0.25 * half_width);
  CHECK(std::fabs(sub.high - exact.high) < 0.25 * half_width);
  CHECK(sub.low <= truth);
  CHECK(truth <= sub.high);
  // Seeded: the same subsample, so the same answer, on every call.
  const auto again = theil_sen(x, y);
  CHECK(again.slope == sub.slope);
  CHECK(again.low == sub.low);
  CHECK(again.high == sub.high);
}

TEST_CASE("Theil-Sen degenerate inputs", "[stats]") {
  const std::vector<double> empty, one = {1.0}, two = {1.0, 2.0}, three = {1.0, 2.0, 3.0};
  auto all_nan = [](const SlopeEstimate& r) {
    return std::isnan(r.slope) && std::isnan(r.intercept) && std::isnan(r.low) && std::isnan(r.high);
  };
  auto r = theil_sen(empty, empty);
  CHECK(r.n == 0);
  CHECK(all_nan(r));
  r = theil_sen(one, one);
  CHECK(r.n == 1);
  CHECK(all_nan(r));
  r = theil_sen(two, three);  // lengths differ: no pairing
  CHECK(r.n == 0);
  CHECK(all_nan(r));
  // Every x equal: no slope.
  const std::vector<double> same_x(700, 4.0);
  std::vector<double> varied(700);
  for (std::size_t i = 0; i < varied.size(); ++i) varied[i] = static_cast<double>(i % 13);
  r = theil_sen(same_x, varied);
  CHECK(r.n == 700);
  CHECK(all_nan(r));
  // Constant y: slope 0, interval [0, 0], intercept the constant.
  std::vector<double> t(700), flat(700, 2.5);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<double>(i);
  r = theil_sen(t, flat);
  CHECK(r.slope == 0);
  CHECK(r.low == 0);
  CHECK(r.high == 0);
  CHECK(r.intercept == 2.5);
  // Two points: one slope, which is also its own interval.
  r = theil_sen(std::vector<double>{0, 2}, std::vector<double>{1, 5});
  CHECK(r.slope == 2);
  CHECK(r.intercept == 1);
  CHECK(r.low == 2);
  CHECK(r.high == 2);
  // NaN and infinity are the caller's to remove; they give NaN, not a crash.
  const std::vector<double> with_nan = {1, k_nan, 3}, with_inf = {1, std::numeric_limits<double>::infinity(), 3};
  CHECK(all_nan(theil_sen(three, with_nan)));
  CHECK(all_nan(theil_sen(with_inf, three)));
  // Levels: SciPy reads 0.05 as 0.95; 0, 1 and NaN stay defined.
  std::mt19937_64 gen(1);
  std::vector<double> noisy(300);
  for (std::size_t i = 0; i < noisy.size(); ++i) noisy[i] = 0.1 * static_cast<double>(i) + std_normal(gen);
  const std::vector<double> tt(t.begin(), t.begin() + 300);
  const auto a = theil_sen(tt, noisy, 0.95), b = theil_sen(tt, noisy, 0.05);
  CHECK(a.low == b.low);
  CHECK(a.high == b.high);
  for (double level : {0.0, 1.0, k_nan, -3.0, 7.0}) {
    INFO("level " << level);
    const auto e = theil_sen(tt, noisy, level);
    CHECK(e.slope == a.slope);
    CHECK(e.low <= e.slope);
    CHECK(e.slope <= e.high);
  }
  const auto full = theil_sen(tt, noisy, 1.0);  // every slope: the interval is the range
  CHECK(full.low < a.low);
  CHECK(full.high > a.high);
}

// ---- Mann-Kendall ---------------------------------------------------------------------------------

TEST_CASE("Mann-Kendall S, z, p and tau against NumPy / SciPy", "[stats]") {
  const auto ref = load_reference("trend_reference.json");
  const auto& cases = ref.at("mann_kendall");
  REQUIRE(cases.size() > 20);
  for (const auto& c : cases) {
    const auto y = doubles(c.at("y"));
    INFO(c.at("name").get<std::string>() << " n=" << y.size());
    const auto r = mann_kendall(y);
    CHECK(r.s == c.at("s").get<double>());
    CHECK(r.z == Approx(c.at("z").get<double>()).epsilon(1e-12).margin(1e-300));
    CHECK(close(r.p_value, c.at("p").get<double>(), 1e-9));
    CHECK(r.tau == Approx(c.at("tau").get<double>()).epsilon(1e-12).margin(1e-15));
  }
}

TEST_CASE("Mann-Kendall S by merge sort equals the brute-force count", "[stats]") {
  std::mt19937_64 gen(42);
  for (std::size_t n : {2, 3, 31, 32, 33, 64, 65, 500, 3001}) {
    for (int levels : {0, 3, 50}) {  // 0: continuous values
      std::vector<double> y(n);
      for (std::size_t i = 0; i < n; ++i)
        y[i] = levels == 0 ? std_normal(gen) + 0.001 * static_cast<double>(i) : std::floor(uniform01(gen) * levels);
      double s = 0;
      for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = i + 1; j < n; ++j) s += (y[j] > y[i]) - (y[j] < y[i]);
      INFO("n=" << n << " levels=" << levels);
      CHECK(mann_kendall(y).s == s);
    }
  }
  // 100,000 points: S of a strictly increasing series is every pair.
  std::vector<double> up(100'000);
  for (std::size_t i = 0; i < up.size(); ++i) up[i] = static_cast<double>(i);
  const auto r = mann_kendall(up);
  CHECK(r.s == 100'000.0 * 99'999 / 2);
  CHECK(r.tau == 1);
  CHECK(r.p_value == 0);
  std::reverse(up.begin(), up.end());
  CHECK(mann_kendall(up).s == -100'000.0 * 99'999 / 2);
}

TEST_CASE("Mann-Kendall degenerate inputs", "[stats]") {
  const std::vector<double> empty, one = {1.0}, flat(20, 3.0);
  for (const auto* v : {&empty, &one, &flat}) {
    const auto r = mann_kendall(*v);
    CHECK(r.s == 0);
    CHECK(r.z == 0);
    CHECK(r.p_value == 1);
    CHECK(r.tau == 0);
  }
  const std::vector<double> with_nan = {1, 2, k_nan, 4};
  const auto r = mann_kendall(with_nan);
  CHECK(std::isnan(r.p_value));
  CHECK(std::isnan(r.s));
  // Infinities are ordered values, not errors.
  const double inf = std::numeric_limits<double>::infinity();
  const auto s = mann_kendall(std::vector<double>{-inf, 1, 2, inf, inf});
  CHECK(s.s == 9);  // 10 pairs, one tied
}
