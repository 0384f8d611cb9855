// Ingestion of step samples, split in its two halves: parsing protocol lines
// and inserting rows into SQLite. The end-to-end figure (a real trial that
// emits 1M step records, with the harness's peak RSS) comes from
// tests/bench/ingest_e2e.py.

#include <benchmark/benchmark.h>

#include <filesystem>

#include <fmt/format.h>

#include "harness/metrics/output_parser.hpp"
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
  void on_meta_fact(int) override {}
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

// Log presets and the regex parser, per line of a training log (100,000 lines:
// 90 % of the format's own lines, 10 % other output the parser must skip).
std::vector<std::string> log_lines(const std::string& format, int n) {
  std::vector<std::string> lines;
  lines.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (i % 10 == 9) {
      lines.push_back(fmt::format("INFO:root:saving checkpoint at iteration {} to /ckpt | took 0.1 s", i));
      continue;
    }
    double ms = 1200.0 + (i % 7);
    if (format == "megatron")
      lines.push_back(fmt::format(
          " [2026-11-29 10:00:00] iteration {:8d}/ 1000000 | consumed samples: {:12d} | elapsed time per iteration "
          "(ms): {:.1f} | throughput per GPU (TFLOP/s/GPU): 123.4 | learning rate: 1.000000E-04 | global batch size: "
          "  512 | lm loss: {:.6E} | loss scale: 65536.0 | grad norm: 2.345 | number of skipped iterations:   0 | "
          "number of nan iterations:   0 |",
          i + 1, (i + 1) * 512, ms, 8.0 - i * 1e-6));
    else if (format == "mindspore")
      lines.push_back(i % 2 ? fmt::format("epoch: {} step: 100, loss is {:.4f}", i, 2.0 - i * 1e-6)
                            : fmt::format("Train epoch time: {:.3f} ms, per step time: {:.3f} ms", ms * 100, ms));
    else  // regex
      lines.push_back(fmt::format("train step={} time={:.3f}ms mem={}MB", i, ms, 500 + i % 9));
  }
  return lines;
}

void BM_LogParse(benchmark::State& state, const std::string& format) {
  auto lines = log_lines(format, 100'000);
  std::size_t values = 0;
  for (auto _ : state) {
    CountingSink sink;
    metrics::MetricRegistry registry(sink);
    model::MetricsSpec spec;
    spec.parser = format;
    if (format == "regex") {
      model::LogPattern p;
      p.regex = R"(step=(?<step>\d+) time=(?<step_time_ms>[0-9.]+)ms mem=(?<mem_mb>\d+)MB)";
      spec.patterns.push_back(p);
    }
    auto parser = metrics::make_output_parser(spec, registry);
    if (!parser) {
      state.SkipWithError(parser.error().message.c_str());
      return;
    }
    for (const auto& l : lines) (*parser)->feed_line(l, metrics::LineSource::Stdout, false, 0);
    (*parser)->finish(0);
    values += sink.values;
  }
  state.counters["lines_per_s"] =
      benchmark::Counter(static_cast<double>(lines.size()), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["samples_per_s"] = benchmark::Counter(static_cast<double>(values), benchmark::Counter::kIsRate);
}
BENCHMARK_CAPTURE(BM_LogParse, megatron, std::string("megatron"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LogParse, mindspore, std::string("mindspore"))->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(BM_LogParse, regex, std::string("regex"))->Unit(benchmark::kMillisecond)->UseRealTime();

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
