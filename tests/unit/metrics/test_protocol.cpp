#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "harness/metrics/protocol.hpp"
#include "tests/unit/support/recording_sink.hpp"

using namespace perfgate;
using metrics::LineSource;
using metrics::ProtocolParser;

namespace {

using Step = test::RecordedStep;
using test::RecordingSink;

}  // namespace

TEST_CASE("step records with and without step numbers", "[metrics]") {
  RecordingSink sink;
  ProtocolParser p(sink);
  p.feed_file_line(R"({"step": 12, "step_time_ms": 34.2, "throughput": 930.1, "loss": 2.31})", false, 1.5);
  p.feed_file_line(R"({"step_time_ms": 35.0})", false, 1.6);  // no step: follows the last one
  p.feed_file_line(R"({"step_time_ms": 36.0})", false, 1.7);
  p.feed_file_line(R"({"step": 100, "step_time_ms": 30, "note": "checkpoint", "ok": true})", false, 1.8);
  REQUIRE(sink.steps.size() == 4);
  CHECK(sink.steps[0].step == 12);
  CHECK(sink.steps[0].t_s == 1.5);
  CHECK(sink.steps[0].values ==
        std::map<std::string, double>{{"step_time_ms", 34.2}, {"throughput", 930.1}, {"loss", 2.31}});
  CHECK(sink.steps[1].step == 13);
  CHECK(sink.steps[1].t_s == 1.6);
  CHECK(sink.steps[2].step == 14);
  CHECK(sink.steps[3].step == 100);
  // Strings and booleans are annotations, not metrics.
  CHECK(sink.steps[3].values == std::map<std::string, double>{{"step_time_ms", 30}});
  CHECK(sink.names == std::vector<std::string>{"step_time_ms", "throughput", "loss"});
  CHECK(p.malformed_count() == 0);
  CHECK(p.records() == 4);
}

TEST_CASE("a step number past what a long long holds is malformed, not converted", "[metrics]") {
  RecordingSink sink;
  ProtocolParser p(sink);
  p.feed_file_line(R"({"step": 1e30, "step_time_ms": 1})", false, 0);
  p.feed_file_line(R"({"step": 9e18, "step_time_ms": 2})", false, 0);
  REQUIRE(sink.steps.size() == 1);
  CHECK(sink.steps[0].step == 9000000000000000000LL);
  CHECK(p.malformed_count() == 1);
  CHECK_THAT(p.malformed().at(0).reason, Catch::Contains("below 9e18"));
}

TEST_CASE("the first record without a step number is step 0", "[metrics]") {
  RecordingSink sink;
  ProtocolParser p(sink);
  p.feed_file_line(R"({"throughput": 1})", false, 0);
  REQUIRE(sink.steps.size() == 1);
  CHECK(sink.steps[0].step == 0);
}

TEST_CASE("t_s in a record overrides the arrival time", "[metrics]") {
  RecordingSink sink;
  ProtocolParser p(sink);
  p.feed_file_line(R"({"step": 1, "t_s": 0.25, "throughput": 5})", false, 9.0);
  p.feed_file_line(R"({"step": 2, "throughput": 5})", false, 9.5);
  p.feed_file_line(R"({"step": 3, "t_s": "soon", "throughput": 5})", false, 9.75);  // ignored if not a number
  REQUIRE(sink.steps.size() == 3);
  CHECK(sink.steps[0].t_s == 0.25);
  CHECK(sink.steps[1].t_s == 9.5);
  CHECK(sink.steps[2].t_s == 9.75);
  // t_s is not a metric.
  CHECK(sink.steps[0].values.count("t_s") == 0);
  CHECK(std::find(sink.names.begin(), sink.names.end(), "t_s") == sink.names.end());
}

