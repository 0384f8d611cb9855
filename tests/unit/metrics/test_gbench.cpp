#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/metrics/output_parser.hpp"
#include "tests/unit/support/paths.hpp"
#include "tests/unit/support/recording_sink.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;
using metrics::LineSource;
using model::Better;
using Values = std::map<std::string, double>;

namespace {

const std::string k_data = perfgate::test::data_dir() + "/gbench/";
constexpr double k_t_s = 7.5;  // the trial's end, passed to finish()
const std::string k_debug_note = "Google Benchmark library built as debug: timings may not be representative";

using Step = test::RecordedStep;
using test::RecordingSink;

// A gbench parser that has read `path` at the end of a trial.
struct Parsed {
  RecordingSink sink;
  metrics::MetricRegistry registry{sink};
  std::unique_ptr<metrics::OutputParser> parser;

  explicit Parsed(const std::string& path) : parser(metrics::make_gbench_parser(registry, path)) {
    parser->finish(k_t_s);
  }
  Parsed(const Parsed&) = delete;
  Parsed& operator=(const Parsed&) = delete;

  std::vector<std::string> reasons() const {
    std::vector<std::string> out;
    for (const auto& m : parser->malformed()) out.push_back(m.reason);
    return out;
  }
};

std::vector<long long> step_numbers(const std::vector<Step>& steps) {
  std::vector<long long> out;
  for (const auto& s : steps) out.push_back(s.step);
  return out;
}

// One iteration entry of a generated file.
std::string iteration_entry(const std::string& name, long long rep, double real_time, const std::string& extra = "") {
  return fmt::format(R"({{"name": "{0}", "run_name": "{0}", "run_type": "iteration", "repetitions": 10, )"
                     R"("repetition_index": {1}, "threads": 1, "iterations": 100, "real_time": {2}, )"
                     R"("cpu_time": {2}, "time_unit": "ns"{3}}})",
                     name, rep, real_time, extra);
}

}  // namespace

TEST_CASE("gbench: every repetition of real Google Benchmark output is one step record", "[gbench]") {
  Parsed p(k_data + "demo_reps3.json");
  CHECK_FALSE(p.parser->reads_lines());
  CHECK(p.parser->malformed_count() == 0);
  // Debian's libbenchmark 1.7.1 reports itself as a debug build.
  CHECK(p.parser->notes() == std::vector<std::string>{k_debug_note});

  CHECK(p.sink.name_set() ==
        std::set<std::string>{"BM_vector_sum/1024.real_time_ns", "BM_vector_sum/1024.cpu_time_ns",
                              "BM_vector_sum/1024.bytes_per_second", "BM_vector_sum/1024.items_per_second",
                              "BM_vector_sum/16384.real_time_ns", "BM_vector_sum/16384.cpu_time_ns",
                              "BM_vector_sum/16384.bytes_per_second", "BM_vector_sum/16384.items_per_second",
                              "BM_widgets.real_time_ns", "BM_widgets.cpu_time_ns", "BM_widgets.widgets",
                              "BM_widgets.rejected_widgets", "BM_spin.real_time_ns", "BM_spin.cpu_time_ns"});
  // 4 benchmarks x 3 repetitions; the mean/median/stddev/cv aggregates after each are not records.
  CHECK(p.parser->records() == 12);
  REQUIRE(p.sink.steps.size() == 12);
  for (const auto& s : p.sink.steps) CHECK(s.t_s == k_t_s);
  for (const char* bench : {"BM_vector_sum/1024", "BM_vector_sum/16384", "BM_widgets", "BM_spin"})
    CHECK(step_numbers(p.sink.of(bench)) == std::vector<long long>{0, 1, 2});

  CHECK(p.sink.steps[0].values == Values{{"BM_vector_sum/1024.real_time_ns", 3.4347679114189697e+02},
                                         {"BM_vector_sum/1024.cpu_time_ns", 3.4223300537780966e+02},
                                         {"BM_vector_sum/1024.bytes_per_second", 2.3936908104337875e+10},
                                         {"BM_vector_sum/1024.items_per_second", 2.9921135130422344e+09}});
  auto widgets = p.sink.of("BM_widgets");
  REQUIRE(widgets.size() == 3);
  CHECK(widgets[2].values == Values{{"BM_widgets.real_time_ns", 6.8709205370641243e+01},
                                    {"BM_widgets.cpu_time_ns", 6.8508117333231311e+01},
                                    {"BM_widgets.rejected_widgets", 0.0},
                                    {"BM_widgets.widgets", 2.0918200000000000e+05}});
  auto spin = p.sink.of("BM_spin");
  REQUIRE(spin.size() == 3);
  CHECK(spin[1].values ==
        Values{{"BM_spin.real_time_ns", 8.372751161131904e+03}, {"BM_spin.cpu_time_ns", 8.243338372093016e+03}});
  auto big = p.sink.of("BM_vector_sum/16384");
  REQUIRE(big.size() == 3);
  CHECK(big[2].values.at("BM_vector_sum/16384.items_per_second") == 3.053413061126954e+09);

  // Times are lower-is-better in the file's unit, rates higher-is-better; counters are left to their names.
  CHECK(p.sink.units.at("BM_vector_sum/1024.real_time_ns") == "ns");
  CHECK(p.sink.units.at("BM_vector_sum/1024.cpu_time_ns") == "ns");
  CHECK(p.sink.units.at("BM_vector_sum/1024.items_per_second") == "items/s");
  CHECK(p.sink.units.at("BM_vector_sum/1024.bytes_per_second") == "B/s");
  CHECK(p.sink.better.at("BM_spin.real_time_ns") == Better::Lower);
  CHECK(p.sink.better.at("BM_spin.cpu_time_ns") == Better::Lower);
  CHECK(p.sink.better.at("BM_vector_sum/16384.items_per_second") == Better::Higher);
  CHECK(p.sink.better.at("BM_vector_sum/16384.bytes_per_second") == Better::Higher);
  CHECK(p.sink.units.count("BM_widgets.widgets") == 0);
  CHECK(p.sink.better.count("BM_widgets.widgets") == 0);
  CHECK(p.sink.summaries.empty());

  // The file is read once; lines of the workload's output are not its business.
  p.parser->feed_line(R"({"step": 1, "loss": 2})", LineSource::Stdout, false, 8.0);
  p.parser->finish(9.0);
  CHECK(p.parser->records() == 12);
  CHECK(p.sink.steps.size() == 12);
}

