#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "harness/stats/descriptive.hpp"

using namespace perfgate::stats;

// Reference values from NumPy 1.24 / SciPy 1.10 (Debian bookworm):
//   x = [12.5, 3.1, 7.7, 9.0, 1.2, 15.8, 4.4, 6.6, 10.1, 2.9]
//   np.mean(x) = 7.33, np.std(x, ddof=1) = 4.6341845740827665
//   np.quantile(x, p) (type 7) for p in 0, .1, .25, .5, .75, .9, .99, 1
//   scipy.stats.binom.cdf(k - 1, n, 0.5) for the median intervals.

namespace {
const std::vector<double> k_x = {12.5, 3.1, 7.7, 9.0, 1.2, 15.8, 4.4, 6.6, 10.1, 2.9};
}

TEST_CASE("mean, stddev and cv against NumPy", "[stats]") {
  CHECK(mean(k_x) == Approx(7.33).epsilon(1e-12));
  CHECK(stddev(k_x) == Approx(4.6341845740827665).epsilon(1e-12));
  CHECK(cv(k_x) == Approx(0.6322216335720009).epsilon(1e-12));
}

TEST_CASE("mean and stddev stay accurate with a large offset", "[stats]") {
  // 1e9 + {1, 2, 3, 4}: naive sums of squares lose every digit here.
  std::vector<double> x = {1e9 + 1, 1e9 + 2, 1e9 + 3, 1e9 + 4};
  CHECK(mean(x) == Approx(1e9 + 2.5).epsilon(1e-15));
  CHECK(stddev(x) == Approx(1.2909944487358056).epsilon(1e-9));
  // Kahan summation: 1 + many tiny values.
  std::vector<double> y(1'000'001, 1e-10);
  y[0] = 1.0;
  CHECK(mean(y) == Approx((1.0 + 1e6 * 1e-10) / 1'000'001).epsilon(1e-12));
}

TEST_CASE("degenerate inputs of mean, stddev and cv", "[stats]") {
  std::vector<double> empty;
  std::vector<double> one = {3.5};
  std::vector<double> flat = {2, 2, 2, 2};
  std::vector<double> zero_mean = {-1, 1};
  CHECK(mean(empty) == 0);
  CHECK(mean(one) == 3.5);
  CHECK(stddev(empty) == 0);
  CHECK(stddev(one) == 0);
  CHECK(stddev(flat) == 0);
  CHECK(cv(empty) == 0);
  CHECK(cv(one) == 0);
  CHECK(cv(flat) == 0);
  CHECK(cv(zero_mean) == 0);
  // cv uses |mean|.
  std::vector<double> neg = {-2, -4};
  CHECK(cv(neg) == Approx(stddev(neg) / 3.0));
}

TEST_CASE("quantile is type 7, as NumPy's default", "[stats]") {
  struct Row {
    double p, q;
  };
  const Row rows[] = {{0.0, 1.2},
                      {0.1, 2.73},
                      {0.25, 3.4250000000000003},
                      {0.5, 7.15},
                      {0.75, 9.825},
                      {0.9, 12.829999999999998},
                      {0.99, 15.503000000000002},
                      {1.0, 15.8}};
  for (const auto& r : rows) {
    INFO("p = " << r.p);
    CHECK(quantile(k_x, r.p) == Approx(r.q).epsilon(1e-12));
  }
  CHECK(median(k_x) == Approx(7.15));
  auto sorted = k_x;
  std::sort(sorted.begin(), sorted.end());
  CHECK(quantile_sorted(sorted, 0.9) == Approx(12.83));
  // The input is not reordered.
  CHECK(k_x[0] == 12.5);
}