TEST_CASE("summary and meta records", "[metrics]") {
  RecordingSink sink;
  ProtocolParser p(sink);
  p.feed_file_line(
      R"({"meta": {"units": {"throughput": "samples/s", "hbm_mb": "MB"}, "better": {"step_time_ms": "lower", "throughput": "higher", "loss": "none"}}})",
      false, 0);
  p.feed_file_line(R"({"summary": {"first_step_ms": 2301.0, "accuracy": 0.91}})", false, 0);
  CHECK(sink.units == std::map<std::string, std::string>{{"throughput", "samples/s"}, {"hbm_mb", "MB"}});
  CHECK(sink.better.at("step_time_ms") == model::Better::Lower);
  CHECK(sink.better.at("throughput") == model::Better::Higher);
  CHECK(sink.better.at("loss") == model::Better::None);
  CHECK(sink.summaries == std::map<std::string, double>{{"first_step_ms", 2301.0}, {"accuracy", 0.91}});
  CHECK(sink.steps.empty());
  CHECK(p.malformed_count() == 0);

  SECTION("a bad better direction is malformed, the rest of the record counts") {
    p.feed_file_line(R"({"meta": {"better": {"a": "up", "b": "higher"}}})", false, 0);
    CHECK(p.malformed_count() == 1);
    CHECK(sink.better.at("b") == model::Better::Higher);
    CHECK(sink.better.count("a") == 0);
  }
  SECTION("a non-numeric summary value is malformed") {
    p.feed_file_line(R"({"summary": {"x": "fast", "y": 2}})", false, 0);
    CHECK(p.malformed_count() == 1);
    CHECK(sink.summaries.at("y") == 2);
    CHECK(sink.summaries.count("x") == 0);
  }
  SECTION("summary must be an object") {
    p.feed_file_line(R"({"summary": 5})", false, 0);
    CHECK(p.malformed_count() == 1);
  }
}

TEST_CASE("meta.kind marks facts; an unknown kind is malformed and names the metric", "[metrics]") {
  RecordingSink sink;
  ProtocolParser p(sink);
  p.feed_file_line(R"({"meta": {"kind": {"world_size": "fact", "loss": "measurement"}}})", false, 0);
  CHECK(sink.facts == std::set<std::string>{"world_size"});
  CHECK(p.malformed_count() == 0);
  p.feed_file_line(R"({"meta": {"kind": {"bucket_count": "setting", "tile": "fact"}}})", false, 0);
  CHECK(p.malformed_count() == 1);
  CHECK(sink.facts == std::set<std::string>{"world_size", "tile"});  // the good entry of the record still counts
  REQUIRE_FALSE(p.malformed().empty());
  CHECK(p.malformed().back().reason.find("meta.kind.bucket_count") != std::string::npos);
  p.feed_file_line(R"({"meta": {"kind": ["world_size"]}})", false, 0);
  CHECK(p.malformed_count() == 2);
}

TEST_CASE("stdout lines count only with the PERFGATE prefix", "[metrics]") {
  RecordingSink sink;
  ProtocolParser p(sink);
  p.feed_stdout_line("Epoch 1: loss 2.3", false, 0.1);
  p.feed_stdout_line(R"({"step": 1, "throughput": 7})", false, 0.2);  // no prefix: the workload's own output
  p.feed_stdout_line(R"(PERFGATE {"step": 2, "throughput": 8})", false, 0.3);
  p.feed_stdout_line(R"(PERFGATE{"step": 3, "throughput": 9})", false, 0.4);  // prefix needs the space
  p.feed_stdout_line(R"(perfgate {"step": 4, "throughput": 9})", false, 0.5);
  p.feed_stdout_line("PERFGATE not json", false, 0.6);
  REQUIRE(sink.steps.size() == 1);
  CHECK(sink.steps[0].step == 2);
  CHECK(sink.steps[0].values.at("throughput") == 8);
  CHECK(sink.steps[0].t_s == 0.3);
  REQUIRE(p.malformed_count() == 1);
  CHECK(p.malformed()[0].source == LineSource::Stdout);
  CHECK(p.malformed()[0].line_no == 6);  // stdout line numbers count every stdout line
}

