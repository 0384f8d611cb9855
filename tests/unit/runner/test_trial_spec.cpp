#include <catch2/catch.hpp>

#include <algorithm>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/exec/capture.hpp"
#include "harness/runner/trial_spec.hpp"
#include "harness/suite/loader.hpp"
#include "harness/suite/matrix.hpp"
#include "harness/suite/plan.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;

namespace {

struct Built {
  model::Suite suite;
  model::Plan plan;
};

Built build(const std::string& yaml) {
  auto s = suite::load_suite_text(yaml, "spec.yaml", "/suites");
  if (!s) FAIL(s.error().message);
  Built b{*s, {}};
  b.plan = suite::make_plan(b.suite, suite::expand(b.suite), 7);
  return b;
}

runner::TrialContext context(bool soak = false) {
  runner::TrialContext ctx;
  ctx.run_id = 42;
  ctx.run_dir = "/results/runs/42";
  ctx.started_at_unix_s = 1000;
  ctx.soak = soak;
  ctx.base_env = {{"PATH", "/usr/bin"}, {"HOME", "/root"}};
  return ctx;
}

// The spec of the trial of `label`'s first repeat.
runner::TrialSpec spec_of(const Built& b, const std::string& label, const runner::TrialContext& ctx) {
  for (std::size_t i = 0; i < b.plan.trials.size(); ++i)
    if (b.plan.cases[b.plan.trials[i].case_index].label == label && b.plan.trials[i].repeat == 0)
      return runner::build_trial_spec(b.suite, b.plan, i, ctx);
  FAIL("no trial of " << label);
  return {};
}

}  // namespace

TEST_CASE("trial spec: parameters reach argv and env as elements, never through a shell", "[runner]") {
  auto b = build(R"(
suite: s
defaults: {repeats: 2, timeout: 90s}
workloads:
  - name: train-job
    command: [python3, train.py, --bucket-mb, "{bucket_mb}", --out, "{trial_dir}/x; rm -rf /", "{metrics_file}"]
    env: {MY_BUCKET: "b{bucket_mb}"}
    matrix:
      bucket_mb: [25, 50]
)");
  REQUIRE(b.plan.trials.size() == 4);
  auto t = spec_of(b, "train-job bucket_mb=50", context());
  CHECK(t.error.empty());
  CHECK(t.repeat == 0);
  // <seq + 1>-<workload, path-safe>-r<repeat + 1>
  CHECK(t.trial_dir == fmt::format("/results/runs/42/{:04}-train-job-r1", t.seq + 1));
  CHECK(t.metrics_path == t.trial_dir + "/metrics.jsonl");
  CHECK_FALSE(t.launch.shell);
  CHECK(t.launch.argv == std::vector<std::string>{"python3", "train.py", "--bucket-mb", "50", "--out",
                                                  t.trial_dir + "/x; rm -rf /", t.metrics_path});
  CHECK(t.launch.cwd == b.suite.workloads[0].cwd);
  CHECK(t.launch.stdout_path == t.trial_dir + "/stdout.log");
  CHECK(t.launch.stderr_path == t.trial_dir + "/stderr.log");
  CHECK(t.launch.timeout_s == Approx(90));
  CHECK(t.duration_s == Approx(90));
  CHECK(t.deadline_unix_s == Approx(1090));
  // perfgate's environment, the workload's, and the trial's own variables.
  CHECK(t.launch.env.at("PATH") == "/usr/bin");
  CHECK(t.launch.env.at("MY_BUCKET") == "b50");
  CHECK(t.launch.env.at("PERFGATE_PARAM_BUCKET_MB") == "50");
  CHECK(t.launch.env.at("PERFGATE_PARAMS") == R"({"bucket_mb":50})");
  CHECK(t.launch.env.at("PERFGATE_METRICS") == t.metrics_path);
  CHECK(t.launch.env.at("PERFGATE_TRIAL_DIR") == t.trial_dir);
  CHECK(t.launch.env.at("PERFGATE_RUN_ID") == "42");
  CHECK(t.launch.env.at("PERFGATE_REPEAT") == "0");
  CHECK(t.launch.env.at("PERFGATE_WORKLOAD") == "train-job");
  CHECK(t.launch.env.at("PERFGATE_DEADLINE") == "1090.000");
  CHECK(t.launch.env.at("PERFGATE_DURATION_S") == "90");
  // No sampler asked for and not a soak: no host probe.
  CHECK(t.samplers.empty());
}

