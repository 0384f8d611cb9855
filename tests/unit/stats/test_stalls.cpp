#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include "harness/stats/stalls.hpp"
#include "tests/unit/support/seeded_draws.hpp"

using namespace perfgate::stats;

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

// Portable test data: Box-Muller over mt19937_64 (std::normal_distribution
// differs between standard libraries).
using perfgate::test::std_normal;
using perfgate::test::uniform01;

}  // namespace

// ---- stalls ---------------------------------------------------------------------------------------

namespace {

// find_stalls the slow way: sort each window.
std::vector<Stall> brute_stalls(const std::vector<double>& y, std::size_t window, double factor, double mad_k) {
  std::vector<Stall> out;
  const std::size_t h = window / 2, w = 2 * h + 1, n = y.size();
  if (h == 0 || n < w) return out;
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t start = std::min(i > h ? i - h : 0, n - w);
    std::vector<double> win(y.begin() + static_cast<std::ptrdiff_t>(start),
                            y.begin() + static_cast<std::ptrdiff_t>(start + w));
    std::sort(win.begin(), win.end());
    const double med = win[h];
    std::vector<double> dev(w);
    for (std::size_t k = 0; k < w; ++k) dev[k] = std::fabs(win[k] - med);
    std::sort(dev.begin(), dev.end());
    const double mad = dev[h];
    if (med > 0 && y[i] > factor * med && y[i] - med > mad_k * 1.482602218505602 * mad)
      out.push_back({i, y[i], med, y[i] / med});
  }
  return out;
}

std::vector<double> flat_noisy(std::mt19937_64& gen, std::size_t n, double level = 100, double sd = 2) {
  std::vector<double> y(n);
  for (double& v : y) v = level + sd * std_normal(gen);
  return y;
}

}  // namespace

