#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/suite/loader.hpp"
#include "harness/suite/matrix.hpp"
#include "harness/suite/placeholders.hpp"
#include "harness/suite/yaml_helpers.hpp"
#include "tests/unit/support/paths.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;
using model::Params;
using model::Scalar;
namespace fs = std::filesystem;

namespace {

const std::string k_base = "/tmp/perfgate-unit-base";

Expected<model::Suite> load(const std::string& text, const suite::LoadOptions& opts = {}) {
  return suite::load_suite_text(text, "suite.yaml", k_base, opts);
}

// "suite.yaml:L:C" of `token` on the first line that contains `line_marker`.
std::string at(const std::string& text, const std::string& line_marker, const std::string& token) {
  int line = 1;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find('\n', start);
    std::string l = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (l.find(line_marker) != std::string::npos) {
      auto col = l.find(token);
      REQUIRE(col != std::string::npos);
      return "suite.yaml:" + std::to_string(line) + ":" + std::to_string(col + 1);
    }
    if (end == std::string::npos) break;
    start = end + 1;
    ++line;
  }
  FAIL("marker '" << line_marker << "' not in text");
  return {};
}

const model::Axis* axis(const model::Workload& w, const std::string& name) {
  for (const auto& a : w.matrix)
    if (a.name == name) return &a;
  return nullptr;
}

std::string error_of(const Expected<model::Suite>& s) {
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().kind == ErrorKind::Input);
  return s.error().message;
}

const std::string k_full_suite = R"(suite: nightly-train
description: Nightly training throughput on one node
seed: 42
defaults:
  repeats: 4
  warmup: {steps: 5}
  timeout: 20m
  env: {TASK_QUEUE_ENABLE: "1", SHARED: base}
workloads:
  - name: resnet-train
    command: [python3, train.py, --graph-mode, "{graph_mode}", --fusion, "{fusion}",
              --bucket-mb, "{bucket_mb}", --num-workers, "{dataloader.num_workers}",
              --prefetch, "{dataloader.prefetch}", --model, "{model}", --out, "{trial_dir}"]
    env: {SHARED: mine, MODE: "{graph_mode}"}
    cwd: work
    log_limit: 4MB
    kill_grace: 2s
    metrics: {parser: jsonl, primary: step_time_ms}
    params: {model: resnet50}
    matrix:
      graph_mode: [eager, graph]
      fusion: [off, on]
      bucket_mb: [25]
      dataloader: [{num_workers: 2, prefetch: 2}]
    exclude: [{graph_mode: eager, fusion: on}]
    include:
      - {graph_mode: graph, fusion: on, bucket_mb: 100, dataloader: {num_workers: 8, prefetch: 4}}
  - name: bert-infer
    command: [python3, infer.py]
    repeats: 2
    warmup: {seconds: 30}
    timeout: 90
)";

}  // namespace

TEST_CASE("a full valid suite loads with every setting layered", "[suite]") {
  auto s = load(k_full_suite);
  REQUIRE(s.has_value());
  CHECK(s->name == "nightly-train");
  CHECK(s->description == "Nightly training throughput on one node");
  CHECK(s->path == "suite.yaml");
  CHECK(s->dir == k_base);
  REQUIRE(s->seed.has_value());
  CHECK(*s->seed == 42);
  CHECK(s->order == "interleaved");
  REQUIRE(s->workloads.size() == 2);

  const auto& w = s->workloads[0];
  CHECK(w.name == "resnet-train");
  CHECK(w.loc.file == "suite.yaml");
  CHECK(w.loc.line == 10);
  REQUIRE(w.command.size() == 16);
  CHECK(w.command[0] == "python3");
  CHECK(w.command[3] == "{graph_mode}");
  CHECK(w.command[15] == "{trial_dir}");
  CHECK(w.command_locs.size() == w.command.size());
  CHECK(w.command_locs[0].line == 11);
  CHECK(w.command_locs[8].line == 12);  // --num-workers on the continuation line
  CHECK_FALSE(w.shell);
  CHECK(w.repeats == 4);
  CHECK(w.warmup.kind == model::Warmup::Kind::Steps);
  CHECK(w.warmup.amount == 5);
  CHECK(w.timeout_s == 1200);
  CHECK(w.kill_grace_s == 2);
  CHECK(w.log_limit_bytes == 4ull << 20);
  CHECK(w.cwd == (fs::path(k_base) / "work").string());
  CHECK(w.metrics.parser == "jsonl");
  CHECK(w.metrics.primary == "step_time_ms");
  CHECK(w.env ==
        std::map<std::string, std::string>{{"TASK_QUEUE_ENABLE", "1"}, {"SHARED", "mine"}, {"MODE", "{graph_mode}"}});
  CHECK(w.params == Params{{"model", Scalar{Scalar::Kind::String, "resnet50"}}});

  REQUIRE(w.matrix.size() == 4);
  CHECK(w.matrix[0].name == "graph_mode");
  CHECK(w.matrix[1].name == "fusion");
  CHECK(w.matrix[2].name == "bucket_mb");
  CHECK(w.matrix[3].name == "dataloader");
  CHECK(w.matrix[0].loc.line == 21);
  REQUIRE(w.matrix[0].values.size() == 2);
  CHECK(w.matrix[0].values[0].at("graph_mode").text == "eager");
  CHECK(w.matrix[0].values[1].at("graph_mode").text == "graph");
  CHECK(w.matrix[1].values[0].at("fusion").text == "off");
  CHECK(w.matrix[2].values[0].at("bucket_mb").kind == Scalar::Kind::Int);
  REQUIRE(w.matrix[3].values.size() == 1);
  const auto& dl = w.matrix[3].values[0];
  REQUIRE(dl.size() == 2);
  CHECK(dl.at("dataloader.num_workers").text == "2");
  CHECK(dl.at("dataloader.num_workers").kind == Scalar::Kind::Int);
  CHECK(dl.at("dataloader.prefetch").text == "2");

  REQUIRE(w.exclude.size() == 1);
  CHECK(w.exclude[0] == Params{{"graph_mode", Scalar::infer("eager")}, {"fusion", Scalar::infer("on")}});
  REQUIRE(w.include.size() == 1);
  CHECK(w.include[0].size() == 5);
  CHECK(w.include[0].at("dataloader.num_workers").text == "8");
  CHECK(w.include[0].at("bucket_mb").text == "100");

  const auto& b = s->workloads[1];
  CHECK(b.name == "bert-infer");
  CHECK(b.repeats == 2);
  CHECK(b.warmup.kind == model::Warmup::Kind::Seconds);
  CHECK(b.warmup.amount == 30);
  CHECK(b.timeout_s == 90);
  CHECK(b.kill_grace_s == 5);               // built-in default
  CHECK(b.log_limit_bytes == 16ull << 20);  // built-in default
  CHECK(b.env == std::map<std::string, std::string>{{"TASK_QUEUE_ENABLE", "1"}, {"SHARED", "base"}});
  CHECK(b.metrics.primary.empty());  // not declared: the parser's default, decided per run (metrics::default_primary)
  CHECK(b.matrix.empty());

  // 2 x 2 x 1 x 1 = 4, minus eager/on, plus the include.
  auto cases = suite::expand(*s);
  CHECK(cases.size() == 5);
}