TEST_CASE("gbench: a file of aggregates only is read from each median", "[gbench]") {
  Parsed p(k_data + "demo_aggregates_only.json");
  CHECK(p.parser->malformed_count() == 0);
  CHECK(p.parser->notes() ==
        std::vector<std::string>{
            k_debug_note, k_data + "demo_aggregates_only.json: 4 benchmarks read from aggregates, the file has no "
                                   "repetitions of them: BM_vector_sum/1024 (median), BM_vector_sum/16384 (median), "
                                   "BM_widgets (median), BM_spin (median)"});
  CHECK(p.parser->records() == 4);
  REQUIRE(p.sink.steps.size() == 4);
  for (const auto& s : p.sink.steps) {
    CHECK(s.step == 0);
    CHECK(s.t_s == k_t_s);
  }
  CHECK(p.sink.steps[0].values == Values{{"BM_vector_sum/1024.real_time_ns", 3.4694264290285355e+02},
                                         {"BM_vector_sum/1024.cpu_time_ns", 3.4457792255685291e+02},
                                         {"BM_vector_sum/1024.bytes_per_second", 2.3774012969877304e+10},
                                         {"BM_vector_sum/1024.items_per_second", 2.9717516212346630e+09}});
  CHECK(p.sink.steps[1].values.at("BM_vector_sum/16384.real_time_ns") == 6.182432088479737e+03);
  CHECK(p.sink.steps[2].values == Values{{"BM_widgets.real_time_ns", 7.0142142661685450e+01},
                                         {"BM_widgets.cpu_time_ns", 7.0152894223616240e+01},
                                         {"BM_widgets.rejected_widgets", 0.0},
                                         {"BM_widgets.widgets", 1.98948e+05}});
  // The cv aggregate of rejected_widgets is a bare NaN in this file: reading goes on past it.
  CHECK(p.sink.steps[3].values ==
        Values{{"BM_spin.real_time_ns", 8.178265880440664e+03}, {"BM_spin.cpu_time_ns", 8.180084705882342e+03}});
  CHECK(p.sink.units.at("BM_spin.real_time_ns") == "ns");
  CHECK(p.sink.better.at("BM_vector_sum/16384.items_per_second") == Better::Higher);
}