TEST_CASE("malformed lines are counted with 1-based line numbers per source and never throw", "[metrics]") {
  RecordingSink sink;
  ProtocolParser p(sink);
  const std::string garbage("\x00\xff\xfe{\x01\x80\"", 7);
  std::vector<std::pair<std::string, const char*>> file_lines = {
      {R"({"step": 1, "throughput": 10})", nullptr},           // 1 ok
      {"{not json", "not valid JSON"},                         // 2
      {"[1, 2, 3]", "not a JSON object"},                      // 3
      {"42", "not a JSON object"},                             // 4
      {R"({"step": 2, "throughput": 1)", "not valid JSON"},    // 5: half a line
      {garbage, "not valid JSON"},                             // 6
      {R"({"step": 3, "note": "no numbers"})", "no numeric"},  // 7
      {R"({"step": 5, "t_s": 1.5})", "no numeric"},            // 8: t_s is not a metric
      {R"({"step": -1, "throughput": 1})", "\"step\""},        // 9
      {"", nullptr},                                           // 10: blank lines are skipped
      {R"({"step": 4, "throughput": 11})", nullptr},           // 11 ok
  };
  for (const auto& [line, _] : file_lines) REQUIRE_NOTHROW(p.feed_file_line(line, false, 0));
  REQUIRE_NOTHROW(p.feed_stdout_line("PERFGATE {oops", false, 0));       // stdout line 1
  REQUIRE_NOTHROW(p.feed_stdout_line("ordinary output", false, 0));      // stdout line 2
  REQUIRE_NOTHROW(p.feed_stdout_line("PERFGATE " + garbage, false, 0));  // stdout line 3

  CHECK(sink.steps.size() == 2);
  CHECK(p.malformed_count() == 10);
  const auto& bad = p.malformed();
  REQUIRE(bad.size() == 10);
  std::vector<long long> file_nos;
  std::size_t k = 0;
  for (std::size_t i = 0; i < file_lines.size(); ++i) {
    if (!file_lines[i].second) continue;
    INFO("file line " << i + 1);
    REQUIRE(k < bad.size());
    CHECK(bad[k].source == LineSource::File);
    CHECK(bad[k].line_no == static_cast<long long>(i + 1));
    CHECK_THAT(bad[k].reason, Catch::Contains(file_lines[i].second));
    ++k;
  }
  REQUIRE(k == 8);
  CHECK(bad[8].source == LineSource::Stdout);
  CHECK(bad[8].line_no == 1);
  CHECK(bad[9].source == LineSource::Stdout);
  CHECK(bad[9].line_no == 3);
  // Excerpts show non-printable bytes as '?'.
  for (char c : bad[4].excerpt) CHECK((static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f));
  CHECK(bad[4].excerpt.find('?') != std::string::npos);
}

TEST_CASE("a step that is not a number is malformed, whatever its JSON type", "[metrics]") {
  // The old DOM parser rejected these; the SAX fast path must not accept them
  // by silently dropping the "step" key and numbering the record itself.
  for (const char* line : {R"({"step": "three", "throughput": 1})", R"({"step": true, "throughput": 1})",
                           R"({"step": null, "throughput": 1})", R"({"throughput": 1, "step": "3"})"}) {
    INFO(line);
    RecordingSink sink;
    ProtocolParser p(sink);
    REQUIRE_NOTHROW(p.feed_file_line(line, false, 0));
    CHECK(sink.steps.empty());
    CHECK(p.malformed_count() == 1);
    if (!p.malformed().empty()) CHECK_THAT(p.malformed()[0].reason, Catch::Contains("\"step\""));
  }
}

TEST_CASE("summary and meta keys with a scalar value are malformed, not step records", "[metrics]") {
  for (const char* line : {R"({"meta": "x", "throughput": 5})", R"({"summary": null, "throughput": 5})",
                           R"({"meta": 1, "throughput": 5})"}) {
    INFO(line);
    RecordingSink sink;
    ProtocolParser p(sink);
    REQUIRE_NOTHROW(p.feed_file_line(line, false, 0));
    CHECK(sink.steps.empty());
    CHECK(p.malformed_count() == 1);
  }
}

TEST_CASE("excerpts of malformed lines are short", "[metrics]") {
  RecordingSink sink;
  ProtocolParser p(sink);
  p.feed_file_line(std::string(500, 'x'), false, 0);
  REQUIRE(p.malformed().size() == 1);
  CHECK(p.malformed()[0].excerpt.size() <= 83);
}

