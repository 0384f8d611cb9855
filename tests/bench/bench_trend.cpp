// Trend statistics at soak scale. Targets: Theil-Sen on a 5,000-point window
// well under 100 ms (a 72 h soak at 20 steps/s is ~4,320 such windows);
// Theil-Sen and Mann-Kendall on a whole 72 h soak at 1 Hz (260,000 points);
// find_stalls over every step of a 72 h soak at 20 steps/s (5.2 M points).

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <vector>

#include "harness/stats/stalls.hpp"
#include "harness/stats/trend.hpp"
#include "tests/unit/support/seeded_draws.hpp"

namespace {

using namespace perfgate::stats;

using perfgate::test::std_normal;
using perfgate::test::uniform01;

// A soak metric: slow drift (a leak), noise, and 0.5 % stalls of 5-20x.
struct Series {
  std::vector<double> t, y;
};
Series make_soak(std::size_t n, double hz) {
  std::mt19937_64 gen(7);
  Series s{std::vector<double>(n), std::vector<double>(n)};
  for (std::size_t i = 0; i < n; ++i) {
    s.t[i] = static_cast<double>(i) / hz;
    s.y[i] = 50 * (1 + 1e-6 * s.t[i]) + 1.5 * std_normal(gen);
    if (uniform01(gen) < 0.005) s.y[i] *= 5 + 15 * uniform01(gen);
  }
  return s;
}

// range(0): points. Exact selection of the median and Sen's bounds.
void BM_TheilSen(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto s = make_soak(n, 1.0);
  for (auto _ : state) {
    auto r = theil_sen(s.t, s.y, 0.95);
    benchmark::DoNotOptimize(r);
  }
  state.counters["pairs"] = static_cast<double>(n) * static_cast<double>(n - 1) / 2;
}
BENCHMARK(BM_TheilSen)->Arg(2'000)->Arg(5'000)->Arg(260'000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_MannKendall(benchmark::State& state) {
  const auto s = make_soak(static_cast<std::size_t>(state.range(0)), 1.0);
  for (auto _ : state) {
    auto r = mann_kendall(s.y);
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_MannKendall)->Arg(5'000)->Arg(260'000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_FindStalls(benchmark::State& state) {
  const auto s = make_soak(static_cast<std::size_t>(state.range(0)), 20.0);
  std::size_t found = 0;
  for (auto _ : state) {
    const auto stalls = find_stalls(s.y);
    found = stalls.size();
    benchmark::DoNotOptimize(stalls.data());
  }
  state.counters["stalls"] = static_cast<double>(found);
  state.counters["points_per_s"] =
      benchmark::Counter(static_cast<double>(state.range(0)), benchmark::Counter::kIsIterationInvariantRate);
}
// 72 h at 20 steps/s.
BENCHMARK(BM_FindStalls)->Arg(5'184'000)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