TEST_CASE("gbench: aggregates count only for benchmarks without repetitions in the file", "[gbench]") {
  Parsed p(k_data + "aggregates_mixed.json");
  CHECK(p.parser->malformed_count() == 0);
  // BM_c's repetitions come after its median and replace it; BM_e has only a stddev, BM_f only BigO and RMS.
  CHECK(p.parser->notes() ==
        std::vector<std::string>{k_data + "aggregates_mixed.json: 4 benchmarks read from aggregates, the file has no "
                                          "repetitions of them: BM_a (median), BM_b (mean), BM_g (median), "
                                          "BM_h (median)"});
  // Repetitions are handed on as they are read, aggregates at the end.
  REQUIRE(p.sink.steps.size() == 8);
  CHECK(p.parser->records() == 8);
  auto c = p.sink.of("BM_c");
  REQUIRE(c.size() == 2);
  CHECK(step_numbers(c) == std::vector<long long>{0, 1});
  CHECK(c[0].values == Values{{"BM_c.real_time_ns", 30.0}, {"BM_c.cpu_time_ns", 29.0}});
  CHECK(c[1].values == Values{{"BM_c.real_time_ns", 31.0}, {"BM_c.cpu_time_ns", 30.0}});
  auto d = p.sink.of("BM_d");
  REQUIRE(d.size() == 2);
  CHECK(d[1].values == Values{{"BM_d.real_time_ns", 42.0}, {"BM_d.cpu_time_ns", 41.0}});

  // The median wins over the mean that came first; stddev and cv are not values of the benchmark.
  auto a = p.sink.of("BM_a");
  REQUIRE(a.size() == 1);
  CHECK(a[0].step == 0);
  CHECK(a[0].values == Values{{"BM_a.real_time_ns", 100.0},
                              {"BM_a.cpu_time_ns", 99.0},
                              {"BM_a.items_per_second", 1.0e+07},
                              {"BM_a.widgets", 42.0}});
  auto b = p.sink.of("BM_b");
  REQUIRE(b.size() == 1);
  CHECK(b[0].values == Values{{"BM_b.real_time_ms", 5.5}, {"BM_b.cpu_time_ms", 5.25}});
  CHECK(p.sink.units.at("BM_b.real_time_ms") == "ms");
  // Without run_name the benchmark is the entry's name less "_<aggregate>".
  auto g = p.sink.of("BM_g");
  REQUIRE(g.size() == 1);
  CHECK(g[0].values == Values{{"BM_g.real_time_us", 70.0}, {"BM_g.cpu_time_us", 69.0}});
  // A median before the mean (files merged or reordered) still wins.
  auto h = p.sink.of("BM_h");
  REQUIRE(h.size() == 1);
  CHECK(h[0].values == Values{{"BM_h.real_time_ns", 80.0}, {"BM_h.cpu_time_ns", 79.0}});
  CHECK(p.sink.of("BM_e").empty());
  CHECK(p.sink.of("BM_f").empty());
  for (const auto& name : p.sink.names) {
    CHECK_FALSE(name.starts_with("BM_e."));
    CHECK_FALSE(name.starts_with("BM_f."));
    CHECK_FALSE(name.starts_with("BM_g_median"));
  }
}

TEST_CASE("gbench: repetitions of different benchmarks interleaved", "[gbench]") {
  Parsed p(k_data + "interleaved.json");
  CHECK(p.parser->malformed_count() == 0);
  CHECK(p.parser->notes().empty());
  REQUIRE(p.sink.steps.size() == 6);
  // Step numbers are the repetition indexes, in file order, whatever the order.
  auto x = p.sink.of("BM_x/8");
  REQUIRE(x.size() == 3);
  CHECK(step_numbers(x) == std::vector<long long>{1, 0, 2});
  CHECK(x[0].values == Values{{"BM_x/8.real_time_ns", 110.0}, {"BM_x/8.cpu_time_ns", 109.0}});
  CHECK(x[1].values == Values{{"BM_x/8.real_time_ns", 100.0}, {"BM_x/8.cpu_time_ns", 99.0}});
  CHECK(x[2].values == Values{{"BM_x/8.real_time_ns", 120.0}, {"BM_x/8.cpu_time_ns", 119.0}});
  auto y = p.sink.of("BM_y/8");
  REQUIRE(y.size() == 3);
  CHECK(step_numbers(y) == std::vector<long long>{2, 0, 1});
  CHECK(y[2].values == Values{{"BM_y/8.real_time_ns", 210.0}, {"BM_y/8.cpu_time_ns", 209.0}});
  CHECK(p.sink.name_set() == std::set<std::string>{"BM_x/8.real_time_ns", "BM_x/8.cpu_time_ns",  //
                                                   "BM_y/8.real_time_ns", "BM_y/8.cpu_time_ns"});
}