TEST_CASE("trial spec: a soak's duration is the timeout and the host probe is on", "[runner]") {
  auto b = build(R"(
suite: soak
workloads:
  - name: w
    command: [./w, --seconds, "{duration_s}", --until, "{deadline}"]
    samplers: [proc]
)");
  auto ctx = context(true);
  ctx.soak_duration_s = 3600;
  auto t = runner::build_trial_spec(b.suite, b.plan, 0, ctx);
  CHECK(t.duration_s == Approx(3600));
  CHECK(t.launch.timeout_s == Approx(3600));
  CHECK(t.launch.argv == std::vector<std::string>{"./w", "--seconds", "3600", "--until", "4600"});
  REQUIRE(t.samplers.size() == 2);
  CHECK(t.samplers[0].kind == "proc");
  CHECK(t.samplers[1].kind == "host");
  // A soak that turns the probe off gets none.
  auto off = build(R"(
suite: soak
workloads:
  - name: w
    command: [./w]
    host_probe: off
)");
  CHECK(runner::build_trial_spec(off.suite, off.plan, 0, ctx).samplers.empty());
}

TEST_CASE("trial spec: gbench without a file asks the binary for JSON in the trial folder", "[runner]") {
  auto b = build(R"(
suite: g
workloads:
  - name: bench
    command: [./bench_copy, --benchmark_repetitions=3]
    metrics: {parser: gbench}
  - name: sh
    shell: true
    command: ["./bench_copy --benchmark_filter=BM_copy"]
    metrics: {parser: gbench}
  - name: log
    command: [./train]
    cwd: jobs
    metrics: {parser: megatron, file: "logs/{repeat}.log"}
)");
  auto ctx = context();
  auto bench = spec_of(b, "bench", ctx);
  CHECK(bench.metrics.file == bench.trial_dir + "/gbench.json");
  CHECK(bench.launch.argv == std::vector<std::string>{"./bench_copy", "--benchmark_repetitions=3",
                                                      "--benchmark_out=" + bench.metrics.file,
                                                      "--benchmark_out_format=json"});
  auto sh = spec_of(b, "sh", ctx);
  CHECK(sh.launch.shell);
  REQUIRE(sh.launch.argv.size() == 1);
  CHECK(sh.launch.argv[0] == "./bench_copy --benchmark_filter=BM_copy '--benchmark_out=" + sh.metrics.file +
                                 "' --benchmark_out_format=json");
  // A log file with placeholders, relative to the workload's folder.
  auto log = spec_of(b, "log", ctx);
  CHECK(log.metrics.file == "/suites/jobs/logs/0.log");
  CHECK(log.launch.cwd == "/suites/jobs");
  CHECK(log.launch.argv == std::vector<std::string>{"./train"});
}

TEST_CASE("trial spec: every trial of the plan gets its own folder, in plan order", "[runner]") {
  auto b = build(R"(
suite: s
defaults: {repeats: 3}
workloads:
  - name: w
    command: [./w, "{x}"]
    matrix: {x: [1, 2]}
)");
  std::vector<std::string> dirs;
  for (std::size_t i = 0; i < b.plan.trials.size(); ++i) {
    auto t = runner::build_trial_spec(b.suite, b.plan, i, context());
    CHECK(t.seq == b.plan.trials[i].seq);
    CHECK(t.case_index == b.plan.trials[i].case_index);
    dirs.push_back(t.trial_dir);
  }
  std::sort(dirs.begin(), dirs.end());
  CHECK(std::unique(dirs.begin(), dirs.end()) == dirs.end());
  CHECK(dirs.size() == 6);
  CHECK(runner::safe_path_name("a b/c:d") == "a_b_c_d");
  CHECK(runner::safe_path_name(std::string(100, 'x')).size() == 60);
}

TEST_CASE("trial spec: the slot's devices are exported, in placeholders and for the samplers", "[runner]") {
  auto b = build(R"(suite: s
slots: {kind: npu, devices: [0-7], per_trial: 2}
defaults: {repeats: 1, samplers: [npu-smi, nvidia-smi, proc]}
workloads:
  - name: w
    command: [train, --devices, "{slot.devices}", --slot, "{slot.index}"]
    env: {RANK_TABLE: "/etc/hccl-{slot.index}.json"}
)");
  REQUIRE(b.suite.slots);
  CHECK(b.suite.slots->per_trial == 2);
  auto ctx = context();
  ctx.slot = model::Slot{2, "npu", {4, 5}, "ASCEND_RT_VISIBLE_DEVICES"};
  ctx.base_env["ASCEND_RT_VISIBLE_DEVICES"] = "0-7";  // inherited: the slot's wins
  auto t = runner::build_trial_spec(b.suite, b.plan, 0, ctx);
  CHECK(t.error.empty());
  CHECK(t.launch.argv == std::vector<std::string>{"train", "--devices", "4,5", "--slot", "2"});
  CHECK(t.launch.env.at("ASCEND_RT_VISIBLE_DEVICES") == "4,5");
  CHECK(t.launch.env.at("PERFGATE_SLOT") == "2");
  CHECK(t.launch.env.at("PERFGATE_SLOT_DEVICES") == "4,5");
  CHECK(t.launch.env.at("RANK_TABLE") == "/etc/hccl-2.json");
  CHECK(t.launch.cpus.empty());
  CHECK(t.slot.devices == std::vector<int>{4, 5});
  // npu-smi watches the slot's cards; nvidia-smi is not about NPU slots.
  for (const auto& s : t.samplers) {
    INFO(s.kind);
    if (s.kind == "npu-smi")
      CHECK(s.devices == std::vector<int>{4, 5});
    else
      CHECK(s.devices.empty());
  }
}

