// The gate and history at scale, through analysis/ (not just the tests):
// (a) one gate over 10,000 comparisons (1,000 configurations x 10 metrics,
//     10 trials a side) under 2 s: evaluate(), correction and verdicts;
// (b) history over 1,000 series of 365 runs under 10 s: analysis::history()
//     from run summaries, change points included.

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "harness/analysis/gate.hpp"
#include "harness/analysis/history.hpp"

using namespace perfgate;

namespace {

std::vector<analysis::GateItem> gate_items() {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> z(0, 1);
  auto policy = model::default_gate_policy();
  std::vector<analysis::GateItem> items;
  for (int c = 0; c < 1000; ++c)
    for (int m = 0; m < 10; ++m) {
      analysis::GateItem it;
      it.workload = "w";
      it.params_json = "{\"c\":" + std::to_string(c) + "}";
      it.label = "c=" + std::to_string(c);
      it.metric = model::MetricInfo{"metric_" + std::to_string(m) + "_ms", "ms", model::Better::Lower};
      it.base.present = it.cand.present = true;
      double shift = (c * 10 + m) % 50 == 0 ? 1.08 : 1.0;
      for (int k = 0; k < 10; ++k) {
        it.base.values.push_back(100 * (1 + 0.02 * z(rng)));
        it.cand.values.push_back(100 * shift * (1 + 0.02 * z(rng)));
      }
      items.push_back(std::move(it));
    }
  return items;
}

// Argument: 1 with the baseline hiccup check (the default policy), 0 without,
// so its cost is measured side by side.
void BM_Gate10kComparisons(benchmark::State& state) {
  auto items = gate_items();
  auto policy = model::default_gate_policy();
  if (state.range(0) == 0) policy.baseline_outlier_mads = 0;
  int regressions = 0;
  for (auto _ : state) {
    auto cs = analysis::evaluate(items, policy);
    analysis::sort_by_severity(cs);
    regressions = analysis::count_verdicts(cs).regression;
    benchmark::DoNotOptimize(cs.data());
  }
  state.counters["regressions"] = regressions;
}
BENCHMARK(BM_Gate10kComparisons)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

// 365 nightly runs of 100 configurations x 10 metrics; a third of the series
// step by +6 % at run 200.
std::vector<analysis::RunSummary> history_runs() {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> z(0, 1);
  std::vector<analysis::RunSummary> runs(365);
  for (int r = 0; r < 365; ++r) {
    auto& rs = runs[static_cast<std::size_t>(r)];
    rs.run.id = r + 1;
    rs.run.git_commit = "c" + std::to_string(r);
    for (int c = 0; c < 100; ++c) {
      analysis::ConfigSummary cs;
      cs.workload = "w";
      cs.params_json = "{\"c\":" + std::to_string(c) + "}";
      cs.label = "c=" + std::to_string(c);
      for (int m = 0; m < 10; ++m) {
        analysis::MetricRow row;
        row.info = model::MetricInfo{"metric_" + std::to_string(m) + "_ms", "ms", model::Better::Lower};
        double level = (c + m) % 3 == 0 && r >= 200 ? 106 : 100;
        row.trials.push_back({0, 0, level * (1 + 0.01 * z(rng)), {}});
        cs.metrics.push_back(std::move(row));
      }
      rs.configs.push_back(std::move(cs));
    }
  }
  return runs;
}

void BM_History1000Series365Runs(benchmark::State& state) {
  auto runs = history_runs();
  analysis::HistoryOptions opt;
  opt.metrics = {"metric_*"};
  std::size_t changes = 0, series = 0;
  for (auto _ : state) {
    auto h = analysis::history(runs, model::default_gate_policy(), opt);
    series = h.size();
    changes = 0;
    for (const auto& s : h) changes += s.changes.size();
    benchmark::DoNotOptimize(h.data());
  }
  state.counters["series"] = static_cast<double>(series);
  state.counters["change_points"] = static_cast<double>(changes);
}
BENCHMARK(BM_History1000Series365Runs)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