TEST_CASE("gbench: failed benchmarks are malformed entries with their message", "[gbench]") {
  Parsed p(k_data + "error.json");
  REQUIRE(p.parser->malformed_count() == 2);
  const auto& bad = p.parser->malformed();
  REQUIRE(bad.size() == 2);
  CHECK(bad[0].source == LineSource::File);
  CHECK(bad[0].line_no == 1);  // the entry's place in "benchmarks", from 1
  CHECK(bad[0].reason == "benchmark BM_open_file failed: cannot open /data/input.bin");
  CHECK(bad[0].excerpt == "BM_open_file");
  CHECK(bad[1].line_no == 3);
  CHECK(bad[1].reason == "benchmark BM_write/threads:2 failed: (no error message)");
  CHECK(bad[1].excerpt == "BM_write/threads:2");
  // No values of a failed run, not even its zero times; "error_occurred": false is an ordinary run.
  CHECK(p.sink.name_set() == std::set<std::string>{"BM_parse.real_time_ns", "BM_parse.cpu_time_ns",
                                                   "BM_still_fine.real_time_ns", "BM_still_fine.cpu_time_ns"});
  REQUIRE(p.sink.steps.size() == 2);
  CHECK(p.sink.steps[0].values == Values{{"BM_parse.real_time_ns", 1.5e+03}, {"BM_parse.cpu_time_ns", 1.4e+03}});
  CHECK(p.sink.steps[1].values == Values{{"BM_still_fine.real_time_ns", 2.0}, {"BM_still_fine.cpu_time_ns", 1.0}});
  CHECK(p.parser->notes().empty());
}

TEST_CASE("gbench: the time unit names the time metrics", "[gbench]") {
  Parsed p(k_data + "time_units.json");
  CHECK(p.parser->malformed_count() == 0);
  REQUIRE(p.sink.steps.size() == 4);
  CHECK(p.sink.steps[0].values == Values{{"BM_fast.real_time_us", 12.5}, {"BM_fast.cpu_time_us", 12.25}});
  CHECK(p.sink.steps[1].values == Values{{"BM_slow.real_time_ms", 250.0}, {"BM_slow.cpu_time_ms", 3.5}});
  CHECK(p.sink.steps[2].values == Values{{"BM_glacial.real_time_s", 2.0}, {"BM_glacial.cpu_time_s", 1.75}});
  // No time_unit: the library's default, nanoseconds.
  CHECK(p.sink.steps[3].values == Values{{"BM_default.real_time_ns", 7.0}, {"BM_default.cpu_time_ns", 6.0}});
  CHECK(p.sink.units == std::map<std::string, std::string>{{"BM_fast.real_time_us", "us"},
                                                           {"BM_fast.cpu_time_us", "us"},
                                                           {"BM_slow.real_time_ms", "ms"},
                                                           {"BM_slow.cpu_time_ms", "ms"},
                                                           {"BM_glacial.real_time_s", "s"},
                                                           {"BM_glacial.cpu_time_s", "s"},
                                                           {"BM_default.real_time_ns", "ns"},
                                                           {"BM_default.cpu_time_ns", "ns"}});
  for (const auto& [name, b] : p.sink.better) CHECK(b == Better::Lower);
  CHECK(p.sink.better.size() == 8);
}

