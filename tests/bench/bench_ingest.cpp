// Ingestion of step samples, split in its two halves: parsing protocol lines
// and inserting rows into SQLite. The end-to-end figure (a real trial that
// emits 1M step records, with the harness's peak RSS) comes from
// tests/bench/ingest_e2e.py.

#include <benchmark/benchmark.h>

#include <filesystem>

#include <fmt/format.h>

#include "harness/metrics/protocol.hpp"
#include "harness/store/store.hpp"

namespace {

namespace fs = std::filesystem;
using namespace perfgate;

class CountingSink final : public metrics::ProtocolSink {
 public:
  void on_new_metric(int, std::string_view) override {}
  void on_step(long long, double, const std::vector<std::pair<int, double>>& v) override { values += v.size(); }
  void on_summary(int, double) override {}
  void on_meta_unit(int, std::string_view) override {}
  void on_meta_better(int, model::Better) override {}
  std::size_t values = 0;
};

std::vector<std::string> make_lines(int n) {
  std::vector<std::string> lines;
  lines.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i)
    lines.push_back(fmt::format(R"({{"step": {}, "step_time_ms": {:.3f}, "throughput": {:.2f}, "loss": {:.6f}}})", i,
                                10.0 + (i % 7) * 0.1, 3200.0 - (i % 5), 2.0 - i * 1e-6));
  return lines;
}

void BM_ProtocolParse(benchmark::State& state) {
  auto lines = make_lines(100'000);
  std::size_t values = 0;
  for (auto _ : state) {
    CountingSink sink;
    metrics::ProtocolParser parser(sink);
    for (const auto& l : lines) parser.feed_file_line(l, false, 0);
    values += sink.values;
  }
  state.counters["records_per_s"] =
      benchmark::Counter(static_cast<double>(lines.size()), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["samples_per_s"] = benchmark::Counter(static_cast<double>(values), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ProtocolParse)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_StoreAppend(benchmark::State& state) {
  auto dir = fs::current_path() / "bench-scratch";
  fs::create_directories(dir);
  auto db = dir / "ingest.db";
  fs::remove(db);
  auto store = store::open_sqlite_store(db.string());
  if (!store) {
    state.SkipWithError(store.error().message.c_str());
    return;
  }
  store::RunRecord run;
  run.suite = "bench";
  auto run_id = (*store)->begin_run(run);
  auto cfg = (*store)->config_id("w", "{}");
  model::TrialRecord t;
  t.run_id = *run_id;
  t.config_id = *cfg;
  auto trial = (*store)->begin_trial(t);
  std::vector<store::SampleRow> batch;
  for (int i = 0; i < 50'000; ++i) batch.push_back({1 + i % 3, i / 3, i * 0.01, 10.0 + i % 7});
  for (auto _ : state) {
    auto st = (*store)->append_samples(*trial, batch);
    if (!st) state.SkipWithError(st.error().message.c_str());
  }
  state.counters["samples_per_s"] =
      benchmark::Counter(static_cast<double>(batch.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_StoreAppend)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