TEST_CASE("load_suite reads a file and resolves cwd against its directory", "[suite]") {
  test::TempDir tmp("loader");
  auto path = tmp / "suites" / "nightly.yaml";
  test::write_file(path, k_full_suite);
  auto s = suite::load_suite(path.string());
  REQUIRE(s.has_value());
  CHECK(s->path == path.string());
  CHECK(fs::equivalent(s->dir, path.parent_path()));
  CHECK(s->workloads[0].cwd == (fs::path(s->dir) / "work").lexically_normal().string());

  auto missing = suite::load_suite((tmp / "nope.yaml").string());
  REQUIRE_FALSE(missing.has_value());
  CHECK_THAT(missing.error().message, Catch::Contains("nope.yaml"));
}

TEST_CASE("a YAML syntax error names file, line and column", "[suite]") {
  const std::string text =
      "suite: demo\n"
      "defaults:\n"
      "  repeats: 5\n"
      "  env: {A: \"1\"]\n"
      "workloads: []\n";
  auto msg = error_of(load(text));
  CHECK_THAT(msg, Catch::Contains("suite.yaml:4:15"));
  CHECK_THAT(msg, Catch::Contains("YAML syntax error"));
}

TEST_CASE("YAML nested past the parser's depth limit says so at its place", "[suite]") {
  // yaml-cpp's own message for this is "bad file".
  const std::string deep_flow = "suite: demo\nworkloads: " + std::string(5000, '[') + std::string(5000, ']') + "\n";
  auto msg = error_of(load(deep_flow));
  CHECK_THAT(msg, Catch::StartsWith("suite.yaml:2:"));
  CHECK_THAT(msg, Catch::Contains("YAML nested too deep: sequences and maps may nest at most "));
  CHECK_THAT(msg, !Catch::Contains("bad file"));

  std::string deep_block = "suite: demo\nworkloads:\n";
  for (int level = 0; level < 2500; ++level)
    deep_block += std::string(static_cast<std::size_t>(level) + 1, ' ') + "k:\n";
  auto block_msg = error_of(load(deep_block));
  CHECK_THAT(block_msg, Catch::Contains("YAML nested too deep"));

  // Nesting within the limit gets past the parser to the suite checks.
  const std::string shallow = "suite: demo\nworkloads: " + std::string(300, '[') + std::string(300, ']') + "\n";
  auto shallow_msg = error_of(load(shallow));
  CHECK_THAT(shallow_msg, Catch::Contains("workload #1 must be a mapping, found a list"));
}

TEST_CASE("aliases that expand past the limit or form a cycle are refused at the alias", "[suite]") {
  // A "billion laughs" of maps under params: nine levels of eight aliases
  // (8^9 parameters) in under 1 KB, which flattening would have walked whole.
  std::string bomb = "suite: demo\nworkloads:\n  - name: w\n    command: [/bin/true]\n    params:\n";
  bomb += "      x0: &x0 {v: 1, w: 2}\n";
  for (int level = 1; level < 10; ++level) {
    bomb += fmt::format("      x{}: &x{} {{", level, level);
    for (int k = 0; k < 8; ++k) bomb += fmt::format("{}k{}: *x{}", k ? ", " : "", k, level - 1);
    bomb += "}\n";
  }
  auto msg = error_of(load(bomb));
  CHECK_THAT(msg, Catch::StartsWith("suite.yaml:12:"));  // the alias that crosses the limit
  CHECK_THAT(msg, Catch::Contains("YAML aliases expand to more than 1000000 nodes"));
  CHECK_THAT(msg, Catch::Contains("*x5 alone is"));

  // A sequence bomb in a matrix axis.
  std::string laughs = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (char level = 'b'; level <= 'i'; ++level) {
    laughs += fmt::format("{}: &{} [", level, level);
    for (int k = 0; k < 9; ++k) laughs += fmt::format("{}*{}", k ? ", " : "", static_cast<char>(level - 1));
    laughs += "]\n";
  }
  CHECK_THAT(error_of(load(laughs + "suite: demo\nworkloads: []\n")), Catch::Contains("YAML aliases expand"));

  const std::string cycle =
      "suite: demo\nworkloads:\n  - name: w\n    command: [/bin/true]\n"
      "    params: &p {a: 1, b: *p}\n";
  CHECK(error_of(load(cycle)) ==
        "suite.yaml:5:26: alias *p is inside the node it names (a cycle no reader can finish)");

  // Shared blocks, as people use anchors, load as if written out.
  const std::string shared =
      "suite: demo\n"
      "workloads:\n"
      "  - name: a\n    command: [/bin/true]\n    params: &common {lr: 0.1, opt: {kind: adam}}\n"
      "  - name: b\n    command: [/bin/true]\n    params: *common\n";
  auto s = load(shared);
  REQUIRE(s.has_value());
  CHECK(s->workloads[1].params.at("opt.kind").text == "adam");
}

