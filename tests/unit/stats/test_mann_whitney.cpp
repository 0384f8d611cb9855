#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/stats/mann_whitney.hpp"
#include "tests/unit/support/paths.hpp"
#include "tests/unit/support/seeded_draws.hpp"

using namespace perfgate::stats;

// Reference values: tests/data/stats/mann_whitney_reference.json, written by
// tests/data/stats/gen_reference.py with SciPy 1.10 / NumPy 1.24 (Debian
// bookworm): scipy.stats.mannwhitneyu(x, y, use_continuity=True,
// alternative="two-sided", method=...) with the method named per case, and
// Hodges-Lehmann shifts (NumPy median of pairwise differences) with interval
// endpoints from an exact-integer U distribution computed in the script.

namespace {

nlohmann::json load_reference(const std::string& name) {
  std::ifstream in(perfgate::test::data_dir() + "/stats/" + name);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

std::vector<double> doubles(const nlohmann::json& j) { return j.get<std::vector<double>>(); }

using perfgate::test::std_normal;
using perfgate::test::uniform01;
std::vector<double> normal_sample(std::mt19937_64& gen, std::size_t n, double mean, double sd) {
  std::vector<double> v(n);
  for (double& a : v) a = mean + sd * std_normal(gen);
  return v;
}

}  // namespace

TEST_CASE("Mann-Whitney U and p against SciPy 1.10", "[stats]") {
  const auto ref = load_reference("mann_whitney_reference.json");
  const auto& cases = ref.at("mann_whitney");
  REQUIRE(cases.size() > 300);
  for (const auto& c : cases) {
    const auto x = doubles(c.at("x"));
    const auto y = doubles(c.at("y"));
    const std::string method = c.at("method");
    const bool ties = c.at("ties");
    INFO(c.at("name").get<std::string>() << " method=" << method);
    const auto r = mann_whitney_u(x, y, method == "exact" ? MwMethod::Exact : MwMethod::Asymptotic);
    CHECK(r.u == c.at("u").get<double>());
    CHECK(r.p_value == Approx(c.at("p").get<double>()).epsilon(1e-6));
    CHECK(r.exact == (method == "exact"));
    CHECK(r.ties == ties);
    // Auto is exact exactly when there are no ties and both sides have <= 50 values.
    if (method == "exact" && x.size() <= k_mw_exact_max_n && y.size() <= k_mw_exact_max_n) {
      const auto a = mann_whitney_u(x, y, MwMethod::Auto);
      CHECK(a.exact);
      CHECK(a.p_value == r.p_value);
    }
    if (method == "asymptotic" && ties) {
      // Exact has no tie correction; with ties it falls back to the normal approximation.
      const auto e = mann_whitney_u(x, y, MwMethod::Exact);
      CHECK_FALSE(e.exact);
      CHECK(e.p_value == r.p_value);
      CHECK(mann_whitney_u(x, y, MwMethod::Auto).p_value == r.p_value);
    }
  }
}

TEST_CASE("Mann-Whitney textbook example and statistic conventions", "[stats]") {
  // Shier 2004 (the SciPy documentation example): U_males = 17, exact p = 1/9.
  const std::vector<double> males = {19, 22, 16, 29, 24}, females = {20, 11, 17, 12};
  const auto r = mann_whitney_u(males, females, MwMethod::Exact);
  CHECK(r.u == 17);
  CHECK(r.p_value == Approx(1.0 / 9).epsilon(1e-12));
  CHECK(r.z == 0);
  // Swapping the samples gives U2 = n1 n2 - U1 and the same two-sided p.
  const auto s = mann_whitney_u(females, males, MwMethod::Exact);
  CHECK(s.u == 3);
  CHECK(s.p_value == r.p_value);
  // z is signed: positive when the first sample tends to be larger.
  const auto za = mann_whitney_u(males, females, MwMethod::Asymptotic);
  const auto zb = mann_whitney_u(females, males, MwMethod::Asymptotic);
  CHECK(za.z > 0);
  CHECK(zb.z == -za.z);
  // |z| is SciPy's (max(U1, U2) - n1 n2 / 2 - 1/2) / sd; sd^2 = 5 * 4 * 10 / 12.
  CHECK(za.z == Approx((17 - 10 - 0.5) / std::sqrt(5.0 * 4 * 10 / 12)).epsilon(1e-12));
}

TEST_CASE("Mann-Whitney degenerate inputs", "[stats]") {
  const std::vector<double> empty, one = {1.0}, other = {2.0}, a = {1, 2, 3};
  for (auto m : {MwMethod::Auto, MwMethod::Exact, MwMethod::Asymptotic}) {
    auto r = mann_whitney_u(empty, a, m);
    CHECK(r.p_value == 1);
    CHECK(r.u == 0);
    r = mann_whitney_u(a, empty, m);
    CHECK(r.p_value == 1);
    r = mann_whitney_u(empty, empty, m);
    CHECK(r.p_value == 1);
    r = mann_whitney_u(one, other, m);
    CHECK(r.p_value == 1);
    CHECK(r.u == 0);
  }
  // Every value equal: zero variance, no evidence.
  const std::vector<double> flat(8, 5.0);
  const auto r = mann_whitney_u(flat, flat);
  CHECK(r.p_value == 1);
  CHECK(r.z == 0);
  CHECK(r.u == 32);
  CHECK(r.ties);
  // NaN is the caller's to filter; it must not reach a sort.
  const std::vector<double> with_nan = {1, std::numeric_limits<double>::quiet_NaN(), 3};
  CHECK(std::isnan(mann_whitney_u(with_nan, a).p_value));
}

TEST_CASE("Mann-Whitney exact method is honoured up to 10,000 pairs, then asymptotic", "[stats]") {
  std::mt19937_64 gen(7);
  const auto x = normal_sample(gen, 100, 0, 1), y = normal_sample(gen, 100, 0.3, 1);
  const auto r = mann_whitney_u(x, y, MwMethod::Exact);
  CHECK(r.exact);
  CHECK_FALSE(mann_whitney_u(x, y, MwMethod::Auto).exact);  // Auto: n > 50
  const auto asym = mann_whitney_u(x, y, MwMethod::Asymptotic);
  CHECK(r.p_value == Approx(asym.p_value).epsilon(0.05));  // the approximation is good here
  const auto big = normal_sample(gen, 101, 0, 1);
  CHECK_FALSE(mann_whitney_u(big, y, MwMethod::Exact).exact);
}

TEST_CASE("Mann-Whitney is safe to call from several threads", "[stats]") {
  // The exact distributions are cached per size; threads race on first use.
  std::vector<std::vector<double>> p(4);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < p.size(); ++t)
    threads.emplace_back([&, t] {
      std::mt19937_64 gen(99);  // same data in every thread
      for (std::size_t n = 2; n <= 30; ++n) {
        const auto x = normal_sample(gen, n, 0, 1), y = normal_sample(gen, n + 3, 0.5, 1);
        p[t].push_back(mann_whitney_u(x, y).p_value);
      }
    });
  for (auto& th : threads) th.join();
  for (std::size_t t = 1; t < p.size(); ++t) CHECK(p[t] == p[0]);
}