TEST_CASE("trial spec: a cpu slot pins the process, without a device variable", "[runner]") {
  auto b = build("suite: s\ndefaults: {repeats: 1}\nworkloads:\n  - name: w\n    command: [x]\n");
  auto ctx = context();
  ctx.slot = model::Slot{1, "cpu", {4, 5, 6, 7}, ""};
  auto t = runner::build_trial_spec(b.suite, b.plan, 0, ctx);
  CHECK(t.launch.cpus == std::vector<int>{4, 5, 6, 7});
  CHECK(t.launch.env.at("PERFGATE_SLOT_DEVICES") == "4,5,6,7");
  CHECK(t.launch.env.count("CUDA_VISIBLE_DEVICES") == 0);
  CHECK(t.launch.env.count("ASCEND_RT_VISIBLE_DEVICES") == 0);
  // No slot: slot 0 without devices, nothing pinned.
  auto plain = runner::build_trial_spec(b.suite, b.plan, 0, context());
  CHECK(plain.launch.cpus.empty());
  CHECK(plain.launch.env.at("PERFGATE_SLOT") == "0");
}

TEST_CASE("trial spec: command.sh reruns the trial as it ran, without secrets", "[runner]") {
  test::TempDir dir("rerun");
  exec::LaunchSpec spec;
  spec.argv = {"sh",    "-c",   R"sh(printf '%s|' "$@" "$MY_VAR" "${DROPPED-unset}" "$(pwd)")sh",
               "argv0", "a b",  "x; rm -rf /",
               "it's",  "$HOME"};
  spec.cwd = dir.str();
  const std::map<std::string, std::string> base = {
      {"PATH", "/usr/bin:/bin"}, {"DROPPED", "gone"}, {"KEPT", "k"}, {"DB_PASSWORD", "inherited-secret"}};
  spec.env = base;
  spec.env.erase("DROPPED");
  spec.env["MY_VAR"] = "v w";
  spec.env["API_TOKEN"] = "s3cret";
  spec.env["DB_PASSWORD"] = "changed-secret";
  spec.env["MIRROR"] = "https://user:url-secret@mirror.example/simple";
  const auto script = runner::rerun_script(spec, base, "/elsewhere");
  CHECK(script.find("s3cret") == std::string::npos);
  CHECK(script.find("changed-secret") == std::string::npos);
  CHECK(script.find("url-secret") == std::string::npos);
  CHECK(script.find("API_TOKEN DB_PASSWORD MIRROR") != std::string::npos);  // named, so a person sets them
  CHECK(script.find("KEPT") == std::string::npos);                          // unchanged: inherited as it is
  test::write_file(dir / "command.sh", script);
  auto out = exec::capture_output({"sh", (dir / "command.sh").string()}, 10);
  REQUIRE(out);
  CHECK(*out == "a b|x; rm -rf /|it's|$HOME|v w|unset|" + dir.str() + "|\n");  // capture_output ends lines

  SECTION("the deadline is as far from the rerun's start as it was from the trial's") {
    spec.argv = {"sh", "-c", "echo $PERFGATE_DEADLINE"};
    spec.env["PERFGATE_DEADLINE"] = "1000.000";  // long past
    spec.timeout_s = 3600;
    test::write_file(dir / "deadline.sh", runner::rerun_script(spec, base, dir.str()));
    const double now_s = static_cast<double>(std::time(nullptr));
    auto deadline = exec::capture_output({"sh", (dir / "deadline.sh").string()}, 10);
    REQUIRE(deadline);
    CHECK(std::stod(*deadline) == Approx(now_s + 3600).margin(30));
  }

  SECTION("a shell workload's line is run by /bin/sh, and an unset cwd is perfgate's") {
    spec.shell = true;
    spec.argv = {"printf '%s|' \"$MY_VAR\" \"$(pwd)\""};
    spec.cwd.clear();
    test::write_file(dir / "shell.sh", runner::rerun_script(spec, base, dir.str()));
    auto shell_out = exec::capture_output({"sh", (dir / "shell.sh").string()}, 10);
    REQUIRE(shell_out);
    CHECK(*shell_out == "v w|" + dir.str() + "|\n");
  }
}