TEST_CASE("find_stalls finds injected 10x spikes and nothing else", "[stats]") {
  std::mt19937_64 gen(9);
  auto y = flat_noisy(gen, 20'000);
  const std::vector<std::size_t> spikes = {137, 4'000, 4'003, 12'345, 19'000};  // two close together
  for (std::size_t i : spikes) y[i] *= 10;
  const auto stalls = find_stalls(y);
  REQUIRE(stalls.size() == spikes.size());
  for (std::size_t k = 0; k < spikes.size(); ++k) {
    INFO("spike " << spikes[k]);
    CHECK(stalls[k].index == spikes[k]);
    CHECK(stalls[k].value == y[spikes[k]]);
    CHECK(stalls[k].ratio == stalls[k].value / stalls[k].baseline);
    CHECK(stalls[k].ratio == Approx(10).epsilon(0.1));
    CHECK(stalls[k].baseline == Approx(100).epsilon(0.05));
  }
}

TEST_CASE("find_stalls follows a level shift instead of flagging the new level", "[stats]") {
  // A staircase of 4x steps (above factor 3): a trailing baseline would call
  // every point after a step a stall, a centred median switches with the majority.
  std::mt19937_64 gen(10);
  std::vector<double> y;
  for (double level : {100.0, 400.0, 1600.0, 400.0})
    for (double v : flat_noisy(gen, 1'000, level, level * 0.02)) y.push_back(v);
  CHECK(find_stalls(y).empty());
  // A spike on the upper level is still found, measured against that level.
  y[2'500] = 16'000;
  const auto stalls = find_stalls(y);
  REQUIRE(stalls.size() == 1);
  CHECK(stalls[0].index == 2'500);
  CHECK(stalls[0].baseline == Approx(1600).epsilon(0.05));
}

TEST_CASE("find_stalls handles the first and last half window", "[stats]") {
  std::mt19937_64 gen(12);
  auto y = flat_noisy(gen, 500);
  const std::vector<std::size_t> spikes = {0, 1, 24, 25, 26, 473, 474, 475, 498, 499};
  for (std::size_t i : spikes) y[i] *= 8;
  const auto stalls = find_stalls(y);
  REQUIRE(stalls.size() == spikes.size());
  for (std::size_t k = 0; k < spikes.size(); ++k) CHECK(stalls[k].index == spikes[k]);
  // Exactly one window's worth of points: every point shares it.
  std::vector<double> w51(y.begin() + 100, y.begin() + 151);
  w51[0] = w51[50] = 1000;
  const auto one_window = find_stalls(w51);
  REQUIRE(one_window.size() == 2);
  CHECK(one_window[0].index == 0);
  CHECK(one_window[1].index == 50);
}

TEST_CASE("find_stalls on empty, short and odd inputs", "[stats]") {
  const std::vector<double> empty, short_series(50, 1.0);
  CHECK(find_stalls(empty).empty());
  CHECK(find_stalls(short_series).empty());  // fewer points than the window
  std::vector<double> spiky(30, 1.0);
  spiky[10] = 100;
  CHECK(find_stalls(spiky).empty());
  CHECK(find_stalls(spiky, 2).empty() == false);  // window 2 centres as 3 points
  CHECK(find_stalls(spiky, 1).empty());           // a window of one point has no baseline
  CHECK(find_stalls(spiky, 0).empty());
  // Even windows grow by one to stay centred.
  CHECK(find_stalls(spiky, 30).empty());  // 31 > 30 points
  CHECK(find_stalls(spiky, 29).size() == 1);
  // No positive baseline: no ratio, nothing reported.
  std::vector<double> zeros(100, 0.0);
  zeros[50] = 5;
  CHECK(find_stalls(zeros).empty());
  std::vector<double> negative(100, -1.0);
  negative[50] = 5;
  CHECK(find_stalls(negative).empty());
  // NaN is the caller's to remove: nothing, not a crash.
  spiky[3] = k_nan;
  CHECK(find_stalls(spiky, 5).empty());
}

TEST_CASE("find_stalls needs both the ratio and the MAD criterion", "[stats]") {
  // Values spread evenly over [1, 9] (a golden-ratio sequence, so every
  // window looks alike): the median is ~5 and the MAD ~2, so 18 is over 3x the
  // median but within 6 MAD-scaled deviations (~17.8); 40 is beyond both.
  std::vector<double> y(2'000);
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double g = static_cast<double>(i) * 0.6180339887498949;
    y[i] = 1 + 8 * (g - std::floor(g));
  }
  y[500] = 18;
  y[1500] = 40;
  const auto stalls = find_stalls(y);
  REQUIRE(stalls.size() == 1);
  CHECK(stalls[0].index == 1500);
  // A looser MAD criterion admits the first.
  CHECK(find_stalls(y, 51, 3.0, 2.0).size() == 2);
}

TEST_CASE("find_stalls equals sorting every window", "[stats]") {
  std::mt19937_64 gen(14);
  for (std::size_t window : {3, 4, 11, 51, 200}) {
    for (int shape = 0; shape < 3; ++shape) {
      std::vector<double> y(3'000);
      for (std::size_t i = 0; i < y.size(); ++i) {
        const double u = uniform01(gen);
        if (shape == 0) y[i] = 10 + std_normal(gen);                                       // continuous
        if (shape == 1) y[i] = std::floor(1 + 3 * u);                                      // heavy ties, MAD often 0
        if (shape == 2) y[i] = static_cast<double>(i / 700 + 1) * 10 + std::floor(u * 4);  // steps and ties
        if (uniform01(gen) < 0.01) y[i] *= 5 + 20 * uniform01(gen);                        // spikes
      }
      for (double mad_k : {0.0, 6.0}) {
        INFO("window=" << window << " shape=" << shape << " mad_k=" << mad_k);
        const auto got = find_stalls(y, window, 3.0, mad_k);
        const auto want = brute_stalls(y, window, 3.0, mad_k);
        REQUIRE(got.size() == want.size());
        for (std::size_t k = 0; k < got.size(); ++k) {
          CHECK(got[k].index == want[k].index);
          CHECK(got[k].baseline == want[k].baseline);
          CHECK(got[k].ratio == want[k].ratio);
        }
        if (shape == 0 && mad_k == 6.0) CHECK(!got.empty());
      }
    }
  }
}