TEST_CASE("only the first malformed lines are kept, all are counted", "[metrics]") {
  RecordingSink sink;
  ProtocolParser p(sink);
  for (int i = 0; i < 100; ++i) p.feed_file_line("garbage", false, 0);
  CHECK(p.malformed_count() == 100);
  CHECK(p.malformed().size() == ProtocolParser::k_max_kept_malformed);
}

TEST_CASE("NaN and Infinity as Python writes them parse to non-finite values", "[metrics]") {
  RecordingSink sink;
  ProtocolParser p(sink);
  p.feed_file_line(R"({"step": 1, "loss": NaN, "grad_norm": Infinity, "x": -Infinity, "tag": "NaN Infinity"})", false,
                   0);
  p.feed_file_line(R"({"summary": {"final_loss": NaN}})", false, 0);
  REQUIRE(sink.steps.size() == 1);
  const auto& v = sink.steps[0].values;
  REQUIRE(v.count("loss") == 1);
  CHECK(std::isnan(v.at("loss")));
  CHECK(v.at("grad_norm") == std::numeric_limits<double>::infinity());
  CHECK(v.at("x") == -std::numeric_limits<double>::infinity());
  CHECK(v.count("tag") == 0);  // the string stays a string
  REQUIRE(sink.summaries.count("final_loss") == 1);
  CHECK(std::isnan(sink.summaries.at("final_loss")));
  CHECK(p.malformed_count() == 0);
  // A NaN step number is still an error.
  p.feed_file_line(R"({"step": NaN, "loss": 1})", false, 0);
  CHECK(p.malformed_count() == 1);
}

TEST_CASE("an oversized line counts as malformed", "[metrics]") {
  RecordingSink sink;
  ProtocolParser p(sink);
  p.feed_file_line(R"({"step": 1, "throughput": 10})", true, 0);
  p.feed_stdout_line(R"(PERFGATE {"step": 1, "throughput": 10})", true, 0);
  p.feed_stdout_line(std::string(100, 'x'), true, 0);  // the workload's own long line: ignored
  p.feed_file_line("", true, 0);                       // cut to nothing, but still oversized
  CHECK(sink.steps.empty());
  CHECK(p.malformed_count() == 3);
  REQUIRE(p.malformed().size() == 3);
  CHECK(p.malformed()[0].line_no == 1);
  CHECK(p.malformed()[1].source == LineSource::Stdout);
  CHECK(p.malformed()[2].line_no == 2);
}

TEST_CASE("distinct metric names are capped", "[metrics]") {
  RecordingSink sink;
  ProtocolParser p(sink);
  const auto cap = ProtocolParser::k_max_metrics;
  for (std::size_t i = 0; i < cap; ++i) p.feed_file_line("{\"m" + std::to_string(i) + "\": 1}", false, 0);
  CHECK(sink.names.size() == cap);
  CHECK(p.malformed_count() == 0);
  // One more name: refused and counted; known names in the same record still count.
  p.feed_file_line(R"({"one_too_many": 1, "m0": 2})", false, 0);
  CHECK(sink.names.size() == cap);
  CHECK(p.malformed_count() == 1);
  REQUIRE(sink.steps.size() == cap + 1);
  CHECK(sink.steps.back().values == std::map<std::string, double>{{"m0", 2}});
  // A record of only new names is malformed twice over (bad name, then nothing numeric) but keeps going.
  REQUIRE_NOTHROW(p.feed_file_line(R"({"another": 1})", false, 0));
  CHECK(sink.steps.size() == cap + 1);
}

TEST_CASE("invalid metric names are refused", "[metrics]") {
  RecordingSink sink;
  ProtocolParser p(sink);
  p.feed_file_line(R"({"bad name": 1, "ok.name/x:y-z": 2})", false, 0);
  REQUIRE(sink.steps.size() == 1);
  CHECK(sink.steps[0].values == std::map<std::string, double>{{"ok.name/x:y-z", 2}});
  CHECK(p.malformed_count() == 1);
}