TEST_CASE("a YAML file past the size limit is refused before it is parsed", "[suite]") {
  test::TempDir tmp("big-suite");
  // A valid suite padded with a comment to one byte past 16 MiB.
  std::string text = "suite: demo\nworkloads: []\n#";
  text.resize(suite::yaml::k_max_yaml_file_bytes + 1, 'x');
  test::write_file(tmp / "big.yaml", text);
  auto big = suite::load_suite((tmp / "big.yaml").string());
  REQUIRE_FALSE(big);
  CHECK(big.error().message == (tmp / "big.yaml").string() +
                                   ": larger than 16 MiB, the most perfgate reads of a YAML file (its node tree takes "
                                   "about 50 times the file's size); split it, or generate fewer entries");
  // At the limit it is read (and then judged as a suite).
  text.resize(suite::yaml::k_max_yaml_file_bytes);
  test::write_file(tmp / "edge.yaml", text);
  auto edge = suite::load_suite((tmp / "edge.yaml").string());
  REQUIRE_FALSE(edge);
  CHECK_THAT(edge.error().message, !Catch::Contains("larger than"));
}

TEST_CASE("an unknown key is reported where it is, with a suggestion", "[suite]") {
  SECTION("in a workload") {
    const std::string text =
        "suite: demo\n"
        "workloads:\n"
        "  - name: a\n"
        "    command: [echo, hi]\n"
        "    repeat: 3\n";
    auto msg = error_of(load(text));
    CHECK_THAT(msg, Catch::Contains(at(text, "repeat: 3", "repeat")));
    CHECK_THAT(msg, Catch::Contains("suite.yaml:5:5"));
    CHECK_THAT(msg, Catch::Contains("did you mean 'repeats'"));
  }
  SECTION("in defaults") {
    const std::string text =
        "suite: demo\n"
        "defaults:\n"
        "  timeout: 5m\n"
        "  repeat: 3\n"
        "workloads:\n"
        "  - name: a\n"
        "    command: [echo, hi]\n";
    auto msg = error_of(load(text));
    CHECK_THAT(msg, Catch::Contains("suite.yaml:4:3"));
    CHECK_THAT(msg, Catch::Contains("did you mean 'repeats'"));
  }
  SECTION("at the top level") {
    const std::string text =
        "suite: demo\n"
        "workload:\n"
        "  - name: a\n"
        "    command: [echo, hi]\n";
    auto msg = error_of(load(text));
    CHECK_THAT(msg, Catch::Contains("suite.yaml:2:1"));
    CHECK_THAT(msg, Catch::Contains("did you mean 'workloads'"));
  }
}

TEST_CASE("a value of the wrong type is reported at the value", "[suite]") {
  SECTION("repeats: \"many\"") {
    const std::string text =
        "suite: demo\n"
        "workloads:\n"
        "  - name: a\n"
        "    command: [echo, hi]\n"
        "    repeats: \"many\"\n";
    auto msg = error_of(load(text));
    CHECK_THAT(msg, Catch::Contains("suite.yaml:5:14"));
    CHECK_THAT(msg, Catch::Contains("repeats") && Catch::Contains("integer"));
  }
  SECTION("repeats: 0") {
    const std::string text =
        "suite: demo\n"
        "defaults:\n"
        "  repeats: 0\n"
        "workloads:\n"
        "  - name: a\n"
        "    command: [echo, hi]\n";
    auto msg = error_of(load(text));
    CHECK_THAT(msg, Catch::Contains("suite.yaml:3:12"));
  }
  SECTION("command: 5") {
    const std::string text =
        "suite: demo\n"
        "workloads:\n"
        "  - name: a\n"
        "    command: 5\n";
    auto msg = error_of(load(text));
    CHECK_THAT(msg, Catch::Contains("suite.yaml:4:14"));
    CHECK_THAT(msg, Catch::Contains("command"));
  }
  SECTION("timeout: soon") {
    const std::string text =
        "suite: demo\n"
        "workloads:\n"
        "  - name: a\n"
        "    command: [echo, hi]\n"
        "    timeout: soon\n";
    auto msg = error_of(load(text));
    CHECK_THAT(msg, Catch::Contains("suite.yaml:5:14"));
    CHECK_THAT(msg, Catch::Contains("timeout"));
  }
  SECTION("a command argument that is a mapping") {
    const std::string text =
        "suite: demo\n"
        "workloads:\n"
        "  - name: a\n"
        "    command: [echo, {x: 1}]\n";
    auto msg = error_of(load(text));
    CHECK_THAT(msg, Catch::Contains("suite.yaml:4:21"));
  }
}

TEST_CASE("an empty matrix or axis is an error at its place", "[suite]") {
  SECTION("matrix: {}") {
    const std::string text =
        "suite: demo\n"
        "workloads:\n"
        "  - name: a\n"
        "    command: [echo, hi]\n"
        "    matrix: {}\n";
    auto msg = error_of(load(text));
    CHECK_THAT(msg, Catch::Contains("suite.yaml:5:13"));
    CHECK_THAT(msg, Catch::Contains("matrix is empty"));
  }
  SECTION("bucket_mb: []") {
    const std::string text =
        "suite: demo\n"
        "workloads:\n"
        "  - name: a\n"
        "    command: [echo, \"{bucket_mb}\"]\n"
        "    matrix:\n"
        "      graph_mode: [eager]\n"
        "      bucket_mb: []\n";
    auto msg = error_of(load(text));
    CHECK_THAT(msg, Catch::Contains("suite.yaml:7:18"));
    CHECK_THAT(msg, Catch::Contains("bucket_mb"));
  }
}

TEST_CASE("an unknown placeholder is reported at its argument with a suggestion", "[suite]") {
  const std::string text =
      "suite: demo\n"
      "workloads:\n"
      "  - name: a\n"
      "    command: [run, --bucket, \"{bukcet_mb}\"]\n"
      "    matrix:\n"
      "      bucket_mb: [25, 50]\n";
  auto msg = error_of(load(text));
  CHECK_THAT(msg, Catch::Contains(at(text, "bukcet", "\"{bukcet_mb}\"")));
  CHECK_THAT(msg, Catch::Contains("suite.yaml:4:30"));
  CHECK_THAT(msg, Catch::Contains("{bukcet_mb}"));
  CHECK_THAT(msg, Catch::Contains("did you mean 'bucket_mb'"));
}

