// A small real Google Benchmark program for the gbench parser's tests: the
// fixture tests/data/gbench/demo_reps3.json is its captured output, and the
// integration tests run it under perfgate. Quick on purpose:
//   gbench_demo --benchmark_repetitions=3 --benchmark_min_time=0.01
//               --benchmark_out=out.json --benchmark_out_format=json
// takes well under a second (1.7.1 reads --benchmark_min_time as seconds).
// DEMO_SLOWDOWN=<factor >= 1> multiplies the work of BM_spin, so a test can
// make one benchmark slower on purpose and expect the gate to notice.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <vector>

namespace {

// Read once: every repetition of BM_spin must do the same amount of work.
double slowdown_factor() {
  static const double factor = [] {
    const char* text = std::getenv("DEMO_SLOWDOWN");
    if (text == nullptr) return 1.0;
    char* end = nullptr;
    double v = std::strtod(text, &end);
    // Anything unreadable or below 1 means "no slowdown": the demo never speeds up.
    return (end != text && v >= 1.0) ? v : 1.0;
  }();
  return factor;
}

// Sums a vector of n int64 values: items and bytes per second are the rates that matter.
void BM_vector_sum(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<std::int64_t> values(n);
  std::iota(values.begin(), values.end(), std::int64_t{1});
  for (auto _ : state) {
    std::int64_t sum = std::accumulate(values.begin(), values.end(), std::int64_t{0});
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(n * sizeof(std::int64_t)));
}
BENCHMARK(BM_vector_sum)->Arg(1 << 10)->Arg(1 << 14);

// "Builds" widgets and reports how many as user counters. The rejected count
// stays 0, so its cv aggregate is 0/0 and the library writes a bare NaN: the
// captured fixture carries one, as real output does.
void BM_widgets(benchmark::State& state) {
  std::uint64_t widgets = 0;
  for (auto _ : state) {
    std::uint64_t w = widgets;
    for (int i = 0; i < 64; ++i) w = w * 6364136223846793005ULL + 1442695040888963407ULL;
    benchmark::DoNotOptimize(w);
    ++widgets;
  }
  state.counters["widgets"] = static_cast<double>(widgets);
  state.counters["rejected_widgets"] = 0;
}
BENCHMARK(BM_widgets);

// Fixed work times DEMO_SLOWDOWN.
void BM_spin(benchmark::State& state) {
  const auto rounds = static_cast<std::int64_t>(2000 * slowdown_factor());
  for (auto _ : state) {
    double x = 1.0;
    for (std::int64_t i = 0; i < rounds; ++i) {
      x = x * 1.0000001 + 1e-9;
      benchmark::DoNotOptimize(x);
    }
  }
}
BENCHMARK(BM_spin);

}  // namespace

BENCHMARK_MAIN();