TEST_CASE("gbench: benchmark names become valid, unique metric names", "[gbench]") {
  Parsed p(k_data + "odd_names.json");
  REQUIRE(p.sink.steps.size() == 8);
  for (const auto& name : p.sink.names) {
    CHECK(metrics::valid_metric_name(name));
    CHECK(name.size() <= 128);
  }
  // Characters other than letters, digits and _ . - / : become '_', in benchmark and counter names alike.
  CHECK(p.sink.steps[0].values == Values{{"BM_sort_std::vector_int___8_/1024/real_time.real_time_ns", 10.0},
                                         {"BM_sort_std::vector_int___8_/1024/real_time.cpu_time_ns", 9.5},
                                         {"BM_sort_std::vector_int___8_/1024/real_time.cache_misses", 3.0},
                                         {"BM_sort_std::vector_int___8_/1024/real_time.__ops", 7.0}});
  CHECK(p.sink.steps[1].values == Values{{"BM_a.real_time_ns", 11.0}, {"BM_a.cpu_time_ns", 10.5}});
  // "BM a" would read as "BM_a", taken already: the hash of its own name keeps the two apart.
  CHECK(p.sink.steps[2].values == Values{{"BM_a_b88e532b.real_time_ns", 12.0}, {"BM_a_b88e532b.cpu_time_ns", 11.5}});
  // Names past the limit are cut and carry the hash of the whole name, so two cut alike stay apart.
  const std::string cut = "BM_" + std::string(99, 'x');
  CHECK(p.sink.steps[3].values ==
        Values{{cut + "_c65360bb.real_time_ns", 13.0}, {cut + "_c65360bb.cpu_time_ns", 12.5}});
  CHECK(p.sink.steps[4].values ==
        Values{{cut + "_c753624e.real_time_ns", 14.0}, {cut + "_c753624e.cpu_time_ns", 13.5}});
  const std::string counter = "BM_counters." + std::string(107, 'c') + "_6d35f3a3";
  CHECK(p.sink.steps[5].values ==
        Values{{"BM_counters.real_time_ns", 15.0}, {"BM_counters.cpu_time_ns", 14.5}, {counter, 16.0}});
  CHECK(p.sink.steps[6].values ==
        Values{{"BM__quoted__path.real_time_ns", 17.0}, {"BM__quoted__path.cpu_time_ns", 16.5}});
  // A counter named like the time metric, and two counters that differ only in invalid characters: one value per
  // metric, the library's own or the first in name order, and the other is counted.
  CHECK(p.sink.steps[7].values ==
        Values{{"BM_clash.real_time_ns", 18.0}, {"BM_clash.cpu_time_ns", 17.5}, {"BM_clash.a_b", 1.0}});
  CHECK(p.reasons() ==
        std::vector<std::string>{"benchmark BM_clash: field 'a_b' not recorded: metric BM_clash.a_b has a value "
                                 "already",
                                 "benchmark BM_clash: field 'real_time_ns' not recorded: metric BM_clash.real_time_ns "
                                 "has a value already"});
  CHECK(p.parser->malformed()[0].line_no == 8);
}

TEST_CASE("gbench: NaN and Infinity as the library writes them", "[gbench]") {
  Parsed p(k_data + "nonfinite.json");
  CHECK(p.parser->malformed_count() == 0);
  REQUIRE(p.sink.steps.size() == 2);
  const auto& v = p.sink.steps[0].values;
  // The tokens inside strings are left alone; the label is not a metric even when it reads "N".
  CHECK(v.size() == 6);
  CHECK(v.at("BM_NaN/Infinity.real_time_ns") == 5.0);
  CHECK(v.at("BM_NaN/Infinity.cpu_time_ns") == 4.0);
  CHECK(std::isnan(v.at("BM_NaN/Infinity.hit_ratio")));
  CHECK(std::isnan(v.at("BM_NaN/Infinity.drift")));
  CHECK(v.at("BM_NaN/Infinity.speedup") == std::numeric_limits<double>::infinity());
  CHECK(v.at("BM_NaN/Infinity.loss_delta") == -std::numeric_limits<double>::infinity());
  CHECK(p.sink.steps[1].values == Values{{"BM__NaN__-Infinity.real_time_ns", 6.0},
                                         {"BM__NaN__-Infinity.cpu_time_ns", 5.0},
                                         {"BM__NaN__-Infinity.ratio", 0.5}});

  SECTION("a token cut by the end of a read chunk is still found") {
    // The file is read 64 KiB at a time; put the token at every offset around the first chunk's end.
    test::TempDir dir("gbench");
    for (std::size_t token_at = 65536 - 10; token_at <= 65536 + 1; ++token_at) {
      for (std::string token : {"-Infinity", "NaN"}) {
        std::string head = R"({"benchmarks": [{"name": "BM_pad", "run_type": "iteration", "repetition_index": 0, )"
                           R"("real_time": 1.0, "cpu_time": 1.0, "time_unit": "ns", "label": ")";
        std::string tail = R"(", "delta": )";
        std::string text = head + std::string(token_at - head.size() - tail.size(), 'N') + tail + token + "}]}";
        auto path = dir / "pad.json";
        test::write_file(path, text);
        Parsed q(path.string());
        INFO("token " << token << " at byte " << token_at);
        CHECK(q.parser->malformed_count() == 0);
        REQUIRE(q.sink.steps.size() == 1);
        double delta = q.sink.steps[0].values.at("BM_pad.delta");
        if (token == "NaN")
          CHECK(std::isnan(delta));
        else
          CHECK(delta == -std::numeric_limits<double>::infinity());
      }
    }
  }
}