TEST_CASE("quantile of degenerate inputs", "[stats]") {
  std::vector<double> empty;
  std::vector<double> one = {4.0};
  std::vector<double> two = {1.0, 3.0};
  CHECK(quantile(empty, 0.5) == 0);
  CHECK(median(empty) == 0);
  CHECK(quantile(one, 0.0) == 4.0);
  CHECK(quantile(one, 0.99) == 4.0);
  CHECK(median(two) == 2.0);
  // p outside [0, 1] is clamped.
  CHECK(quantile(two, -1) == 1.0);
  CHECK(quantile(two, 2) == 3.0);
  std::vector<double> odd = {5, 1, 3};
  CHECK(median(odd) == 3);
}

TEST_CASE("median_ci for n = 5 is [min, max] with coverage 0.9375", "[stats]") {
  std::vector<double> x = {5.0, 1.0, 4.0, 2.0, 3.0};
  auto ci = median_ci(x);
  CHECK(ci.low == 1.0);
  CHECK(ci.high == 5.0);
  CHECK(ci.coverage == Approx(0.9375).epsilon(1e-12));  // 1 - 2 / 2^5
}

TEST_CASE("median_ci for n = 10 against scipy.stats.binom", "[stats]") {
  // k = 2: coverage 1 - 2 * binom.cdf(1, 10, .5) = 0.978515625; k = 3 gives 0.890625 < 0.95.
  auto ci = median_ci(k_x);
  CHECK(ci.low == 2.9);    // x_(2)
  CHECK(ci.high == 12.5);  // x_(9)
  CHECK(ci.coverage == Approx(0.978515625).epsilon(1e-12));
}

TEST_CASE("median_ci for n = 20 against scipy.stats.binom", "[stats]") {
  std::vector<double> x;
  for (int i = 20; i >= 1; --i) x.push_back(1.5 * i);  // descending on purpose
  // k = 6: coverage 1 - 2 * binom.cdf(5, 20, .5) = 0.9586105346679688.
  auto ci = median_ci(x);
  CHECK(ci.low == 9.0);    // x_(6)
  CHECK(ci.high == 22.5);  // x_(15)
  CHECK(ci.coverage == Approx(0.9586105346679688).epsilon(1e-12));
  CHECK(ci.low <= median(x));
  CHECK(ci.high >= median(x));

  SECTION("other levels") {
    auto c90 = median_ci(x, 0.90);  // still k = 6 (k = 7 gives 0.8847)
    CHECK(c90.low == 9.0);
    CHECK(c90.coverage == Approx(0.9586105346679688).epsilon(1e-12));
    auto c99 = median_ci(x, 0.99);  // k = 4: 0.9974231719970703
    CHECK(c99.low == 6.0);
    CHECK(c99.high == 25.5);
    CHECK(c99.coverage == Approx(0.9974231719970703).epsilon(1e-12));
  }
}

TEST_CASE("median_ci of degenerate inputs", "[stats]") {
  std::vector<double> empty;
  auto e = median_ci(empty);
  CHECK(e.low == 0);
  CHECK(e.high == 0);
  CHECK(e.coverage == 0);
  std::vector<double> one = {7.0};
  auto o = median_ci(one);
  CHECK(o.low == 7.0);
  CHECK(o.high == 7.0);
  CHECK(o.coverage == 0);
  std::vector<double> two = {3.0, 1.0};
  auto t = median_ci(two);
  CHECK(t.low == 1.0);
  CHECK(t.high == 3.0);
  CHECK(t.coverage == Approx(0.5));  // 1 - 2 * 1/4
  std::vector<double> flat(12, 2.0);
  auto f = median_ci(flat);
  CHECK(f.low == 2.0);
  CHECK(f.high == 2.0);
}

TEST_CASE("harmonic_mean is total work over total time for per-step rates", "[stats]") {
  using perfgate::stats::harmonic_mean;
  const std::vector<double> rates = {100, 100, 100, 100, 600};
  CHECK(harmonic_mean(rates) == Approx(120));  // scipy.stats.hmean([100]*4 + [600]) == 120
  CHECK(harmonic_mean(std::vector<double>{}) == 0);
  CHECK(harmonic_mean(std::vector<double>{2, 0, 4}) == Approx(2));  // not all positive: arithmetic mean
}

