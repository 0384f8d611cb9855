#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "harness/metrics/output_parser.hpp"
#include "tests/unit/support/recording_sink.hpp"

using namespace perfgate;
using metrics::LineSource;

namespace {

model::LogPattern pattern(std::string regex, bool summary = false) {
  model::LogPattern p;
  p.regex = std::move(regex);
  p.summary = summary;
  p.loc = {"suite.yaml", 7, 9};
  return p;
}

}  // namespace

TEST_CASE("regex parser: named groups become metrics, a step group numbers the record", "[parsers][regex]") {
  test::RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto p = pattern(R"(step (?<step>\d+): (?<step_time_ms>[0-9.]+) ms, loss (?P<loss>\S+))");
  p.units["step_time_ms"] = "ms";
  p.better["loss"] = model::Better::Lower;
  auto parser = metrics::make_regex_parser(reg, {p});
  REQUIRE(parser);
  auto& rp = **parser;
  rp.feed_line("[rank0] step 10: 41.5 ms, loss 2.5", LineSource::Stdout, false, 1.0);
  rp.feed_line("unrelated output 12 34", LineSource::Stdout, false, 1.1);
  rp.feed_line("step 11: 40.0 ms, loss nan\r", LineSource::Stderr, false, 1.2);
  REQUIRE(sink.steps.size() == 2);
  CHECK(sink.steps[0].step == 10);
  CHECK(sink.steps[0].t_s == 1.0);
  CHECK(sink.steps[0].values.at("step_time_ms") == 41.5);
  CHECK(sink.steps[0].values.at("loss") == 2.5);
  CHECK(sink.steps[1].step == 11);
  CHECK(std::isnan(sink.steps[1].values.at("loss")));  // a NaN loss is a value worth keeping
  CHECK(sink.units.at("step_time_ms") == "ms");
  CHECK(sink.better.at("loss") == model::Better::Lower);
  CHECK(sink.better.count("step_time_ms") == 0);  // left to what the name implies
  CHECK(rp.malformed_count() == 0);
  CHECK(rp.records() == 2);
}

TEST_CASE("regex parser: without a step group records count up; summaries keep the last match", "[parsers][regex]") {
  test::RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto parser = metrics::make_regex_parser(
      reg, {pattern(R"(time=(?<step_time_ms>[0-9.]+))"), pattern(R"(^accuracy: (?<accuracy>[0-9.]+)$)", true)});
  REQUIRE(parser);
  for (const char* line : {"time=5", "time=6", "accuracy: 0.5", "time=7", "accuracy: 0.75"})
    (*parser)->feed_line(line, LineSource::Stdout, false, 0);
  REQUIRE(sink.steps.size() == 3);
  CHECK(sink.steps[0].step == 0);
  CHECK(sink.steps[2].step == 2);
  CHECK(sink.series("step_time_ms") == std::vector<double>{5, 6, 7});
  CHECK(sink.summaries.at("accuracy") == 0.75);
}

TEST_CASE("regex parser: a matched line whose number does not read is counted with its line", "[parsers][regex]") {
  test::RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto parser = metrics::make_regex_parser(reg, {pattern(R"(step (?<step>\S+) took (?<step_time_ms>\S+) ms)")});
  REQUIRE(parser);
  auto& rp = **parser;
  rp.feed_line("step 1 took 3.5 ms", LineSource::Stdout, false, 0);
  rp.feed_line("step 2 took 3..5 ms", LineSource::Stdout, false, 0);
  rp.feed_line("step -4 took 3.5 ms", LineSource::Stdout, false, 0);
  rp.feed_line("step 5 took 3.5 ms", LineSource::Stdout, false, 0);
  CHECK(sink.series("step_time_ms") == std::vector<double>{3.5, 3.5});
  REQUIRE(rp.malformed_count() == 2);
  const auto& bad = rp.malformed();
  CHECK(bad[0].line_no == 2);
  CHECK_THAT(bad[0].reason, Catch::Contains("step_time_ms '3..5' is not a number"));
  CHECK(bad[1].line_no == 3);
  CHECK_THAT(bad[1].reason, Catch::Contains("step '-4'"));
}

TEST_CASE("regex parser: optional groups that took no part are left out", "[parsers][regex]") {
  test::RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto parser = metrics::make_regex_parser(reg, {pattern(R"(t=(?<step_time_ms>[0-9.]+)( mem=(?<mem_mb>[0-9.]+))?)")});
  REQUIRE(parser);
  (*parser)->feed_line("t=4", LineSource::Stdout, false, 0);
  (*parser)->feed_line("t=5 mem=100", LineSource::Stdout, false, 0);
  REQUIRE(sink.steps.size() == 2);
  CHECK(sink.steps[0].values.count("mem_mb") == 0);
  CHECK(sink.steps[1].values.at("mem_mb") == 100);
}

TEST_CASE("regex parser: patterns that cannot work are refused with their place in the suite", "[parsers][regex]") {
  test::RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto no_metric = metrics::make_regex_parser(reg, {pattern(R"(step (?<step>\d+))")});
  REQUIRE_FALSE(no_metric);
  CHECK_THAT(no_metric.error().message, Catch::Contains("suite.yaml:7:9") && Catch::Contains("names no metric"));
  auto broken = metrics::make_regex_parser(reg, {pattern(R"((?<x>[0-9)")});
  REQUIRE_FALSE(broken);
  CHECK_THAT(broken.error().message, Catch::Contains("does not compile"));
  auto p = pattern(R"((?<x>\d+))");
  p.units["y"] = "ms";
  auto stray = metrics::make_regex_parser(reg, {p});
  REQUIRE_FALSE(stray);
  CHECK_THAT(stray.error().message, Catch::Contains("'y', which is not a group"));
  CHECK_FALSE(metrics::make_regex_parser(reg, {}));
}