TEST_CASE("an unclosed placeholder brace is reported at its argument", "[suite]") {
  const std::string text =
      "suite: demo\n"
      "workloads:\n"
      "  - name: a\n"
      "    command: [run, \"{bucket_mb\"]\n"
      "    matrix:\n"
      "      bucket_mb: [25]\n";
  auto msg = error_of(load(text));
  CHECK_THAT(msg, Catch::Contains("suite.yaml:4:20"));
  CHECK_THAT(msg, Catch::Contains("unclosed"));
}

TEST_CASE("a duplicate key is reported at its second occurrence", "[suite]") {
  const std::string text =
      "suite: demo\n"
      "workloads:\n"
      "  - name: a\n"
      "    command: [echo, hi]\n"
      "    repeats: 3\n"
      "    repeats: 4\n";
  auto msg = error_of(load(text));
  CHECK_THAT(msg, Catch::Contains("suite.yaml:6:5") && Catch::Contains("duplicate key 'repeats'"));
}

TEST_CASE("an unknown placeholder in env is reported at the env value", "[suite]") {
  // "Every error names file:line:column of the offending node" (loader.hpp).
  const std::string text =
      "suite: demo\n"
      "workloads:\n"
      "  - name: a\n"
      "    command: [run]\n"
      "    env: {MODE: \"{grpah_mode}\"}\n"
      "    matrix:\n"
      "      graph_mode: [eager]\n";
  auto msg = error_of(load(text));
  CHECK_THAT(msg, Catch::Contains("did you mean 'graph_mode'"));
  CHECK_THAT(msg, Catch::Contains(at(text, "grpah", "\"{grpah_mode}\"")));
  CHECK_THAT(msg, Catch::Contains("suite.yaml:5:17"));
}

TEST_CASE("an exclude naming an unknown parameter is reported at that key", "[suite]") {
  const std::string text =
      "suite: demo\n"
      "workloads:\n"
      "  - name: a\n"
      "    command: [run, \"{graph_mode}\", \"{fusion}\"]\n"
      "    matrix:\n"
      "      graph_mode: [eager, graph]\n"
      "      fusion: [off, on]\n"
      "    exclude: [{graph_mode: eager, fuson: on}]\n";
  auto msg = error_of(load(text));
  CHECK_THAT(msg, Catch::Contains("did you mean 'fusion'"));
  CHECK_THAT(msg, Catch::Contains(at(text, "fuson", "fuson")));
  CHECK_THAT(msg, Catch::Contains("suite.yaml:8:35"));
}

TEST_CASE("a suite that loads can substitute every placeholder of every configuration", "[suite]") {
  // The runner treats a failed substitution as "validated at load; only
  // reachable through a bug". A key that only an include entry defines is not
  // defined for the matrix configurations, so the loader must refuse it (or
  // every configuration must have it).
  const std::string text =
      "suite: demo\n"
      "workloads:\n"
      "  - name: a\n"
      "    command: [run, \"{graph_mode}\", --compile, \"{compile_mode}\"]\n"
      "    matrix:\n"
      "      graph_mode: [eager, graph]\n"
      "    include: [{graph_mode: graph, compile_mode: max-autotune}]\n";
  auto s = load(text);
  if (!s.has_value()) {
    CHECK_THAT(s.error().message, Catch::Contains("compile_mode"));
    return;
  }
  for (const auto& c : suite::expand(*s)) {
    for (const auto& arg : s->workloads[c.workload_index].command) {
      INFO("case '" << c.label << "', argument '" << arg << "'");
      auto out = suite::substitute(arg, [&](std::string_view name) -> std::optional<std::string> {
        if (auto it = c.params.find(std::string(name)); it != c.params.end()) return it->second.text;
        const auto& b = suite::builtin_placeholders();
        if (std::find(b.begin(), b.end(), name) != b.end()) return std::string("builtin");
        return std::nullopt;
      });
      CHECK(out.has_value());
    }
  }
}

TEST_CASE("duplicate workload names are reported at the second name", "[suite]") {
  const std::string text =
      "suite: demo\n"
      "workloads:\n"
      "  - name: train\n"
      "    command: [echo, one]\n"
      "  - name: other\n"
      "    command: [echo, two]\n"
      "  - name: train\n"
      "    command: [echo, three]\n";
  auto msg = error_of(load(text));
  CHECK_THAT(msg, Catch::Contains("suite.yaml:7:11"));
  CHECK_THAT(msg, Catch::Contains("duplicate workload name 'train'"));
}

TEST_CASE("a command string needs shell: true", "[suite]") {
  const std::string text =
      "suite: demo\n"
      "workloads:\n"
      "  - name: a\n"
      "    command: python3 train.py --steps 10\n";
  auto msg = error_of(load(text));
  CHECK_THAT(msg, Catch::Contains("suite.yaml:4:14"));
  CHECK_THAT(msg, Catch::Contains("shell: true"));

  auto ok = load(text + "    shell: true\n");
  REQUIRE(ok.has_value());
  CHECK(ok->workloads[0].shell);
  CHECK(ok->workloads[0].command == std::vector<std::string>{"python3 train.py --steps 10"});
}

TEST_CASE("a key without a value is reported at the key", "[suite]") {
  const std::string text =
      "suite: demo\n"
      "defaults:\n"
      "  timeout:\n"
      "  repeats: 3\n"
      "workloads:\n"
      "  - name: a\n"
      "    command: [echo, hi]\n";
  auto msg = error_of(load(text));
  CHECK_THAT(msg, Catch::Contains("suite.yaml:3:3") && Catch::Contains("'timeout'"));
}

TEST_CASE("a suite that is not UTF-8 is refused with the place of the bad byte", "[suite]") {
  const std::string text =
      "suite: demo\n"
      "description: caf\xE9 latin-1\n"
      "workloads:\n"
      "  - name: a\n"
      "    command: [echo, hi]\n";
  auto msg = error_of(load(text));
  CHECK_THAT(msg, Catch::Contains("suite.yaml:2:17") && Catch::Contains("UTF-8"));
  auto ok =
      load("suite: d\ndescription: caf\xC3\xA9\nworkloads:\n  - name: a\n    command: [echo, \"\xE2\x82\xAC\"]\n");
  REQUIRE(ok.has_value());
  CHECK(ok->workloads[0].command[1] == "\xE2\x82\xAC");
}