TEST_CASE("gbench: a truncated file keeps the entries before the cut", "[gbench]") {
  const std::string path = k_data + "truncated.json";
  Parsed p(path);
  // The first two repetitions of BM_vector_sum/1024 are whole; the third is cut in the middle.
  REQUIRE(p.sink.steps.size() == 2);
  CHECK(step_numbers(p.sink.steps) == std::vector<long long>{0, 1});
  CHECK(p.sink.steps[0].values.at("BM_vector_sum/1024.real_time_ns") == 3.4347679114189697e+02);
  CHECK(p.sink.steps[1].values.at("BM_vector_sum/1024.real_time_ns") == 3.4491933290996900e+02);
  CHECK(p.parser->notes() == std::vector<std::string>{k_debug_note});
  REQUIRE(p.parser->malformed_count() == 1);
  const auto& bad = p.parser->malformed()[0];
  CHECK(bad.source == LineSource::File);
  CHECK(bad.line_no == 0);
  auto size = std::filesystem::file_size(path);
  CHECK(bad.reason ==
        fmt::format("{}: not valid JSON at byte {} (the file ends early: was the benchmark binary stopped?): parse "
                    "error at line 78, column 21: syntax error while parsing object key - invalid string: missing "
                    "closing quote; last read: '\"repetition_in'; expected string literal",
                    path, size + 1));
}

TEST_CASE("gbench: a string or number over 1 MiB ends the file there, the entries before it kept", "[gbench]") {
  // The JSON parser would hold such a token whole and copy it into its error
  // (a file cut inside a 200 MB string took 1.1 GB); the reader stops at 1 MiB.
  test::TempDir dir("gbench");
  const std::string entry = R"({"name": "BM_a", "run_type": "iteration", "repetition_index": 0, )"
                            R"("real_time": 2.0, "cpu_time": 1.0, "time_unit": "ns"})";
  const std::string head = R"({"benchmarks": [)" + entry + ", ";
  for (bool in_string : {true, false}) {
    INFO((in_string ? "a string" : "a number"));
    const std::string token = in_string ? "\"" + std::string(3 << 20, 'a') : std::string(3 << 20, '7');
    const std::string text = head + R"({"name": "BM_b", "real_time": )" + token;  // cut, as a stopped binary leaves it
    auto path = dir / "long.json";
    test::write_file(path, text);
    Parsed p(path.string());
    REQUIRE(p.sink.steps.size() == 1);
    CHECK(p.sink.steps[0].values.at("BM_a.real_time_ns") == 2.0);
    REQUIRE(p.parser->malformed_count() == 1);
    const auto at = head.size() + std::string(R"({"name": "BM_b", "real_time": )").size() + (1 << 20) + 1;
    CHECK(p.parser->malformed()[0].reason ==
          fmt::format("{}: a string or number longer than 1 MiB at byte {}: not Google Benchmark JSON output (what "
                      "was read before it is kept)",
                      path.string(), at));
  }
  SECTION("a token just under the limit is read") {
    const std::string label(1000000, 'x');
    const std::string text = R"({"benchmarks": [{"name": "BM_c", "run_type": "iteration", "repetition_index": 0, )"
                             R"("real_time": 3.0, "cpu_time": 1.0, "time_unit": "ns", "label": ")" +
                             label + R"("}]})";
    auto path = dir / "label.json";
    test::write_file(path, text);
    Parsed p(path.string());
    CHECK(p.parser->malformed_count() == 0);
    REQUIRE(p.sink.steps.size() == 1);
    CHECK(p.sink.steps[0].values.at("BM_c.real_time_ns") == 3.0);
  }
}