TEST_CASE("regex parser: a 1 MB line is matched; lines the reader cut are counted in a note", "[parsers][regex]") {
  test::RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto parser = metrics::make_regex_parser(reg, {pattern(R"(v=(?<v>\d+)$)")});
  REQUIRE(parser);
  // The number at the end of a 1,000,000-byte line (std::regex skipped lines over 4 KiB).
  std::string long_line = std::string(1000000 - 5, 'x') + " v=1";
  REQUIRE(long_line.size() == 999999);
  (*parser)->feed_line(long_line, LineSource::Stdout, false, 0);
  (*parser)->feed_line("v=2", LineSource::Stdout, false, 0);
  (*parser)->feed_line(std::string(1 << 20, 'y'), LineSource::Stderr, true, 0);  // cut by the line reader
  (*parser)->feed_line(std::string(1 << 20, 'y'), LineSource::Stderr, true, 0);
  CHECK(sink.series("v") == std::vector<double>{1, 2});
  auto notes = (*parser)->notes();
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("2 line(s) longer than the 1 MiB") && Catch::Contains("first: stderr line 1"));
}

TEST_CASE("regex parser: a pattern with catastrophic backtracking in std::regex runs in linear time",
          "[parsers][regex]") {
  test::RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  // (a+)+b against a's without a b is exponential for a backtracking engine.
  auto parser = metrics::make_regex_parser(reg, {pattern(R"(^(a+)+b (?<v>\d+))")});
  REQUIRE(parser);
  (*parser)->feed_line(std::string(100000, 'a'), LineSource::Stdout, false, 0);
  (*parser)->feed_line("aaab 7", LineSource::Stdout, false, 0);
  CHECK(sink.series("v") == std::vector<double>{7});
}

TEST_CASE("regex parser: back-references and look-around are refused with the reason", "[parsers][regex]") {
  test::RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto back = metrics::make_regex_parser(reg, {pattern(R"((\w+) \1 (?<v>\d+))")});
  REQUIRE_FALSE(back);
  CHECK_THAT(back.error().message,
             Catch::Contains("suite.yaml:7:9") && Catch::Contains("back-references are not supported"));
  auto ahead = metrics::make_regex_parser(reg, {pattern(R"((?<v>\d+)(?= ms))")});
  REQUIRE_FALSE(ahead);
  CHECK_THAT(ahead.error().message, Catch::Contains("look-around is not supported"));
  auto named_back = metrics::make_regex_parser(reg, {pattern(R"((?<v>\d+) \k<v>)")});
  REQUIRE_FALSE(named_back);
  CHECK_THAT(named_back.error().message, Catch::Contains("back-references"));
}

TEST_CASE("regex parser: group names may contain dots, and are checked", "[parsers][regex]") {
  test::RecordingSink sink;
  metrics::MetricRegistry reg(sink);
  auto parser = metrics::make_regex_parser(reg, {pattern(R"(hbm (?<npu.hbm_mb>\d+) (?i:MB))")});
  REQUIRE(parser);
  (*parser)->feed_line("hbm 1024 mb", LineSource::Stdout, false, 0);
  CHECK(sink.series("npu.hbm_mb") == std::vector<double>{1024});
  auto twice = metrics::make_regex_parser(reg, {pattern(R"((?<a>\d+) (?<a>\d+))")});
  REQUIRE_FALSE(twice);
  CHECK_THAT(twice.error().message, Catch::Contains("used twice"));
  // "(?<x>?:a)" would have become "(?:a)": refused, as is anything RE2 numbers otherwise.
  auto injected = metrics::make_regex_parser(reg, {pattern(R"((?P<a.b>\d+)(?<cb>?))")});
  REQUIRE_FALSE(injected);
  CHECK_THAT(injected.error().message, Catch::Contains("group 'cb' starts with '?'"));
  auto bad = metrics::make_regex_parser(reg, {pattern(R"((?<1x>\d+))")});
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("not a valid group name"));
}

TEST_CASE("parse_number reads numbers as logs print them", "[parsers]") {
  CHECK(metrics::parse_number(" 1.000000E-04 ") == 1e-4);
  CHECK(metrics::parse_number("+3") == 3);
  CHECK(metrics::parse_number("-2.5") == -2.5);
  CHECK(std::isnan(*metrics::parse_number("nan")));
  CHECK(std::isnan(*metrics::parse_number("NaN")));
  CHECK(std::isinf(*metrics::parse_number("inf")));
  CHECK(std::isinf(*metrics::parse_number("1e999")));
  CHECK_FALSE(metrics::parse_number(""));
  CHECK_FALSE(metrics::parse_number("12ms"));
  CHECK_FALSE(metrics::parse_number("3..5"));
  CHECK_FALSE(metrics::parse_number("abc"));
}

TEST_CASE("snake_case names metrics after log keys", "[parsers]") {
  CHECK(metrics::snake_case("elapsed time per iteration (ms)") == "elapsed_time_per_iteration_ms");
  CHECK(metrics::snake_case("E2ETrainingTime") == "e2etrainingtime");
  CHECK(metrics::snake_case("HBM Usage Rate(%)") == "hbm_usage_rate_pct");
  CHECK(metrics::snake_case("  lm loss ") == "lm_loss");
}