TEST_CASE("an empty or nameless suite is refused", "[suite]") {
  CHECK_THAT(error_of(load("")), Catch::Contains("suite.yaml") && Catch::Contains("empty"));
  CHECK_THAT(error_of(load("workloads:\n  - name: a\n    command: [x]\n")),
             Catch::Contains("suite.yaml:1:1") && Catch::Contains("'suite'"));
  CHECK_THAT(error_of(load("suite: x\n")), Catch::Contains("workloads"));
}

TEST_CASE("quoted YAML scalars stay strings, plain ones are typed", "[suite]") {
  const std::string text =
      "suite: demo\n"
      "workloads:\n"
      "  - name: a\n"
      "    command: [echo]\n"
      "    params: {tag: \"25\", n: 25, f: 0.5, b: true, qb: 'true', s: eager}\n"
      "    matrix:\n"
      "      mode: [\"1\", 1]\n";
  auto s = load(text);
  REQUIRE(s.has_value());
  const auto& p = s->workloads[0].params;
  CHECK(p.at("tag").kind == Scalar::Kind::String);
  CHECK(p.at("tag").text == "25");
  CHECK(p.at("n").kind == Scalar::Kind::Int);
  CHECK(p.at("f").kind == Scalar::Kind::Float);
  CHECK(p.at("b").kind == Scalar::Kind::Bool);
  CHECK(p.at("qb").kind == Scalar::Kind::String);
  CHECK(p.at("s").kind == Scalar::Kind::String);
  const auto* mode = axis(s->workloads[0], "mode");
  REQUIRE(mode != nullptr);
  REQUIRE(mode->values.size() == 2);  // "1" and 1 are different values
  CHECK(mode->values[0].at("mode").kind == Scalar::Kind::String);
  CHECK(mode->values[1].at("mode").kind == Scalar::Kind::Int);
}

TEST_CASE("profiles apply below suite defaults", "[suite]") {
  test::TempDir tmp("profiles");
  test::write_file(tmp / "configs/profiles/box.yaml",
                   "profile: box\n"
                   "defaults:\n"
                   "  repeats: 7\n"
                   "  timeout: 5m\n"
                   "  warmup: {steps: 2}\n"
                   "  env: {FROM_PROFILE: \"1\", SHARED: box}\n");
  test::write_file(tmp / "configs/profiles/extra.yaml",
                   "defaults:\n"
                   "  kill_grace: 2s\n"
                   "  repeats: 9\n"
                   "  env: {EXTRA: \"yes\", SHARED: extra}\n");
  const std::string suite_text =
      "suite: p\n"
      "profile: box\n"
      "defaults:\n"
      "  repeats: 3\n"
      "  env: {SHARED: suite}\n"
      "workloads:\n"
      "  - name: a\n"
      "    command: [echo, hi]\n"
      "  - name: b\n"
      "    command: [echo, hi]\n"
      "    timeout: 30s\n";
  auto path = tmp / "suites" / "s.yaml";
  test::write_file(path, suite_text);

  SECTION("the suite's own profile") {
    auto s = suite::load_suite(path.string());
    REQUIRE(s.has_value());
    REQUIRE(s->profiles.size() == 1);
    CHECK(fs::equivalent(s->profiles[0], tmp / "configs/profiles/box.yaml"));
    const auto& a = s->workloads[0];
    CHECK(a.repeats == 3);      // suite defaults win over the profile
    CHECK(a.timeout_s == 300);  // from the profile
    CHECK(a.warmup.kind == model::Warmup::Kind::Steps);
    CHECK(a.warmup.amount == 2);  // from the profile
    CHECK(a.kill_grace_s == 5);   // built-in
    CHECK(a.env == std::map<std::string, std::string>{{"FROM_PROFILE", "1"}, {"SHARED", "suite"}});
    CHECK(s->workloads[1].timeout_s == 30);  // workload keys win over everything
  }
  SECTION("LoadOptions.profiles apply after the suite's profile") {
    suite::LoadOptions opts;
    opts.profiles = {"extra"};
    auto s = suite::load_suite(path.string(), opts);
    REQUIRE(s.has_value());
    REQUIRE(s->profiles.size() == 2);
    CHECK(fs::path(s->profiles[1]).filename() == "extra.yaml");
    const auto& a = s->workloads[0];
    CHECK(a.repeats == 3);
    CHECK(a.kill_grace_s == 2);
    CHECK(a.timeout_s == 300);
    CHECK(a.env == std::map<std::string, std::string>{{"FROM_PROFILE", "1"}, {"EXTRA", "yes"}, {"SHARED", "suite"}});
  }
  SECTION("a profile given by path, applied to a suite without defaults") {
    test::write_file(tmp / "suites/plain.yaml",
                     "suite: plain\n"
                     "workloads:\n"
                     "  - name: a\n"
                     "    command: [echo, hi]\n");
    suite::LoadOptions opts;
    opts.profiles = {(tmp / "configs/profiles/extra.yaml").string()};
    auto s = suite::load_suite((tmp / "suites/plain.yaml").string(), opts);
    REQUIRE(s.has_value());
    CHECK(s->workloads[0].repeats == 9);
    CHECK(s->workloads[0].env.at("SHARED") == "extra");
  }
  SECTION("profile_search_dirs") {
    test::write_file(tmp / "elsewhere/far.yaml", "defaults:\n  repeats: 11\n");
    test::write_file(tmp / "suites/plain.yaml",
                     "suite: plain\n"
                     "workloads:\n"
                     "  - name: a\n"
                     "    command: [echo, hi]\n");
    suite::LoadOptions opts;
    opts.profiles = {"far"};
    opts.profile_search_dirs = {(tmp / "elsewhere").string()};
    auto s = suite::load_suite((tmp / "suites/plain.yaml").string(), opts);
    REQUIRE(s.has_value());
    CHECK(s->workloads[0].repeats == 11);
  }
  SECTION("an unknown profile is an error naming it") {
    suite::LoadOptions opts;
    opts.profiles = {"no-such-profile"};
    auto s = suite::load_suite(path.string(), opts);
    REQUIRE_FALSE(s.has_value());
    CHECK_THAT(s.error().message, Catch::Contains("profile 'no-such-profile' not found"));
  }
  SECTION("a profile name longer than a file name may be is not found, without an exception") {
    // What the suite fuzzer found: std::filesystem threw ENAMETOOLONG.
    suite::LoadOptions opts;
    opts.profiles = {"co/" + std::string(300, 'p')};
    auto s = suite::load_suite(path.string(), opts);
    REQUIRE_FALSE(s.has_value());
    CHECK_THAT(s.error().message, Catch::Contains("not found"));
  }
  SECTION("a suite path longer than a file name may be is a clear error") {
    auto s = suite::load_suite((tmp / std::string(300, 's')).string() + ".yaml", {});
    REQUIRE_FALSE(s.has_value());
    CHECK_THAT(s.error().message, Catch::Contains("cannot read the suite file: File name too long"));
  }
  SECTION("an error inside a profile names the profile file") {
    test::write_file(tmp / "configs/profiles/bad.yaml", "defaults:\n  repeat: 3\n");
    suite::LoadOptions opts;
    opts.profiles = {"bad"};
    auto s = suite::load_suite(path.string(), opts);
    REQUIRE_FALSE(s.has_value());
    CHECK_THAT(s.error().message, Catch::Contains("bad.yaml:2:3") && Catch::Contains("did you mean 'repeats'"));
  }
}

