#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "harness/metrics/output_parser.hpp"
#include "tests/unit/support/paths.hpp"
#include "tests/unit/support/recording_sink.hpp"

using namespace perfgate;
using Catch::Matchers::Contains;
using metrics::LineSource;
using metrics::OutputParser;

namespace {

using Step = test::RecordedStep;
using test::RecordingSink;

// Counts only: a million steps must not be kept by the test either.
class CountingSink final : public metrics::ProtocolSink {
 public:
  long long metrics = 0, steps = 0, empty_steps = 0, summaries = 0, last_step = -1;
  std::map<int, double> last_summary;
  std::vector<std::string> names;
  void on_new_metric(int, std::string_view name) override {
    ++metrics;
    names.emplace_back(name);
  }
  void on_step(long long step, double, const std::vector<std::pair<int, double>>& values) override {
    if (values.empty()) ++empty_steps;
    ++steps;
    last_step = step;
  }
  void on_summary(int id, double value) override {
    ++summaries;
    last_summary[id] = value;
  }
  void on_meta_unit(int, std::string_view) override {}
  void on_meta_better(int, model::Better) override {}
  void on_meta_fact(int) override {}
  double summary_of(const std::string& name) const {
    for (std::size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return last_summary.at(static_cast<int>(i));
    FAIL("no summary " << name);
    return 0;
  }
};

// Feeds a fixture line by line, as the launcher does (getline keeps a '\r'; feed_line drops it). Returns the count.
long long feed_file(OutputParser& p, const std::string& name) {
  std::ifstream in(perfgate::test::data_dir() + "/logs/" + name, std::ios::binary);
  REQUIRE(in.good());
  std::string line;
  long long n = 0;
  while (std::getline(in, line)) {
    ++n;
    p.feed_line(line, LineSource::Stdout, false, 0.5 * static_cast<double>(n));
  }
  return n;
}

void feed(OutputParser& p, std::string_view line, double t_s = 1.0) {
  p.feed_line(line, LineSource::Stdout, false, t_s);
}

// Everything a parser handed on, as text ("nan" included), for comparing two runs.
std::string dump(const RecordingSink& s, const OutputParser& p) {
  std::ostringstream out;
  out.precision(17);
  for (const auto& n : s.names) out << "metric " << n << " unit=" << (s.units.count(n) ? s.units.at(n) : "-") << "\n";
  for (const auto& st : s.steps) {
    out << "step " << st.step << " t=" << st.t_s;
    for (const auto& [k, v] : st.values) out << " " << k << "=" << v;
    out << "\n";
  }
  for (const auto& [k, v] : s.summary_events) out << "summary " << k << "=" << v << "\n";
  for (const auto& m : p.malformed()) out << "bad " << m.line_no << " " << m.reason << "\n";
  return out.str();
}

std::vector<long long> bad_lines(const OutputParser& p) {
  std::vector<long long> out;
  for (const auto& m : p.malformed()) out.push_back(m.line_no);
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// megatron

TEST_CASE("megatron: iteration lines become step records", "[parsers]") {
  RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = metrics::make_megatron_parser(reg);
  CHECK(feed_file(*p, "megatron.log") == 21);

  REQUIRE(sink.steps.size() == 4);
  CHECK(sink.steps[0].step == 10);
  CHECK(sink.steps[1].step == 20);
  CHECK(sink.steps[2].step == 30);
  CHECK(sink.steps[3].step == 50);
  CHECK(sink.steps[0].t_s == 0.5 * 4);  // the arrival time of its line
  CHECK(sink.steps[3].t_s == 0.5 * 17);

  // With a time stamp in front.
  CHECK(sink.steps[0].values == std::map<std::string, double>{
                                    {"consumed_samples", 640},
                                    {"step_time_ms", 1234.5},
                                    {"tflops_per_gpu", 123.4},
                                    {"learning_rate", 1e-4},
                                    {"global_batch_size", 64},
                                    {"loss", 8.123456},
                                    {"loss_scale", 65536},
                                    {"grad_norm", 2.345},
                                    {"skipped_iterations", 0},
                                    {"nan_iterations", 0},
                                    {"throughput", 64 / (1234.5 / 1000.0)},
                                });
  // Without one; unknown "key: number" fields under their snake_case names.
  CHECK(sink.steps[1].values.at("mtp_loss") == 0.25);
  CHECK(sink.steps[1].values.at("z_loss") == 1.5e-3);
  CHECK(sink.steps[1].values.at("throughput") == 64.0);
  CHECK(sink.steps[1].values.size() == 13);
  // "[rank0]:" prefix; NaN loss and infinite grad norm are recorded; no TFLOP/s field, none reported.
  CHECK(std::isnan(sink.steps[2].values.at("loss")));
  CHECK(std::isinf(sink.steps[2].values.at("grad_norm")));
  CHECK(sink.steps[2].values.at("nan_iterations") == 1);
  CHECK(sink.steps[2].values.count("tflops_per_gpu") == 0);
  CHECK(sink.steps[2].values.at("throughput") == 64 / (800.0 / 1000.0));
  // "learning rate: n/a" is skipped, the rest of the line is kept ("(ms):900" without a blank too).
  CHECK(sink.steps[3].values.count("learning_rate") == 0);
  CHECK(sink.steps[3].values.at("step_time_ms") == 900);
  CHECK(sink.steps[3].values.at("throughput") == 64 / (900 / 1000.0));

  CHECK(sink.units.at("step_time_ms") == "ms");
  CHECK(sink.better.at("step_time_ms") == model::Better::Lower);
  CHECK(sink.units.at("tflops_per_gpu") == "TFLOP/s");
  CHECK(sink.better.at("tflops_per_gpu") == model::Better::Higher);
  CHECK(sink.units.at("throughput") == "samples/s");
  CHECK(sink.better.at("throughput") == model::Better::Higher);
  for (const char* n : {"loss", "consumed_samples", "learning_rate", "grad_norm", "mtp_loss", "nan_iterations"}) {
    INFO(n);
    CHECK(sink.better.at(n) == model::Better::None);
    CHECK(sink.units.count(n) == 0);
  }
  // Nothing from validation lines, checkpoint messages or garbage, and nothing from bad lines.
  CHECK(sink.names.size() == 13);
}

TEST_CASE("megatron: unreadable and cut lines are counted with their reasons", "[parsers]") {
  RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = metrics::make_megatron_parser(reg);
  feed_file(*p, "megatron.log");
  p->finish(99);

  CHECK(p->malformed_count() == 5);
  REQUIRE(bad_lines(*p) == std::vector<long long>{11, 12, 13, 18, 21});
  const auto& m = p->malformed();
  CHECK_THAT(m[0].reason, Contains("elapsed time per iteration (ms)") && Contains("fast"));
  CHECK_THAT(m[1].reason, Contains("iteration number") && Contains("4x"));
  CHECK_THAT(m[2].reason, Contains("allocated") && Contains("12x4.5"));
  CHECK_THAT(m[3].reason, Contains("cut short"));
  CHECK_THAT(m[4].reason, Contains("cut short") && Contains("loss sc"));  // the truncated last line
  CHECK(m[0].source == LineSource::Stdout);
  CHECK(m[0].excerpt.starts_with(" iteration       40/"));
  // Steps 40 and 60 are not there, not even in part.
  for (const auto& s : sink.steps) CHECK((s.step != 40 && s.step != 60));
  CHECK(p->records() == 4 + 9);  // four steps, nine memory summaries
}

TEST_CASE("megatron: memory lines give per-rank summaries and the max over ranks", "[parsers]") {
  RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = metrics::make_megatron_parser(reg);
  feed_file(*p, "megatron.log");
  CHECK(sink.summary_events.empty());  // handed on when the trial ends, once per rank
  p->finish(99);

  CHECK(sink.summaries == std::map<std::string, double>{
                              // rank 0's later line wins, although its earlier max allocated was higher
                              {"rank0.mem_allocated_mb", 1250.0},
                              {"rank0.mem_max_allocated_mb", 2400.0},
                              {"rank0.mem_reserved_mb", 3000.0},
                              {"rank0.mem_max_reserved_mb", 3100.0},
                              {"rank4.mem_allocated_mb", 1300.0},
                              {"rank4.mem_max_allocated_mb", 2500.25},
                              {"rank4.mem_reserved_mb", 3200.0},
                              {"rank4.mem_max_reserved_mb", 3300.0},
                              // rank 1's line was unreadable and gave nothing
                              {"mem_max_allocated_mb", 2500.25},
                          });
  CHECK(sink.summary_events.size() == 9);
  CHECK(sink.summary_events.front().first == "mem_max_allocated_mb");
  CHECK(sink.units.at("rank4.mem_reserved_mb") == "MB");
  CHECK(sink.better.at("rank4.mem_reserved_mb") == model::Better::Lower);
  CHECK(sink.units.at("mem_max_allocated_mb") == "MB");
  CHECK(sink.better.at("mem_max_allocated_mb") == model::Better::Lower);
  p->finish(100);  // a second finish repeats nothing
  CHECK(sink.summary_events.size() == 9);
}

TEST_CASE("megatron: CRLF line ends read the same as LF", "[parsers]") {
  RecordingSink lf_sink, crlf_sink;
  metrics::MetricRegistry lf_reg(lf_sink), crlf_reg(crlf_sink);
  auto lf = metrics::make_megatron_parser(lf_reg);
  auto crlf = metrics::make_megatron_parser(crlf_reg);
  feed_file(*lf, "megatron.log");
  feed_file(*crlf, "megatron_crlf.log");
  lf->finish(1);
  crlf->finish(1);
  REQUIRE(lf_sink.steps.size() == 4);
  CHECK(dump(crlf_sink, *crlf) == dump(lf_sink, *lf));
}

TEST_CASE("megatron: recognition rules", "[parsers]") {
  RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = metrics::make_megatron_parser(reg);
  // Not iteration lines: ignored without a trace.
  feed(*p, "");
  feed(*p, "iteration");
  feed(*p, " > number of iterations: 1000 | elapsed time per iteration (ms): 5 |");
  feed(*p, "reiteration 5/ 10 | elapsed time per iteration (ms): 5 |");
  feed(*p, " iteration 5/ 10 | consumed samples: 3 |");       // complete, but no elapsed time: some other report
  feed(*p, "memory (MB) | allocated: 1 | max allocated: 2");  // no "[Rank N]"
  CHECK(sink.steps.empty());
  CHECK(sink.names.empty());
  CHECK(p->malformed_count() == 0);

  // No trailing '|' is fine when the last field reads.
  feed(*p, "iteration 7/10|elapsed time per iteration (ms):12.5|global batch size:8", 3.0);
  REQUIRE(sink.steps.size() == 1);
  CHECK(sink.steps[0].step == 7);
  CHECK(sink.steps[0].t_s == 3.0);
  CHECK(sink.steps[0].values == std::map<std::string, double>{{"step_time_ms", 12.5},
                                                              {"global_batch_size", 8},
                                                              {"throughput", 8 / (12.5 / 1000.0)}});
  // Elapsed time without a batch size: no throughput; a zero step time derives none either.
  feed(*p, " iteration 8/ 10 | elapsed time per iteration (ms): 12.5 |");
  feed(*p, " iteration 9/ 10 | elapsed time per iteration (ms): 0 | global batch size: 8 |");
  REQUIRE(sink.steps.size() == 3);
  CHECK(sink.steps[1].values == std::map<std::string, double>{{"step_time_ms", 12.5}});
  CHECK(sink.steps[2].values == std::map<std::string, double>{{"step_time_ms", 0}, {"global_batch_size", 8}});

  // Recognised but unreadable.
  feed(*p, " iteration -1/ 10 | elapsed time per iteration (ms): 1 |");
  feed(*p, " iteration 11/ 20 | elapsed time per iteration (ms):  |");
  feed(*p, " iteration 12/ 20 | elapsed time per iteration (ms): 5 | lm loss: 2.");  // stops in a number: still one
  feed(*p, " iteration 13/ 20 | elapsed time per iteration (ms): 5 | lm loss: 2.0E");
  feed(*p, "[Rank x] (after 1 iterations) memory (MB) | allocated: 1");
  feed(*p, "[Rank 2] (after 1 iterations) memory (MB) | allocated: 1 | max alloc");
  feed(*p, "[Rank 3] (after 1 iterations) memory (MB)");
  CHECK(p->malformed_count() == 6);
  REQUIRE(sink.steps.size() == 4);
  CHECK(sink.steps[3].step == 12);
  CHECK(sink.steps[3].values.at("loss") == 2.0);
  const auto& m = p->malformed();
  REQUIRE(m.size() == 6);
  CHECK_THAT(m[0].reason, Contains("iteration number '-1'"));
  CHECK_THAT(m[1].reason, Contains("elapsed time per iteration (ms)"));
  CHECK_THAT(m[2].reason, Contains("lm loss"));
  CHECK_THAT(m[3].reason, Contains("rank 'x'"));
  CHECK_THAT(m[4].reason, Contains("max alloc"));
  CHECK_THAT(m[5].reason, Contains("without allocated"));
  CHECK(m[0].line_no == 10);
  CHECK(m[5].line_no == 16);
  p->finish(1);
  CHECK(sink.summaries.empty());
}

TEST_CASE("megatron: a million lines stream through", "[parsers]") {
  CountingSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = metrics::make_megatron_parser(reg);
  std::string line;
  for (long long i = 1; i <= 1'000'000; ++i) {
    auto n = std::to_string(i);
    if (i % 10 == 0) {
      line = "[2024-05-01 10:00:00] INFO some other output " + n + " | x: y |";
    } else if (i % 10 == 1) {
      line = "[Rank " + std::to_string((i / 10) % 8) + "] (after " + n + " iterations) memory (MB) | allocated: 1 | " +
             "max allocated: " + n + " | reserved: 3 | max reserved: 4";
    } else {
      line = " iteration " + n + "/ 1000000 | consumed samples: " + n +
             " | elapsed time per iteration (ms): " + (i % 1000 == 2 ? std::string("x") : "100.5") +
             " | global batch size: 64 | lm loss: 2.5 | loss scale: 1.0 | grad norm: 0.5 |";
    }
    p->feed_line(line, LineSource::Stdout, false, static_cast<double>(i));
  }
  p->finish(0);
  CHECK(sink.steps == 800'000 - 1'000);
  CHECK(sink.empty_steps == 0);
  CHECK(p->malformed_count() == 1'000);
  CHECK(sink.last_step == 999'999);
  CHECK(sink.summaries == 8 * 4 + 1);
  CHECK(p->records() == 799'000 + 33);
  CHECK(sink.metrics == 7 + 33);                              // six fields + throughput; 33 memory names
  CHECK(sink.summary_of("mem_max_allocated_mb") == 999'991);  // the last memory line, rank 7's
  CHECK(sink.summary_of("rank0.mem_max_allocated_mb") == 999'921);
}

// ---------------------------------------------------------------------------------------------------------------
// mindspore

TEST_CASE("mindspore: TimeMonitor and LossMonitor lines", "[parsers]") {
  RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = metrics::make_mindspore_parser(reg, 32);
  CHECK(feed_file(*p, "mindspore.log") == 16);

  auto time = sink.with("step_time_ms");
  REQUIRE(time.size() == 2);  // epochs 1 and 2 (the Eval line is not training); 3 and 4 were unreadable
  CHECK(time[0].step == 1);
  CHECK(time[0].t_s == 0.5 * 5);
  CHECK(time[0].values == std::map<std::string, double>{{"epoch_time_ms", 12345.678},
                                                        {"step_time_ms", 123.456},
                                                        {"throughput", 32 / (123.456 / 1000.0)}});
  CHECK(time[1].step == 2);
  CHECK(time[1].values == std::map<std::string, double>{{"epoch_time_ms", 11000.0},
                                                        {"step_time_ms", 110.0},
                                                        {"data_time_ms", 2.5},
                                                        {"throughput", 32 / (110.0 / 1000.0)}});

  auto loss = sink.with("loss");
  REQUIRE(loss.size() == 6);
  std::vector<long long> loss_steps;
  for (const auto& s : loss) {
    loss_steps.push_back(s.step);
    CHECK(s.values.size() == 1);
  }
  // A running count of LossMonitor lines: the printed step restarts every epoch. Line 9's loss was unreadable.
  CHECK(loss_steps == std::vector<long long>{1, 2, 3, 4, 5, 7});
  CHECK(loss[0].values.at("loss") == 2.3026);
  CHECK(loss[1].values.at("loss") == 2.2971);  // "[2.2971]"
  CHECK(loss[2].values.at("loss") == 2.2513);  // a tuple of Tensors: the first value
  CHECK(loss[3].values.at("loss") == 2.1);     // more text after the number
  CHECK(std::isnan(loss[4].values.at("loss")));
  CHECK(loss[5].values.at("loss") == 1.2);  // "step: [ 10/ 100]"
  CHECK(sink.steps.size() == 8);

  CHECK(sink.units.at("epoch_time_ms") == "ms");
  CHECK(sink.better.at("step_time_ms") == model::Better::Lower);
  CHECK(sink.units.at("throughput") == "samples/s");
  CHECK(sink.better.at("throughput") == model::Better::Higher);
  CHECK(sink.better.at("loss") == model::Better::None);

  CHECK(bad_lines(*p) == std::vector<long long>{9, 14, 15, 16});
  const auto& m = p->malformed();
  REQUIRE(m.size() == 4);
  CHECK_THAT(m[0].reason, Contains("loss 'abc'"));
  CHECK_THAT(m[1].reason, Contains("epoch time '12abc ms'"));
  CHECK_THAT(m[2].reason, Contains("loss tensor cut short"));
  CHECK_THAT(m[3].reason, Contains("per step time"));  // the truncated last line
}

TEST_CASE("mindspore: CRLF line ends read the same as LF", "[parsers]") {
  RecordingSink lf_sink, crlf_sink;
  metrics::MetricRegistry lf_reg(lf_sink), crlf_reg(crlf_sink);
  auto lf = metrics::make_mindspore_parser(lf_reg, 32);
  auto crlf = metrics::make_mindspore_parser(crlf_reg, 32);
  feed_file(*lf, "mindspore.log");
  feed_file(*crlf, "mindspore_crlf.log");
  REQUIRE(lf_sink.steps.size() == 8);
  CHECK(dump(crlf_sink, *crlf) == dump(lf_sink, *lf));
}

TEST_CASE("mindspore: no batch size, no throughput; other loss forms", "[parsers]") {
  RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = metrics::make_mindspore_parser(reg, 0);
  feed(*p, "epoch time: 1000.0 ms, per step time: 10.0 ms");
  feed(*p, "epoch: 1 step: 1, loss is [[0.75]]");
  feed(*p, "epoch: 1 step: 2, loss is Tensor(shape=[1], dtype=Float32, value= [ 6.25000000e-01])");
  feed(*p, "epoch: 1, loss is 0.5");
  feed(*p, "[rank3]: epoch: 1 step: 4, loss is -inf");
  feed(*p, "loss is 0.1");  // no epoch before it: not LossMonitor
  feed(*p, "epoch: 1 step: 5, loss is ");
  feed(*p, "epoch: 1 step: 6, loss is [0.5");
  feed(*p, "epoch time: 1000.0 ms, per step time: 10.0");  // the unit is missing: cut inside the number
  REQUIRE(sink.steps.size() == 5);
  CHECK(sink.steps[0].values == std::map<std::string, double>{{"epoch_time_ms", 1000.0}, {"step_time_ms", 10.0}});
  CHECK(sink.steps[1].values.at("loss") == 0.75);
  CHECK(sink.steps[2].values.at("loss") == 0.625);
  CHECK(sink.steps[3].values.at("loss") == 0.5);
  CHECK(sink.steps[4].values.at("loss") == -std::numeric_limits<double>::infinity());
  CHECK(sink.steps[4].step == 4);
  CHECK(bad_lines(*p) == std::vector<long long>{7, 8, 9});
  CHECK_THAT(p->malformed()[0].reason, Contains("loss value missing"));
  CHECK_THAT(p->malformed()[1].reason, Contains("']'"));
  CHECK_THAT(p->malformed()[2].reason, Contains("per step time '10.0'"));
  CHECK(sink.names == std::vector<std::string>{"epoch_time_ms", "step_time_ms", "loss"});
}

TEST_CASE("mindspore: a million lines stream through", "[parsers]") {
  CountingSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = metrics::make_mindspore_parser(reg, 64);
  std::string line;
  for (long long i = 1; i <= 1'000'000; ++i) {
    if (i % 2 == 1)
      line = "epoch: 1 step: " + std::to_string(i % 100) + ", loss is " + (i % 1000 == 1 ? "x" : "0.5");
    else if (i % 4 == 0)
      line = "epoch time: 1000.0 ms, per step time: 10.0 ms";
    else
      line = "[INFO] something else happened at " + std::to_string(i);
    p->feed_line(line, LineSource::Stderr, false, static_cast<double>(i));
  }
  p->finish(0);
  CHECK(sink.steps == 500'000 - 1'000 + 250'000);
  CHECK(sink.empty_steps == 0);
  CHECK(p->malformed_count() == 1'000);
  CHECK(sink.last_step == 250'000);  // the last line of all is a TimeMonitor line, epoch 250000
  CHECK(sink.metrics == 4);
  CHECK(p->records() == sink.steps);
}

// ---------------------------------------------------------------------------------------------------------------
// modelzoo

TEST_CASE("modelzoo: Key = value lines become summaries", "[parsers]") {
  RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = metrics::make_modelzoo_parser(reg);
  CHECK(feed_file(*p, "modelzoo.log") == 18);
  p->finish(1);

  CHECK(sink.steps.empty());
  REQUIRE(sink.summaries.count("loss") == 1);
  CHECK(std::isnan(sink.summaries.at("loss")));
  sink.summaries.erase("loss");
  CHECK(sink.summaries == std::map<std::string, double>{
                              {"rank_size", 8},
                              {"batch_size", 256},
                              {"throughput", 2345.67},
                              {"step_time_ms", 109.12},  // "TrainingTime = N/A" later changed nothing
                              {"train_accuracy", 76.13},
                              {"e2e_time_s", 3600},
                              {"top1_acc", 0.7613},  // behind "[INFO] "
                          });
  CHECK(sink.summary_events.size() == 8);
  CHECK(sink.units.at("throughput") == "samples/s");
  CHECK(sink.better.at("throughput") == model::Better::Higher);
  CHECK(sink.units.at("step_time_ms") == "ms");
  CHECK(sink.better.at("step_time_ms") == model::Better::Lower);
  CHECK(sink.units.at("e2e_time_s") == "s");
  CHECK(sink.better.at("e2e_time_s") == model::Better::Lower);
  CHECK(sink.better.at("batch_size") == model::Better::None);
  CHECK(sink.better.at("train_accuracy") == model::Better::None);

  CHECK(bad_lines(*p) == std::vector<long long>{16, 18});
  CHECK_THAT(p->malformed()[0].reason, Contains("TrainingTime") && Contains("N/A"));
  CHECK_THAT(p->malformed()[1].reason, Contains("ActualFPS"));  // the truncated last line
}

TEST_CASE("modelzoo: CRLF line ends read the same as LF", "[parsers]") {
  RecordingSink lf_sink, crlf_sink;
  metrics::MetricRegistry lf_reg(lf_sink), crlf_reg(crlf_sink);
  auto lf = metrics::make_modelzoo_parser(lf_reg);
  auto crlf = metrics::make_modelzoo_parser(crlf_reg);
  feed_file(*lf, "modelzoo.log");
  feed_file(*crlf, "modelzoo_crlf.log");
  REQUIRE(lf_sink.summary_events.size() == 8);
  CHECK(dump(crlf_sink, *crlf) == dump(lf_sink, *lf));
}

TEST_CASE("modelzoo: what is and is not a result line", "[parsers]") {
  RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = metrics::make_modelzoo_parser(reg);
  feed(*p, "  FPSValue=12  ");
  feed(*p, "[rank0]: [2024-05-01 10:00:00] AvgStepTime = 1.5e2");
  feed(*p, "1Key = 3");
  feed(*p, "the = 3 ways");
  feed(*p, "a b = 3");
  feed(*p, "ActualFPS == 3");
  feed(*p, "Network = 12abc");
  feed(*p, "BatchSize = 256 # from the script");
  CHECK(sink.summaries == std::map<std::string, double>{{"fps_value", 12}, {"avg_step_time", 150}});
  CHECK(bad_lines(*p) == std::vector<long long>{6, 8});
}

TEST_CASE("modelzoo: a million lines stream through", "[parsers]") {
  CountingSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = metrics::make_modelzoo_parser(reg);
  std::string line;
  for (long long i = 1; i <= 1'000'000; ++i) {
    if (i % 100 == 0)
      line = "ActualFPS = " + std::to_string(i);
    else if (i % 100 == 50)
      line = "TrainingTime = bad";
    else if (i % 3 == 0)
      line = "Network = ResNet50";
    else
      line = "Epoch: [" + std::to_string(i) + "] loss 1.0 (x = y)";
    p->feed_line(line, LineSource::Stdout, false, static_cast<double>(i));
  }
  p->finish(0);
  CHECK(sink.summaries == 10'000);
  CHECK(p->malformed_count() == 10'000);
  CHECK(sink.metrics == 1);
  CHECK(sink.summary_of("throughput") == 1'000'000);
}

// ---------------------------------------------------------------------------------------------------------------
// ais_bench

TEST_CASE("ais_bench: performance summary lines", "[parsers]") {
  RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = metrics::make_ais_bench_parser(reg);
  CHECK(feed_file(*p, "ais_bench.log") == 21);
  p->finish(1);

  CHECK(sink.steps.empty());
  CHECK(sink.summaries == std::map<std::string, double>{
                              {"h2d_latency_ms", 0.045},  // the second summary's, the last readable
                              {"h2d_latency_mean_ms", 0.05},
                              {"h2d_latency_min_ms", 0.04},
                              {"h2d_latency_max_ms", 0.07},
                              {"h2d_latency_p99_ms", 0.07},
                              {"npu_compute_time_ms", 2.45},
                              {"npu_compute_time_mean_ms", 2.45},
                              {"npu_compute_time_min_ms", 2.41},
                              {"npu_compute_time_max_ms", 2.52},
                              {"npu_compute_time_p99_ms", 2.50},
                              {"d2h_latency_ms", 0.02},
                              {"d2h_latency_mean_ms", 0.02},
                              {"d2h_latency_min_ms", 0.02},
                              {"d2h_latency_max_ms", 0.03},
                              {"d2h_latency_p99_ms", 0.03},
                              {"throughput", 408.16},
                          });
  CHECK(sink.summary_events.size() == 5 * 4 + 1);
  CHECK(sink.units.at("npu_compute_time_p99_ms") == "ms");
  CHECK(sink.better.at("npu_compute_time_p99_ms") == model::Better::Lower);
  CHECK(sink.units.at("throughput") == "samples/s");
  CHECK(sink.better.at("throughput") == model::Better::Higher);

  CHECK(bad_lines(*p) == std::vector<long long>{20, 21});
  CHECK_THAT(p->malformed()[0].reason, Contains("D2H_latency max 'N/A'"));
  CHECK_THAT(p->malformed()[1].reason, Contains("NPU_compute_time") && Contains("percentile(9"));
}

TEST_CASE("ais_bench: CRLF line ends read the same as LF", "[parsers]") {
  RecordingSink lf_sink, crlf_sink;
  metrics::MetricRegistry lf_reg(lf_sink), crlf_reg(crlf_sink);
  auto lf = metrics::make_ais_bench_parser(lf_reg);
  auto crlf = metrics::make_ais_bench_parser(crlf_reg);
  feed_file(*lf, "ais_bench.log");
  feed_file(*crlf, "ais_bench_crlf.log");
  REQUIRE(lf_sink.summary_events.size() == 21);
  CHECK(dump(crlf_sink, *crlf) == dump(lf_sink, *lf));
}

TEST_CASE("ais_bench: statistics a later version may add", "[parsers]") {
  RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = metrics::make_ais_bench_parser(reg);
  feed(*p, "Host_wall_time (ms): median = 3, percentile(90%) = 2.9, percentile(99.9%) = 3.5, std dev = 0.1");
  feed(*p, "[INFO] model load time (ms): 120.5");  // no "key = value" list: not a timer line
  feed(*p, "[INFO] throughput: 1e3");
  feed(*p, "[INFO] NPU_compute_time (ms): min = 1, percentile(ab%) = 2");
  feed(*p, "[INFO] NPU_compute_time (ms): min = 1, = 2");
  feed(*p, "[INFO] throughput 1000*batchsize.mean(1)/NPU_compute_time.mean(2.45): fast");
  CHECK(sink.summaries == std::map<std::string, double>{{"host_wall_time_ms", 3},
                                                        {"host_wall_time_p90_ms", 2.9},
                                                        {"host_wall_time_p99_9_ms", 3.5},
                                                        {"host_wall_time_std_dev_ms", 0.1},
                                                        {"throughput", 1000}});
  CHECK(bad_lines(*p) == std::vector<long long>{4, 5, 6});
  CHECK_THAT(p->malformed()[0].reason, Contains("percentile(ab%)"));
  CHECK_THAT(p->malformed()[2].reason, Contains("throughput 'fast'"));
}

TEST_CASE("ais_bench: a million lines stream through", "[parsers]") {
  CountingSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = metrics::make_ais_bench_parser(reg);
  std::string line;
  for (long long i = 1; i <= 1'000'000; ++i) {
    if (i % 4 == 0)
      line = "[INFO] NPU_compute_time (ms): min = 1, max = 3, mean = 2, median = " + std::to_string(i) +
             ", percentile(99%) = 3";
    else if (i % 4 == 1)
      line = "[INFO] throughput 1000*batchsize.mean(1)/NPU_compute_time.mean(2): 500";
    else if (i % 1000 == 2)
      line = "[INFO] D2H_latency (ms): min = ?";
    else
      line = "[INFO] end to reset device " + std::to_string(i);
    p->feed_line(line, LineSource::Stdout, false, static_cast<double>(i));
  }
  p->finish(0);
  CHECK(sink.summaries == 250'000 * 5 + 250'000);
  CHECK(p->malformed_count() == 1'000);
  CHECK(sink.metrics == 6);
  CHECK(sink.summary_of("npu_compute_time_ms") == 1'000'000);
}
