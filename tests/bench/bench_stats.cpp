// Comparison statistics at gate and history scale. Targets: (a) a gate's
// 10,000 Mann-Whitney + Hodges-Lehmann comparisons of 10 vs 10 trial values
// well under 1 s; (b) E-divisive change points over 1,000 histories of 365
// runs under 10 s, single-threaded.

#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <vector>

#include "harness/stats/change_points.hpp"
#include "harness/stats/mann_whitney.hpp"
#include "tests/unit/support/seeded_draws.hpp"

namespace {

using namespace perfgate::stats;

using perfgate::test::std_normal;
using perfgate::test::uniform01;

struct Pair {
  std::vector<double> baseline, candidate;
};

std::vector<Pair> make_pairs(std::size_t count, std::size_t n_baseline, std::size_t n_candidate) {
  std::mt19937_64 gen(1);
  std::vector<Pair> pairs(count);
  for (std::size_t i = 0; i < count; ++i) {
    const double shift = i % 4 == 0 ? 1.03 : 1.0;  // a quarter regress by 3 %
    for (std::size_t k = 0; k < n_baseline; ++k) pairs[i].baseline.push_back(100 * (1 + 0.01 * std_normal(gen)));
    for (std::size_t k = 0; k < n_candidate; ++k)
      pairs[i].candidate.push_back(100 * shift * (1 + 0.01 * std_normal(gen)));
  }
  return pairs;
}

void BM_GateComparisons(benchmark::State& state) {
  const auto pairs =
      make_pairs(10'000, static_cast<std::size_t>(state.range(0)), static_cast<std::size_t>(state.range(1)));
  std::size_t significant = 0;
  for (auto _ : state) {
    significant = 0;
    for (const Pair& p : pairs) {
      const auto test = mann_whitney_u(p.baseline, p.candidate);
      const auto shift = hodges_lehmann(p.baseline, p.candidate);
      significant += test.p_value < 0.05 ? 1 : 0;
      benchmark::DoNotOptimize(shift);
    }
  }
  state.counters["significant"] = static_cast<double>(significant);
  state.counters["comparisons_per_s"] =
      benchmark::Counter(static_cast<double>(pairs.size()), benchmark::Counter::kIsIterationInvariantRate);
}
// 10 vs 10 (one configuration's trials) and 15 vs 20 (pooled trials).
BENCHMARK(BM_GateComparisons)->Args({10, 10})->Args({15, 20})->Unit(benchmark::kMillisecond)->UseRealTime();

std::vector<std::vector<double>> make_histories(std::size_t count, std::size_t length) {
  std::mt19937_64 gen(2);
  std::vector<std::vector<double>> h(count, std::vector<double>(length));
  for (std::size_t s = 0; s < count; ++s) {
    // One in three histories has a 5 % step at a varying position.
    const std::size_t step_at = s % 3 == 0 ? 50 + (s * 37) % (length - 100) : length;
    for (std::size_t i = 0; i < length; ++i) h[s][i] = 1000 * ((i >= step_at ? 1.05 : 1.0) + 0.01 * std_normal(gen));
  }
  return h;
}

void BM_ChangePoints(benchmark::State& state) {
  const auto histories = make_histories(1'000, 365);
  std::size_t found = 0;
  for (auto _ : state) {
    found = 0;
    for (std::size_t s = 0; s < histories.size(); ++s) {
      ChangePointOptions opt;
      opt.seed = s;
      found += e_divisive(histories[s], opt).size();
    }
  }
  state.counters["change_points"] = static_cast<double>(found);
  state.counters["series_per_s"] =
      benchmark::Counter(static_cast<double>(histories.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ChangePoints)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