TEST_CASE("parse_override splits KEY=V1,V2", "[suite]") {
  auto o = suite::parse_override("bucket_mb=5,25, 50");
  REQUIRE(o.has_value());
  CHECK(o->key == "bucket_mb");
  CHECK(o->values == std::vector<std::string>{"5", "25", "50"});
  auto d = suite::parse_override("dataloader.num_workers=2,4");
  REQUIRE(d.has_value());
  CHECK(d->key == "dataloader.num_workers");
  for (const char* bad : {"bucket_mb", "=5", "bucket_mb=", "bucket_mb=5,,25", "bucket_mb=5,"}) {
    INFO(bad);
    auto b = suite::parse_override(bad);
    REQUIRE_FALSE(b.has_value());
    CHECK(b.error().kind == ErrorKind::Input);
  }
}

TEST_CASE("overrides (--set) change axes, add axes and settings", "[suite]") {
  const std::string text =
      "suite: o\n"
      "workloads:\n"
      "  - name: train\n"
      "    command: [train, \"{bucket_mb}\", \"{dataloader.num_workers}\", \"{dataloader.prefetch}\", \"{batch}\",\n"
      "              \"{precision}\"]\n"
      "    repeats: 5\n"
      "    params: {precision: fp32}\n"
      "    matrix:\n"
      "      bucket_mb: [25, 50]\n"
      "      dataloader: [{num_workers: 2, prefetch: 2}]\n";
  auto with = [&](std::vector<std::string> sets) {
    suite::LoadOptions opts;
    for (const auto& t : sets) {
      auto o = suite::parse_override(t);
      REQUIRE(o.has_value());
      opts.overrides.push_back(*o);
    }
    return load(text, opts);
  };

  SECTION("without a value for {batch} the suite is invalid") {
    auto msg = error_of(load(text));
    CHECK_THAT(msg, Catch::Contains("{batch}"));
  }
  SECTION("an existing axis, a new axis and repeats") {
    auto s = with({"batch=8,16", "bucket_mb=5,100,200", "repeats=3"});
    REQUIRE(s.has_value());
    const auto& w = s->workloads[0];
    CHECK(w.repeats == 3);
    const auto* bucket = axis(w, "bucket_mb");
    REQUIRE(bucket != nullptr);
    REQUIRE(bucket->values.size() == 3);
    CHECK(bucket->values[0].at("bucket_mb").text == "5");
    CHECK(bucket->values[2].at("bucket_mb").text == "200");
    CHECK(bucket->values[2].at("bucket_mb").kind == Scalar::Kind::Int);
    const auto* batch = axis(w, "batch");
    REQUIRE(batch != nullptr);
    REQUIRE(batch->values.size() == 2);
    CHECK(batch->values[1].at("batch").text == "16");
    CHECK(suite::expand(*s).size() == 3 * 1 * 2);
  }
  SECTION("a dotted key on a dict axis keeps the other keys") {
    auto s = with({"batch=8", "dataloader.num_workers=2,4"});
    REQUIRE(s.has_value());
    const auto* dl = axis(s->workloads[0], "dataloader");
    REQUIRE(dl != nullptr);
    REQUIRE(dl->values.size() == 2);
    CHECK(dl->values[0].at("dataloader.num_workers").text == "2");
    CHECK(dl->values[1].at("dataloader.num_workers").text == "4");
    CHECK(dl->values[0].at("dataloader.prefetch").text == "2");
    CHECK(dl->values[1].at("dataloader.prefetch").text == "2");
    CHECK(suite::expand(*s).size() == 2 * 2 * 1);
  }
  SECTION("a fixed parameter becomes an axis") {
    auto s = with({"batch=8", "precision=fp32,bf16"});
    REQUIRE(s.has_value());
    const auto& w = s->workloads[0];
    CHECK(w.params.count("precision") == 0);
    const auto* prec = axis(w, "precision");
    REQUIRE(prec != nullptr);
    CHECK(prec->values.size() == 2);
    CHECK(suite::expand(*s).size() == 2 * 2);
  }
  SECTION("an unknown key suggests the closest one") {
    auto s = with({"batch=8", "bukcet_mb=5"});
    auto msg = error_of(s);
    CHECK_THAT(msg, Catch::Contains("bukcet_mb") && Catch::Contains("did you mean 'bucket_mb'"));
  }
  SECTION("settings take one valid value") {
    CHECK_THAT(error_of(with({"batch=8", "repeats=0"})), Catch::Contains("repeats"));
    CHECK_THAT(error_of(with({"batch=8", "repeats=many"})), Catch::Contains("repeats"));
    CHECK_THAT(error_of(with({"batch=8", "repeats=1,2"})), Catch::Contains("one value"));
    CHECK_THAT(error_of(with({"batch=8", "timeout=never"})), Catch::Contains("timeout"));
    auto s = with({"batch=8", "timeout=90s", "warmup=10", "log_limit=1MB"});
    REQUIRE(s.has_value());
    const auto& w = s->workloads[0];
    CHECK(w.timeout_s == 90);
    CHECK(w.warmup.kind == model::Warmup::Kind::Steps);
    CHECK(w.warmup.amount == 10);
    CHECK(w.log_limit_bytes == 1ull << 20);
  }
}