TEST_CASE("Hodges-Lehmann shift and interval against NumPy and the exact U distribution", "[stats]") {
  const auto ref = load_reference("mann_whitney_reference.json");
  for (const auto& c : ref.at("hodges_lehmann")) {
    const auto x = doubles(c.at("x"));
    const auto y = doubles(c.at("y"));
    INFO(x.size() << " vs " << y.size());
    const auto r = hodges_lehmann(x, y, c.at("level").get<double>());
    CHECK(r.shift == Approx(c.at("shift").get<double>()).epsilon(1e-12).margin(1e-12));
    // Endpoints are order statistics of the same differences: exact.
    CHECK(r.low == c.at("low").get<double>());
    CHECK(r.high == c.at("high").get<double>());
    CHECK(r.coverage == Approx(c.at("coverage").get<double>()).epsilon(1e-9));
  }
}

TEST_CASE("Hodges-Lehmann textbook critical values (exact U distribution)", "[stats]") {
  // Coverage of [D_(k), D_(mn-k+1)] is 1 - 2 P(U <= k - 1). Published 95 %
  // values (Hollander & Wolfe, Nonparametric Statistical Methods, table A.6):
  // 5 vs 5: k = 3 (96.83 %); 8 vs 8: k = 14 (95.01 %); 10 vs 10: k = 24 (95.67 %).
  std::vector<double> x, y;
  struct Row {
    std::size_t n;
    std::size_t k;
    double coverage;
  };
  for (Row row : {Row{5, 3, 1 - 2 * 4.0 / 252}, Row{8, 14, 0.9501165501165502}, Row{10, 24, 0.9567429474550218}}) {
    x.clear();
    y.clear();
    // Differences y_j - x_i = 10 j - i (j, i < n <= 10) are distinct, so
    // D_(k) is easy to name: the k-th smallest of {10 j - i}.
    for (std::size_t i = 0; i < row.n; ++i) {
      x.push_back(static_cast<double>(i));
      y.push_back(10.0 * static_cast<double>(i) + 0.5);
    }
    std::vector<double> diffs;
    for (double b : y)
      for (double a : x) diffs.push_back(b - a);
    std::sort(diffs.begin(), diffs.end());
    const auto r = hodges_lehmann(x, y);
    INFO(row.n);
    CHECK(r.coverage == Approx(row.coverage).epsilon(1e-12));
    CHECK(r.low == diffs[row.k - 1]);
    CHECK(r.high == diffs[diffs.size() - row.k]);
  }
}

