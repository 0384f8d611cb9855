#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "harness/stats/pelt.hpp"

using namespace perfgate::stats;

namespace {

// Optimal partitioning by brute force (Jackson et al. 2005): the exact
// minimum of sum of costs + beta per change, O(n^2). PELT must find the same
// segmentation (Killick et al. 2012 prove it exact).
std::vector<std::size_t> optimal_partitioning(const std::vector<double>& x, double sigma, double beta, std::size_t m) {
  const std::size_t n = x.size();
  auto cost = [&](std::size_t a, std::size_t b) {
    double mean = 0;
    for (std::size_t i = a; i < b; ++i) mean += x[i];
    mean /= static_cast<double>(b - a);
    double c = 0;
    for (std::size_t i = a; i < b; ++i) c += (x[i] - mean) * (x[i] - mean);
    return c / (sigma * sigma);
  };
  std::vector<double> f(n + 1, std::numeric_limits<double>::infinity());
  std::vector<std::size_t> last(n + 1, 0);
  f[0] = -beta;
  for (std::size_t t = m; t <= n; ++t)
    for (std::size_t s = 0; s + m <= t; ++s) {
      if (s != 0 && s < m) continue;
      double v = f[s] + cost(s, t) + beta;
      if (v < f[t]) f[t] = v, last[t] = s;
    }
  std::vector<std::size_t> out;
  for (std::size_t t = n; t > 0; t = last[t])
    if (last[t] > 0) out.push_back(last[t]);
  return {out.rbegin(), out.rend()};
}

}  // namespace

TEST_CASE("PELT finds the steps of a clean staircase", "[stats]") {
  std::vector<double> x;
  for (int i = 0; i < 30; ++i) x.push_back(10 + 0.01 * (i % 3));
  for (int i = 0; i < 30; ++i) x.push_back(12 + 0.01 * (i % 3));
  for (int i = 0; i < 30; ++i) x.push_back(11 + 0.01 * (i % 3));
  auto cps = pelt_mean(x);
  REQUIRE(cps.size() == 2);
  CHECK(cps[0] == 30);
  CHECK(cps[1] == 60);
}

TEST_CASE("PELT equals optimal partitioning on random series", "[stats]") {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> n01(0, 1);
  for (int rep = 0; rep < 40; ++rep) {
    std::vector<double> x;
    const int segments = 1 + rep % 4;
    for (int s = 0; s < segments; ++s) {
      const double level = 3.0 * n01(rng);
      const int len = 5 + static_cast<int>(rng() % 25);
      for (int i = 0; i < len; ++i) x.push_back(level + n01(rng));
    }
    PeltOptions o;
    o.sigma = 1;
    o.penalty = 2 + rep % 7;
    o.min_segment = 2 + rep % 3;
    INFO("replication " << rep << ", n " << x.size());
    CHECK(pelt_mean(x, o) == optimal_partitioning(x, o.sigma, o.penalty, o.min_segment));
  }
}

TEST_CASE("PELT on degenerate series", "[stats]") {
  CHECK(pelt_mean(std::vector<double>{}).empty());
  CHECK(pelt_mean(std::vector<double>{1, 2, 3}).empty());  // shorter than two segments of 2
  CHECK(pelt_mean(std::vector<double>(50, 4.0)).empty());  // constant: no noise, no change
  std::vector<double> exact(20, 1.0);
  for (int i = 10; i < 20; ++i) exact[i] = 2.0;
  auto cps = pelt_mean(exact);  // no noise, one exact change
  REQUIRE(cps.size() == 1);
  CHECK(cps[0] == 10);
}

TEST_CASE("noise_sigma ignores level shifts", "[stats]") {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> n01(0, 2.0);
  std::vector<double> x;
  for (int i = 0; i < 4000; ++i) x.push_back((i < 2000 ? 0 : 50) + n01(rng));
  CHECK(noise_sigma(x) == Approx(2.0).epsilon(0.05));
  CHECK(noise_sigma(std::vector<double>{1, 2}) == 0);
}