TEST_CASE("seed and order are read and validated", "[suite]") {
  const std::string body =
      "workloads:\n"
      "  - name: a\n"
      "    command: [echo]\n";
  auto s = load("suite: x\norder: sequential\nseed: 7\n" + body);
  REQUIRE(s.has_value());
  CHECK(s->order == "sequential");
  CHECK(*s->seed == 7);
  auto msg = error_of(load("suite: x\norder: sequental\n" + body));
  CHECK_THAT(msg, Catch::Contains("suite.yaml:2:8") && Catch::Contains("did you mean 'sequential'"));
}

TEST_CASE("samplers and sample_interval layer like other settings", "[suite]") {
  const std::string text = R"(suite: s
defaults:
  samplers: [proc, npu-smi]
  sample_interval: 500ms
workloads:
  - name: a
    command: [x]
  - name: b
    command: [y]
    samplers:
      - {kind: command, name: link, command: [hccn_tool, -i, "0", -link, -g], regex: 'status: (\w+) speed (\d+)', metrics: [link, speed_gbps]}
)";
  auto s = load(text);
  REQUIRE(s.has_value());
  const auto& a = s->workloads[0];
  REQUIRE(a.samplers.size() == 2);
  CHECK(a.samplers[0].kind == "proc");
  CHECK(a.samplers[1].kind == "npu-smi");
  CHECK(a.sample_interval_s == Approx(0.5));
  const auto& b = s->workloads[1];
  REQUIRE(b.samplers.size() == 1);  // a workload's list replaces the defaults'
  const auto& c = b.samplers[0];
  CHECK(c.kind == "command");
  CHECK(c.name == "link");
  CHECK(c.command == std::vector<std::string>{"hccn_tool", "-i", "0", "-link", "-g"});
  CHECK(c.metric_names.at("1") == "link");
  CHECK(c.metric_names.at("2") == "speed_gbps");
  CHECK(b.sample_interval_s == Approx(0.5));
}

TEST_CASE("bad samplers are refused where they are written", "[suite]") {
  auto wl = [](const std::string& extra) { return "suite: s\nworkloads:\n  - name: a\n    command: [x]\n" + extra; };
  CHECK_THAT(error_of(load(wl("    samplers: [proc, npu_smi]\n"))), Catch::Contains("suite.yaml:5:22") &&
                                                                        Catch::Contains("unknown sampler 'npu_smi'") &&
                                                                        Catch::Contains("did you mean 'npu-smi'"));
  CHECK_THAT(error_of(load(wl("    samplers: proc\n"))), Catch::Contains("samplers must be a list"));
  CHECK_THAT(error_of(load(wl("    samplers: [command]\n"))), Catch::Contains("a command sampler is a mapping"));
  CHECK_THAT(error_of(load(wl("    samplers: [{kind: command, command: [x]}]\n"))), Catch::Contains("needs 'command'"));
  CHECK_THAT(error_of(load(wl("    samplers: [{kind: proc, regex: x}]\n"))),
             Catch::Contains("for command samplers only"));
  CHECK_THAT(error_of(load(wl("    samplers: [{kind: proc, every: 1s}]\n"))), Catch::Contains("unknown key 'every'"));
  CHECK_THAT(error_of(load(wl("    sample_interval: 10ms\n"))), Catch::Contains("at least 50ms"));
}

TEST_CASE("metrics settings of log parsers load and layer", "[suite][parsers]") {
  const std::string text =
      "suite: logs\n"
      "defaults:\n"
      "  metrics: {parser: mindspore, batch_size: \"{batch}\", file: \"{trial_dir}/train.log\"}\n"
      "workloads:\n"
      "  - name: ms\n"
      "    command: [train]\n"
      "    matrix: {batch: [16, 32]}\n"
      "  - name: custom\n"
      "    command: [bench]\n"
      "    metrics:\n"
      "      parser: regex\n"
      "      batch_size: ''\n"
      "      patterns:\n"
      "        - 'took (?<step_time_ms>[0-9.]+) ms'\n"
      "        - regex: 'acc (?<accuracy>[0-9.]+) mem (?<mem>\\d+)'\n"
      "          record: summary\n"
      "          units: {mem: MB}\n"
      "          better: {accuracy: higher}\n";
  auto s = load(text);
  REQUIRE(s);
  const auto& ms = s->workloads.at(0).metrics;
  CHECK(ms.parser == "mindspore");
  CHECK(ms.batch_size == "{batch}");
  CHECK(ms.file == "{trial_dir}/train.log");
  const auto& rx = s->workloads.at(1).metrics;
  CHECK(rx.parser == "regex");
  CHECK(rx.file == "{trial_dir}/train.log");  // the defaults' file still applies
  REQUIRE(rx.patterns.size() == 2);
  CHECK_FALSE(rx.patterns[0].summary);
  CHECK(rx.patterns[1].summary);
  CHECK(rx.patterns[1].units.at("mem") == "MB");
  CHECK(rx.patterns[1].better.at("accuracy") == model::Better::Higher);
  CHECK(rx.patterns[1].loc.line == 15);
}