TEST_CASE("Hodges-Lehmann intervals reach their coverage in simulation", "[stats]") {
  // Distribution-free: the same coverage under normal and skewed noise.
  // 2,000 replications; the binomial standard error is ~0.5 %, we allow 2 %.
  std::mt19937_64 gen(20240601);
  const double true_shift = 1.5;
  auto run = [&](std::size_t n1, std::size_t n2, bool skewed) {
    int covered = 0;
    double reported = 0;
    const int reps = 2000;
    for (int i = 0; i < reps; ++i) {
      std::vector<double> x(n1), y(n2);
      for (double& v : x) v = skewed ? -std::log(uniform01(gen)) : std_normal(gen);
      for (double& v : y) v = (skewed ? -std::log(uniform01(gen)) : std_normal(gen)) + true_shift;
      const auto r = hodges_lehmann(x, y);
      covered += (r.low <= true_shift && true_shift <= r.high) ? 1 : 0;
      reported = r.coverage;
    }
    return std::pair{static_cast<double>(covered) / reps, reported};
  };
  for (bool skewed : {false, true}) {
    INFO("skewed=" << skewed);
    auto [observed, nominal] = run(10, 10, skewed);  // exact: 95.67 %
    CHECK(nominal == Approx(0.9567429474550218));
    CHECK(std::fabs(observed - nominal) < 0.02);
    std::tie(observed, nominal) = run(60, 70, skewed);  // normal approximation
    CHECK(nominal >= 0.95);
    CHECK(std::fabs(observed - nominal) < 0.02);
  }
}

TEST_CASE("Hodges-Lehmann degenerate inputs", "[stats]") {
  const std::vector<double> empty, one = {1.0}, other = {3.5};
  auto r = hodges_lehmann(empty, other);
  CHECK(r.shift == 0);
  CHECK(r.coverage == 0);
  // One value each: one difference, and no confidence at all.
  r = hodges_lehmann(one, other);
  CHECK(r.shift == 2.5);
  CHECK(r.low == 2.5);
  CHECK(r.high == 2.5);
  CHECK(r.coverage == 0);
  // 3 vs 3 cannot reach 95 %: [min, max] with its real coverage 1 - 2/20.
  const std::vector<double> a = {1, 2, 3}, b = {10, 11, 13};
  r = hodges_lehmann(a, b);
  CHECK(r.low == 7);
  CHECK(r.high == 12);
  CHECK(r.coverage == Approx(0.9));
  // Every value equal: shift 0, interval [0, 0].
  const std::vector<double> flat(6, 2.0);
  r = hodges_lehmann(flat, flat);
  CHECK(r.shift == 0);
  CHECK(r.low == 0);
  CHECK(r.high == 0);
  // Levels outside (0, 1) are clamped rather than thrown on.
  r = hodges_lehmann(a, b, 1.0);
  CHECK(r.low == 7);
  r = hodges_lehmann(a, b, -1.0);
  CHECK(r.low <= r.high);
}

TEST_CASE("bootstrap ratio of medians is seeded and sensible", "[stats]") {
  std::mt19937_64 gen(3);
  const auto x = normal_sample(gen, 12, 100, 2);
  const auto y = normal_sample(gen, 12, 110, 2);
  const auto a = bootstrap_median_ratio(x, y, 0.95, 2000, 42);
  const auto b = bootstrap_median_ratio(x, y, 0.95, 2000, 42);
  CHECK(a.ratio == b.ratio);
  CHECK(a.low == b.low);
  CHECK(a.high == b.high);
  const auto c = bootstrap_median_ratio(x, y, 0.95, 2000, 43);
  CHECK((c.low != a.low || c.high != a.high));
  CHECK(a.low < a.ratio);
  CHECK(a.ratio < a.high);
  CHECK(a.low > 1.05);  // a 10 % shift with 2 % noise
  CHECK(a.high < 1.15);
  // A wider level gives a wider interval from the same resamples.
  const auto wide = bootstrap_median_ratio(x, y, 0.99, 2000, 42);
  CHECK(wide.low <= a.low);
  CHECK(wide.high >= a.high);
}