TEST_CASE("gbench: empty, missing, non-JSON and foreign files", "[gbench]") {
  test::TempDir dir("gbench");
  struct Case {
    std::string path;
    std::string reason;
  };
  auto write = [&](const std::string& name, const std::string& text) {
    test::write_file(dir / name, text);
    return (dir / name).string();
  };
  auto missing = (dir / "missing.json").string();
  auto not_json = k_data + "not_json.json";
  auto object = write("object.json", R"({"context": {"library_build_type": "release"}, "results": [1, 2]})");
  auto array = write("array.json", R"([{"name": "BM_a", "real_time": 1}])");
  auto trailing = write("trailing.json", R"({"benchmarks": []} x)");
  // Nested 10,000 deep: built whole and printed recursively, it overflowed the stack (ASan).
  auto deep = write("deep.json", R"({"benchmarks": [)" + std::string(10000, '[') + std::string(10000, ']') + "]}");
  std::vector<Case> cases = {
      {k_data + "empty.json",
       k_data + "empty.json: the Google Benchmark JSON file is empty (did the benchmark binary stop early?)"},
      {missing, fmt::format("{0}: cannot open the Google Benchmark JSON file (No such file or directory); does the "
                            "command pass --benchmark_out={0} --benchmark_out_format=json?",
                            missing)},
      {dir.str(), dir.str() + ": is a directory, not a Google Benchmark JSON file"},
      // Console output instead of JSON: the date on its first line reads as the number 2026, then "-11".
      {not_json, not_json + ": not valid JSON at byte 7: parse error at line 1, column 7: syntax error while parsing "
                            "value - unexpected number literal; expected end of input"},
      {object, object + ": no \"benchmarks\" array: not Google Benchmark JSON output"},
      {array, array + ": no \"benchmarks\" array: not Google Benchmark JSON output"},
      {deep, deep + ": values nested deeper than 64 levels: not Google Benchmark JSON output"},
      // Not at the end of the file: not called truncated.
      {trailing, trailing + ": not valid JSON at byte 20: parse error at line 1, column 20: syntax error while "
                            "parsing value - invalid literal; last read: '\"benchmarks\": []} x'; expected end of "
                            "input"},
  };
  for (const auto& c : cases) {
    INFO(c.path);
    Parsed p(c.path);
    CHECK(p.sink.steps.empty());
    CHECK(p.sink.names.empty());
    CHECK(p.parser->records() == 0);
    REQUIRE(p.parser->malformed_count() == 1);
    CHECK(p.parser->malformed()[0].source == LineSource::File);
    CHECK(p.parser->malformed()[0].line_no == 0);
    CHECK(p.parser->malformed()[0].reason == c.reason);
    CHECK(p.parser->notes().empty());
  }
}

TEST_CASE("gbench: a file that lists no benchmarks is not an error, but said", "[gbench]") {
  test::TempDir dir("gbench");
  auto none = (dir / "none.json").string();
  test::write_file(none, R"({"context": {}, "benchmarks": []})");
  Parsed p(none);
  CHECK(p.parser->malformed_count() == 0);
  CHECK(p.parser->notes() == std::vector<std::string>{none + ": the Google Benchmark JSON file lists no benchmarks"});
}

TEST_CASE("gbench: elements of the benchmarks array that are not objects, or have no name", "[gbench]") {
  test::TempDir dir("gbench");
  auto odd = (dir / "odd.json").string();
  test::write_file(odd, R"({"benchmarks": [1, [2], {"real_time": 3},
                            {"name": "BM_ok", "run_type": "iteration", "real_time": 4, "time_unit": "ns"},
                            {"name": "BM_ok", "run_type": "iteration", "real_time": 5, "time_unit": "ns"}]})");
  Parsed p(odd);
  CHECK(p.reasons() == std::vector<std::string>{"benchmark entry 1 is not a JSON object",
                                                "benchmark entry 2 is not a JSON object",
                                                "benchmark entry 3 has no name"});
  REQUIRE(p.parser->malformed_count() == 3);
  CHECK(p.parser->malformed()[1].line_no == 2);
  CHECK(p.parser->malformed()[2].excerpt == R"({"real_time":3})");
  // No repetition_index: repetitions of a benchmark are counted from 0.
  REQUIRE(p.sink.steps.size() == 2);
  CHECK(step_numbers(p.sink.steps) == std::vector<long long>{0, 1});
  CHECK(p.sink.steps[0].values == Values{{"BM_ok.real_time_ns", 4.0}});
  CHECK(p.sink.steps[1].values == Values{{"BM_ok.real_time_ns", 5.0}});
}