TEST_CASE("metrics settings a parser cannot use are refused at their place", "[suite][parsers]") {
  auto suite_with = [](const std::string& metrics) {
    return "suite: logs\nworkloads:\n  - name: w\n    command: [x]\n    metrics: " + metrics + "\n";
  };
  CHECK_THAT(error_of(load(suite_with("{parser: regex}"))),
             Catch::Contains("suite.yaml:5") && Catch::Contains("parser regex needs 'patterns'"));
  CHECK_THAT(error_of(load(suite_with("{parser: megatron, patterns: ['(?<x>1)']}"))),
             Catch::Contains("'patterns' is for parser regex, not megatron"));
  CHECK_THAT(error_of(load(suite_with("{parser: jsonl, file: x.log}"))), Catch::Contains("'file' is for log parsers"));
  CHECK_THAT(error_of(load(suite_with("{parser: regex, patterns: [{regex: '(?<x>1)', record: total}]}"))),
             Catch::Contains("record must be 'step' or 'summary'"));
  CHECK_THAT(error_of(load(suite_with("{parser: regex, patterns: [{regex: '(?<x>1)', better: {x: up}}]}"))),
             Catch::Contains("better.x must be lower, higher or none"));
  CHECK_THAT(error_of(load(suite_with("{parser: regex, patterns: [{regex: '(?<x>1)', units: {y: ms}}]}"))),
             Catch::Contains("units.y is not a group of regex"));
  CHECK_THAT(error_of(load(suite_with("{parser: regex, patterns: ['(?<x>[1)']}"))),
             Catch::Contains("suite.yaml:5:41") && Catch::Contains("does not compile"));
  CHECK_THAT(error_of(load(suite_with("{parser: ais-bench}"))), Catch::Contains("did you mean 'ais_bench'"));
  CHECK_THAT(error_of(load(suite_with("{parser: mindspore, batch_size: \"{bacth}\"}"))),
             Catch::Contains("metrics.batch_size: unknown placeholder '{bacth}'"));
}

TEST_CASE("slots: in the suite, a profile or --slots, with errors at file:line", "[suite]") {
  const std::string body = "defaults: {repeats: 1}\nworkloads:\n  - name: w\n    command: [x]\n";
  auto s = load("suite: s\nslots: {kind: npu, devices: [0-3, 6, 7], per_trial: 2}\n" + body);
  REQUIRE(s);
  REQUIRE(s->slots);
  CHECK(s->slots->kind == "npu");
  CHECK(s->slots->devices == std::vector<int>{0, 1, 2, 3, 6, 7});
  CHECK(s->slots->per_trial == 2);
  auto cpu = load("suite: s\nslots: {cpus: \"0-15\", per_trial: 4}\n" + body);
  REQUIRE(cpu);
  CHECK(cpu->slots->kind == "cpu");
  CHECK(cpu->slots->devices.size() == 16);
  CHECK_FALSE(load("suite: s\n" + body)->slots);

  auto odd = load("suite: s\nslots: {kind: npu, devices: [0-6], per_trial: 2}\n" + body);
  REQUIRE_FALSE(odd);
  CHECK(odd.error().message.find("suite.yaml:2:") != std::string::npos);
  CHECK(odd.error().message.find("left over") != std::string::npos);
  auto unknown = load("suite: s\nslots: {kind: mlu, devices: [0, 1]}\n" + body);
  REQUIRE_FALSE(unknown);
  CHECK(unknown.error().message.find("env:") != std::string::npos);
  CHECK(load("suite: s\nslots: {kind: mlu, devices: [0, 1], env: MLU_VISIBLE_DEVICES}\n" + body));
  auto typo = load("suite: s\nslots: {kind: npu, device: [0]}\n" + body);
  REQUIRE_FALSE(typo);
  CHECK(typo.error().message.find("device") != std::string::npos);
  auto bad = load("suite: s\nslots: {kind: npu, devices: [3-1]}\n" + body);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("slots.devices") != std::string::npos);

  // --slots wins over the suite's; the short form and the mapping.
  suite::LoadOptions lo;
  auto flag = suite::parse_slots_option("npu:0-7/2");
  REQUIRE(flag);
  CHECK(flag->devices.size() == 8);
  CHECK(flag->per_trial == 2);
  lo.slots = *flag;
  auto over = load("suite: s\nslots: {kind: npu, devices: [0]}\n" + body, lo);
  REQUIRE(over);
  CHECK(over->slots->per_trial == 2);
  auto mapping = suite::parse_slots_option("{kind: cuda, devices: [0, 1]}");
  REQUIRE(mapping);
  CHECK(mapping->kind == "cuda");
  CHECK_FALSE(suite::parse_slots_option("0-7"));
  CHECK_FALSE(suite::parse_slots_option("npu:0-7/3"));
  CHECK_FALSE(suite::parse_slots_option("npu:zero"));
}

TEST_CASE("slots: the ascend-910b profile has 8 NPU slots, cpu one", "[suite]") {
  const std::string body = "suite: s\ndefaults: {repeats: 1}\nworkloads:\n  - name: w\n    command: [x]\n";
  suite::LoadOptions lo;
  lo.profiles = {perfgate::test::source_dir() + "/configs/profiles/ascend-910b.yaml"};
  auto s = load(body, lo);
  REQUIRE(s);
  REQUIRE(s->slots);
  CHECK(s->slots->kind == "npu");
  CHECK(s->slots->devices == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(s->slots->per_trial == 1);
  lo.profiles = {perfgate::test::source_dir() + "/configs/profiles/cpu.yaml"};
  auto c = load(body, lo);
  REQUIRE(c);
  CHECK_FALSE(c->slots);
}

TEST_CASE("a matrix that would expand past 10,000 configurations is refused at its line", "[suite]") {
  std::string values;
  for (int i = 0; i < 1000; ++i) values += (i ? "," : "") + std::to_string(i);
  auto r = load("suite: big\nworkloads:\n  - name: w\n    command: [run, \"{a}\", \"{b}\"]\n    matrix:\n      a: [" +
                values + "]\n      b: [" + values + "]\n");
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("suite.yaml:6:7") && Catch::Contains("1000000 configurations") &&
                                    Catch::Contains("a 1000 x b 1000"));
  // --set adding an axis counts too; 1,000 x 10 is allowed, 1,000 x 11 not.
  suite::LoadOptions opt;
  opt.overrides = {*suite::parse_override("b=" + values.substr(0, values.find(",10,")))};
  auto ok = load("suite: big\nworkloads:\n  - name: w\n    command: [run, \"{a}\", \"{b}\"]\n    matrix:\n      a: [" +
                     values + "]\n      b: [1]\n",
                 opt);
  CHECK(ok);
  opt.overrides = {*suite::parse_override("b=" + values.substr(0, values.find(",11,")))};
  auto over =
      load("suite: big\nworkloads:\n  - name: w\n    command: [run, \"{a}\", \"{b}\"]\n    matrix:\n      a: [" +
               values + "]\n      b: [1]\n",
           opt);
  REQUIRE_FALSE(over);
  CHECK_THAT(over.error().message, Catch::Contains("11000 configurations") && Catch::Contains("more than the 10000"));
}