TEST_CASE("bootstrap ratio of medians: fixed values for a fixed seed", "[stats]") {
  // The resampling uses only SplitMix64 (a fixed algorithm, pinned to its
  // reference output in test_running.cpp) and its own bounded draw, so these
  // hold on every platform (pinned from this implementation: a change to the
  // resampling scheme shows up here).
  const std::vector<double> x = {10, 11, 12, 13, 14}, y = {20, 22, 24, 26, 28, 30};
  auto r = bootstrap_median_ratio(x, y, 0.9, 1000, 1);
  CHECK(r.ratio == 25.0 / 12);
  CHECK(r.low == 21.0 / 12);  // ratios of medians of 5 and 6 values
  CHECK(r.high == 28.0 / 11);
  r = bootstrap_median_ratio(x, y, 0.9, 1000, 2);
  CHECK(r.low == 12.0 / 7);  // 24 / 14
  CHECK(r.high == 28.0 / 11);
  const std::vector<double> a = {101.2, 99.8, 100.4, 102.0, 98.9, 100.1, 99.5, 100.9, 101.7, 100.0};
  const std::vector<double> b = {104.1, 103.2, 105.0, 102.8, 104.4, 103.9, 105.6, 103.0, 104.8, 104.2};
  r = bootstrap_median_ratio(a, b, 0.95, 2000, 7);
  CHECK(r.ratio == Approx(1.0389027431421447).epsilon(1e-15));
  CHECK(r.low == Approx(1.0261114568592127).epsilon(1e-15));
  CHECK(r.high == Approx(1.0469553969553971).epsilon(1e-15));
}

TEST_CASE("bootstrap ratio of medians: degenerate inputs", "[stats]") {
  const std::vector<double> empty, x = {1, 2, 3}, zeros = {0, 0, 1}, y = {2, 4, 6};
  CHECK(std::isnan(bootstrap_median_ratio(empty, y, 0.95, 100, 1).ratio));
  CHECK(std::isnan(bootstrap_median_ratio(x, empty, 0.95, 100, 1).ratio));
  CHECK(std::isnan(bootstrap_median_ratio(zeros, y, 0.95, 100, 1).ratio));  // median(x) == 0
  const auto none = bootstrap_median_ratio(x, y, 0.95, 0, 1);
  CHECK(none.ratio == 2);
  CHECK(none.low == 2);
  CHECK(none.high == 2);
  const std::vector<double> one = {4.0}, two = {6.0};
  const auto single = bootstrap_median_ratio(one, two, 0.95, 100, 1);
  CHECK(single.ratio == 1.5);
  CHECK(single.low == 1.5);
  CHECK(single.high == 1.5);
}

TEST_CASE("Noether sample size for the Mann-Whitney test", "[stats]") {
  // n per side = (z_{1-a/2} + z_power)^2 / (6 (p - 1/2)^2), p = Phi(shift / (sd sqrt 2));
  // values from SciPy: 19.31, 68.53, 7.37, 1646.6 for shift/sd = 1, 0.5, 2, 0.1.
  CHECK(mann_whitney_trials_needed(1.0, 1.0, 0.05, 0.8) == 20);
  CHECK(mann_whitney_trials_needed(0.5, 1.0, 0.05, 0.8) == 69);
  CHECK(mann_whitney_trials_needed(-2.0, 1.0, 0.05, 0.8) == 8);  // the sign of the shift does not matter
  CHECK(mann_whitney_trials_needed(0.1, 1.0, 0.05, 0.8) == 1647);
  // A shift far beyond the noise: P(Y > X) -> 1 and n -> (z_a + z_b)^2 / 1.5 = 5.2.
  CHECK(mann_whitney_trials_needed(5.0, 0.05, 0.05, 0.8) == 6);
  CHECK(mann_whitney_trials_needed(1.0, 0.0, 0.05, 0.8) == 6);
  CHECK(mann_whitney_trials_needed(1.0, 0.0, 0.5, 0.5) == 2);  // at least 2
  CHECK(mann_whitney_trials_needed(0.0, 1.0, 0.05, 0.8) == std::numeric_limits<int>::max());
  CHECK(mann_whitney_trials_needed(1e-300, 1.0, 0.05, 0.8) == std::numeric_limits<int>::max());
  CHECK(mann_whitney_trials_needed(0.0, 0.0, 0.05, 0.8) == std::numeric_limits<int>::max());
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(mann_whitney_trials_needed(nan, 1.0, 0.05, 0.8) == std::numeric_limits<int>::max());
  CHECK(mann_whitney_trials_needed(1.0, nan, 0.05, 0.8) == std::numeric_limits<int>::max());
  CHECK(mann_whitney_trials_needed(1.0, 1.0, nan, 0.8) == std::numeric_limits<int>::max());
  // Stricter alpha or more power cost trials.
  CHECK(mann_whitney_trials_needed(1.0, 1.0, 0.01, 0.8) > 20);
  CHECK(mann_whitney_trials_needed(1.0, 1.0, 0.05, 0.9) > 20);
}