TEST_CASE("scaled_mad against scipy.stats.median_abs_deviation(scale='normal')", "[stats]") {
  const std::vector<double> x = {12.5, 3.1, 7.7, 9.0, 1.2, 15.8, 4.4, 6.6, 10.1, 2.9};
  CHECK(scaled_mad(x) == Approx(5.189107764769607).epsilon(1e-12));
  CHECK(scaled_mad(std::vector<double>{}) == 0);
  CHECK(scaled_mad(std::vector<double>{4, 4, 4}) == 0);
}

TEST_CASE("rare_outliers finds gross outliers only when they are rare", "[stats]") {
  // Twelve values about 100 +- 1 and one at 75: 25 standard deviations away.
  std::vector<double> x = {100.2, 99.1, 100.9, 99.8, 100.4, 98.9, 101.1, 100.0, 99.5, 100.7, 99.9, 100.3, 75};
  CHECK(rare_outliers(x, 5, 0.2) == std::vector<std::size_t>{12});
  // The fence is in MADs (here 0.74 each, so 75 is some 34 away).
  CHECK(scaled_mad(x) == Approx(0.741301109252801).epsilon(1e-12));
  CHECK(rare_outliers(x, 40, 0.2).empty());
  // Three of thirteen are more than a fifth: a mode, not hiccups.
  x[0] = 76;
  x[1] = 74;
  CHECK(rare_outliers(x, 5, 0.2).empty());
  CHECK(rare_outliers(x, 5, 0.25) == std::vector<std::size_t>{0, 1, 12});
  // Too few values for a MAD, a zero MAD, and a fence of 0 find nothing.
  CHECK(rare_outliers(std::vector<double>{1, 1.1, 0.9, 1, 50, 1.05, 0.95}, 5, 0.2).empty());
  CHECK(rare_outliers(std::vector<double>{3, 3, 3, 3, 3, 3, 3, 3, 9}, 5, 0.2).empty());
  CHECK(rare_outliers(std::vector<double>{100.2, 99.1, 100.9, 99.8, 100.4, 98.9, 101.1, 75}, 0, 0.2).empty());
}

TEST_CASE("rare_outliers also wants a minimum distance when asked", "[stats]") {
  // 103 is many MADs from a tight 100 but only 3 away: with a minimum
  // distance of 5 it stays, 75 (25 away) still goes.
  const std::vector<double> x = {100.02, 99.99, 100.01, 100.0, 99.98, 100.03, 99.97, 100.0, 103, 75};
  CHECK(rare_outliers(x, 5, 0.2) == std::vector<std::size_t>{8, 9});
  CHECK(rare_outliers(x, 5, 0.2, 5) == std::vector<std::size_t>{9});
}

TEST_CASE("pooled variance: the within-group mean square of a one-way ANOVA", "[stats]") {
  // R: y <- c(1, 2, 3, 4, 6, 10); g <- factor(c(1, 1, 1, 2, 2, 3))
  //    fit <- aov(y ~ g); deviance(fit) = 4, df.residual(fit) = 3
  PooledVariance p;
  const std::vector<double> a = {1, 2, 3}, b = {4, 6}, c = {10};
  p.add(a);
  p.add(b);
  p.add(c);  // a single value: no deviation, no degree of freedom
  CHECK(p.sum_sq == Approx(4.0));
  CHECK(p.df == 3);
  CHECK(p.variance() == Approx(4.0 / 3.0));
  // One group: its sample variance. None: 0.
  PooledVariance one;
  one.add(a);
  CHECK(one.variance() == Approx(1.0));
  CHECK(PooledVariance{}.variance() == 0);
  // Groups far from zero keep their precision (each about its own mean).
  PooledVariance far;
  const std::vector<double> big = {1e9 + 1, 1e9 + 2, 1e9 + 3};
  far.add(big);
  CHECK(far.variance() == Approx(1.0));
}