TEST_CASE("gbench: notes from the context", "[gbench]") {
  {
    Parsed p(k_data + "debug_build.json");
    CHECK(p.parser->notes() == std::vector<std::string>{k_debug_note});
    CHECK(p.parser->malformed_count() == 0);
    REQUIRE(p.sink.steps.size() == 1);
    CHECK(p.sink.steps[0].values == Values{{"BM_encode.real_time_ns", 4.0e+03}, {"BM_encode.cpu_time_ns", 3.9e+03}});
  }
  {
    Parsed p(k_data + "cpu_scaling.json");
    CHECK(p.parser->notes() ==
          std::vector<std::string>{"CPU frequency scaling was enabled while the benchmarks ran: timings may be noisy"});
    CHECK(p.sink.steps.size() == 1);
  }
  {
    Parsed p(k_data + "time_units.json");  // a release build without scaling: nothing to say
    CHECK(p.parser->notes().empty());
  }
}

TEST_CASE("gbench: a file of 20,000 benchmark entries", "[gbench]") {
  // 2,000 benchmarks x 10 repetitions x 4 metrics: 8,000 metrics, within the raised limit.
  test::TempDir dir("gbench");
  auto path = dir / "big.json";
  {
    std::string text = R"({"context": {"library_build_type": "release"}, "benchmarks": [)";
    for (int rep = 0; rep < 10; ++rep)
      for (int b = 0; b < 2000; ++b) {
        if (rep + b > 0) text += ",\n";
        text += iteration_entry(fmt::format("BM_family/{}", b), rep, b * 10.0 + rep,
                                fmt::format(R"(, "items_per_second": {}, "widgets": {}, "label": "x")", b + rep, rep));
      }
    text += "]}\n";
    test::write_file(path, text);
  }
  Parsed p(path.string());
  CHECK(p.parser->malformed_count() == 0);
  CHECK(p.parser->records() == 20000);
  REQUIRE(p.sink.steps.size() == 20000);
  CHECK(p.sink.names.size() == 8000);
  // Entry 2000 * 7 + 1234: repetition 7 of BM_family/1234.
  const auto& s = p.sink.steps[2000 * 7 + 1234];
  CHECK(s.step == 7);
  CHECK(s.values == Values{{"BM_family/1234.real_time_ns", 12347.0},
                           {"BM_family/1234.cpu_time_ns", 12347.0},
                           {"BM_family/1234.items_per_second", 1241.0},
                           {"BM_family/1234.widgets", 7.0}});
  CHECK(p.sink.steps.back().step == 9);
  CHECK(p.sink.steps.back().values.at("BM_family/1999.real_time_ns") == 19999.0);
}

TEST_CASE("gbench: metrics past the trial's limit are counted, not recorded", "[gbench]") {
  // 2,100 benchmarks of 4 metrics: the limit of 8,192 holds the first 2,048.
  test::TempDir dir("gbench");
  auto path = dir / "many.json";
  {
    std::string text = R"({"benchmarks": [)";
    for (int b = 0; b < 2100; ++b) {
      if (b > 0) text += ",\n";
      text += iteration_entry(fmt::format("BM_many/{}", b), 0, 1.0, R"(, "a": 1, "b": 2)");
    }
    text += "]}";
    test::write_file(path, text);
  }
  Parsed p(path.string());
  CHECK(p.sink.names.size() == 8192);
  // The library's metrics come first, then counters in name order.
  CHECK(p.sink.names.back() == "BM_many/2047.b");
  CHECK(p.sink.steps.size() == 2048);
  CHECK(p.parser->malformed_count() == 52);
  REQUIRE_FALSE(p.parser->malformed().empty());
  CHECK(p.parser->malformed()[0].line_no == 2049);
  CHECK(p.parser->malformed()[0].reason ==
        "benchmark BM_many/2048: 4 of its metrics not recorded: the trial already has 8192 metrics, the most it may "
        "hold");
}
