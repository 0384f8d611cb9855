#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "harness/model/params.hpp"
#include "harness/runner/runner.hpp"
#include "harness/suite/matrix.hpp"
#include "harness/suite/plan.hpp"
#include "harness/util/interrupt.hpp"
#include "tests/unit/support/fake_launcher.hpp"
#include "tests/unit/support/fake_machine.hpp"
#include "tests/unit/support/paths.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;
using model::Params;
using model::Scalar;
using test::Script;
namespace fs = std::filesystem;

namespace {

struct InterruptGuard {
  InterruptGuard() { util::reset_interrupts(); }
  ~InterruptGuard() { util::reset_interrupts(); }
};

model::Axis axis(const std::string& name, std::vector<std::string> values) {
  model::Axis a;
  a.name = name;
  for (auto& v : values) a.values.push_back(Params{{name, Scalar::infer(v)}});
  return a;
}

model::Workload workload(const std::string& name, int repeats, model::Warmup warmup = {}) {
  model::Workload w;
  w.name = name;
  w.command = {"workload-binary", "--steps", "10"};
  w.cwd = fs::temp_directory_path().string();
  w.repeats = repeats;
  w.warmup = warmup;
  w.timeout_s = 77;
  w.kill_grace_s = 3;
  w.log_limit_bytes = 1 << 20;
  return w;
}

// A temp store and artifacts directory, and what run_plan needs around them.
struct Harness {
  test::TempDir tmp{"runner"};
  std::unique_ptr<store::Store> st;
  runner::RunOptions opts;
  test::FakeLauncher launcher;
  test::FakeMachine machine;

  Harness() {
    opts.machine = &machine;
    auto s = store::open_sqlite_store((tmp / "perfgate.db").string());
    REQUIRE(s.has_value());
    st = std::move(*s);
    opts.tags = {"unit"};
    opts.commit = "0123abcd";
    opts.branch = "test";
    opts.artifacts_root = (tmp / "results").string();
    opts.command_line = "perfgate run unit.yaml";
    opts.probe_python = false;
  }

  model::Plan plan(const model::Suite& s, std::uint64_t seed = 1) {
    return suite::make_plan(s, suite::expand(s), seed);
  }

  runner::RunOutcome run(const model::Suite& s, const model::Plan& p) {
    auto r = runner::run_plan(s, p, *st, launcher, opts);
    if (!r) FAIL("run_plan: " << r.error().message);
    return *r;
  }

  store::RunData load(long long run_id) {
    auto d = st->load_run(run_id);
    REQUIRE(d.has_value());
    return *d;
  }
};

model::Suite suite_of(std::vector<model::Workload> ws) {
  model::Suite s;
  s.name = "unit";
  s.path = "unit.yaml";
  s.dir = fs::temp_directory_path().string();
  s.workloads = std::move(ws);
  return s;
}

const model::MetricSummary* find(const model::TrialRecord& t, const std::string& metric) {
  for (const auto& m : t.summaries)
    if (m.metric == metric) return &m;
  return nullptr;
}

std::string step_line(int step, double step_time_ms, double throughput) {
  return fmt::format(R"({{"step": {}, "step_time_ms": {}, "throughput": {}}})", step, step_time_ms, throughput);
}

}  // namespace

TEST_CASE("a trial whose peak RSS was not measured records no peak_rss_mb and says why", "[runner]") {
  InterruptGuard guard;
  Harness h;
  auto s = suite_of({workload("train", 2)});
  h.launcher.script = [&](const exec::LaunchSpec&, int call) {
    Script sc;
    sc.metrics_lines.push_back(step_line(0, 10, 100));
    sc.result.wall_s = 0.02;
    if (call == 0) {
      sc.result.peak_rss_unmeasured = "peak RSS not measured: ended after 20 ms";
    } else {
      sc.result.peak_rss_mb = 9.5;
    }
    return sc;
  };
  auto out = h.run(s, h.plan(s));
  CHECK(out.trials_ok == 2);
  auto d = h.load(out.run_id);
  REQUIRE(d.trials.size() == 2);
  int measured = 0, unmeasured = 0;
  for (const auto& t : d.trials) {
    INFO("trial " << t.seq << ": " << t.notes);
    CHECK(find(t, "wall_time_s") != nullptr);
    if (const auto* rss = find(t, "peak_rss_mb")) {
      ++measured;
      CHECK(rss->value == 9.5);
      CHECK(t.notes.find("peak RSS not measured") == std::string::npos);
    } else {
      ++unmeasured;
      CHECK(t.peak_rss_mb == 0);
      CHECK(t.notes.find("peak RSS not measured: ended after 20 ms") != std::string::npos);
    }
  }
  CHECK(measured == 1);
  CHECK(unmeasured == 1);
}

TEST_CASE("warm-up by steps leaves the first N records out of the summaries", "[runner]") {
  InterruptGuard guard;
  Harness h;
  auto s = suite_of({workload("train", 1, {model::Warmup::Kind::Steps, 3})});
  const std::vector<double> st_ms = {100, 90, 80, 10, 11, 12, 13, 14, 15, 16};
  const std::vector<double> tp = {10, 20, 30, 100, 110, 120, 130, 140, 150, 160};
  h.launcher.script = [&](const exec::LaunchSpec&, int) {
    Script sc;
    for (std::size_t i = 0; i < st_ms.size(); ++i)
      sc.metrics_lines.push_back(step_line(static_cast<int>(i), st_ms[i], tp[i]));
    sc.metrics_lines.push_back(R"({"step": 10, "loss": NaN})");
    sc.metrics_lines.push_back("this line is garbage");
    return sc;
  };
  auto out = h.run(s, h.plan(s));
  CHECK(out.status == model::RunStatus::Completed);
  CHECK(out.trials_total == 1);
  CHECK(out.trials_ok == 1);

  auto d = h.load(out.run_id);
  REQUIRE(d.trials.size() == 1);
  const auto& t = d.trials[0];
  CHECK(t.status == model::TrialStatus::Ok);
  CHECK(t.steps == 11);
  CHECK(t.malformed_lines == 1);
  CHECK_THAT(t.notes, Catch::Contains("malformed") && Catch::Contains("NaN"));

  const auto* st = find(t, "step_time_ms");
  REQUIRE(st != nullptr);
  CHECK(st->n_total == 10);
  CHECK(st->n_steady == 7);
  CHECK(st->median == 13);
  CHECK(st->min == 10);
  CHECK(st->max == 16);
  CHECK(st->value == 13);
  CHECK_FALSE(st->is_scalar);
  const auto* thr = find(t, "throughput");
  REQUIRE(thr != nullptr);
  CHECK(thr->n_steady == 7);
  CHECK(thr->mean == Approx(130));
  CHECK(thr->value ==
        Approx(7.0 / (1 / 100.0 + 1 / 110.0 + 1 / 120.0 + 1 / 130.0 + 1 / 140.0 + 1 / 150.0 + 1 / 160.0)));

  // First-step (compile) time is the first record, warm-up or not.
  const auto* first = find(t, "first_step_ms");
  REQUIRE(first != nullptr);
  CHECK(first->value == 100);
  CHECK(first->is_scalar);
  // The harness's own numbers are there.
  CHECK(find(t, "wall_time_s") != nullptr);
  CHECK(find(t, "peak_rss_mb") != nullptr);

  // Raw samples are all stored, NaN included.
  auto loss_id = h.st->metric_id(model::MetricInfo::inferred("loss"));
  REQUIRE(loss_id.has_value());
  auto loss = h.st->load_samples(t.id, *loss_id);
  REQUIRE(loss.has_value());
  REQUIRE(loss->size() == 1);
  CHECK(std::isnan((*loss)[0].value));
  auto st_id = h.st->metric_id(model::MetricInfo::inferred("step_time_ms"));
  REQUIRE(st_id.has_value());
  auto samples = h.st->load_samples(t.id, *st_id);
  REQUIRE(samples.has_value());
  REQUIRE(samples->size() == 10);
  CHECK((*samples)[0].value == 100);
  CHECK((*samples)[9].step == 9);
}

TEST_CASE("a run reads the machine through its probe and runs no tool of its own", "[runner]") {
  InterruptGuard guard;
  Harness h;
  std::ifstream fixture(test::data_dir() + "/fixtures/npu_smi_info_910B2C_with_procs.txt");
  REQUIRE(fixture);
  h.machine.tools["npu-smi info"] = std::string(std::istreambuf_iterator<char>(fixture), {});
  auto s = suite_of({workload("train", 1, {})});
  h.launcher.script = [&](const exec::LaunchSpec&, int) {
    Script sc;
    sc.metrics_lines.push_back(step_line(0, 10, 100));
    return sc;
  };
  auto out = h.run(s, h.plan(s));
  auto run = h.load(out.run_id).run;
  CHECK(run.host == "unit-node-01");
  CHECK_THAT(run.fingerprint_json, Catch::Contains("Fake CPU @ 2.0GHz"));
  CHECK_THAT(run.fingerprint_json, Catch::Contains("910B2C"));
  CHECK(run.git_commit == "0123abcd");
  // Every tool the run asked for went to the fake: nvidia-smi and npu-smi for
  // the fingerprint, git for {worktree}.
  auto asked = [&](const std::string& prefix) {
    return std::any_of(h.machine.calls.begin(), h.machine.calls.end(),
                       [&](const std::string& c) { return c.starts_with(prefix); });
  };
  CHECK(asked("nvidia-smi"));
  CHECK(asked("npu-smi info"));
  CHECK(asked("git -C"));
}

TEST_CASE("warm-up by seconds uses the records' time", "[runner]") {
  InterruptGuard guard;
  Harness h;
  auto s = suite_of({workload("train", 1, {model::Warmup::Kind::Seconds, 1.0})});
  SECTION("t_s written by the workload") {
    h.launcher.script = [](const exec::LaunchSpec&, int) {
      Script sc;
      sc.tick_s = 10;  // arrival times far past the warm-up: only t_s may decide
      const char* ts[] = {"0.2", "0.4", "0.6", "0.8", "1.0", "1.2", "1.4", "1.6", "1.8", "2.0"};
      for (int i = 0; i < 10; ++i)
        sc.metrics_lines.push_back(
            fmt::format(R"({{"step": {}, "t_s": {}, "step_time_ms": {}}})", i, ts[i], i < 4 ? 500 : 20 + i));
      return sc;
    };
    auto out = h.run(s, h.plan(s));
    auto d = h.load(out.run_id);
    REQUIRE(d.trials.size() == 1);
    const auto* st = find(d.trials[0], "step_time_ms");
    REQUIRE(st != nullptr);
    CHECK(st->n_total == 10);
    CHECK(st->n_steady == 6);  // t_s >= 1.0
    CHECK(st->max == 29);
    CHECK(st->min == 24);
    CHECK(st->median == Approx(26.5));
  }
  SECTION("arrival time when the workload gives none") {
    h.launcher.script = [](const exec::LaunchSpec&, int) {
      Script sc;
      sc.tick_s = 0.25;  // line i arrives at (i + 1) * 0.25 s
      for (int i = 0; i < 10; ++i)
        sc.metrics_lines.push_back(fmt::format(R"({{"step": {}, "step_time_ms": {}}})", i, i < 3 ? 500 : 20 + i));
      return sc;
    };
    auto out = h.run(s, h.plan(s));
    auto d = h.load(out.run_id);
    const auto* st = find(d.trials[0], "step_time_ms");
    REQUIRE(st != nullptr);
    CHECK(st->n_steady == 7);  // arrivals at 1.0 s and later
    CHECK(st->max == 29);
    CHECK(st->min == 23);
  }
}

TEST_CASE("rates are summarised by the time-weighted mean, times by the median", "[runner]") {
  InterruptGuard guard;
  Harness h;
  auto s = suite_of({workload("train", 1)});
  h.launcher.script = [](const exec::LaunchSpec&, int) {
    Script sc;
    sc.metrics_lines.push_back(R"({"meta": {"better": {"custom": "higher"}, "units": {"custom": "widgets/s"}}})");
    const double tp[] = {100, 100, 100, 100, 600};
    const double ms[] = {10, 10, 10, 10, 50};
    const double cu[] = {1, 1, 1, 1, 6};
    for (int i = 0; i < 5; ++i)
      sc.metrics_lines.push_back(
          fmt::format(R"({{"step": {}, "step_time_ms": {}, "throughput": {}, "custom": {}}})", i, ms[i], tp[i], cu[i]));
    sc.metrics_lines.push_back(R"({"summary": {"accuracy": 0.875}})");
    return sc;
  };
  auto out = h.run(s, h.plan(s));
  auto d = h.load(out.run_id);
  REQUIRE(d.trials.size() == 1);
  const auto& t = d.trials[0];
  const auto* thr = find(t, "throughput");
  REQUIRE(thr != nullptr);
  CHECK(thr->mean == Approx(200));
  CHECK(thr->median == Approx(100));
  CHECK(thr->value == Approx(120));  // 5 / (4/100 + 1/600): total work over total time
  const auto* st = find(t, "step_time_ms");
  REQUIRE(st != nullptr);
  CHECK(st->mean == Approx(18));
  CHECK(st->median == Approx(10));
  CHECK(st->value == Approx(10));
  const auto* cu = find(t, "custom");  // higher-is-better by the workload's meta
  REQUIRE(cu != nullptr);
  CHECK(cu->value == Approx(1.2));
  const auto* acc = find(t, "accuracy");
  REQUIRE(acc != nullptr);
  CHECK(acc->is_scalar);
  CHECK(acc->value == 0.875);
  bool found_custom = false;
  for (const auto& m : d.metrics)
    if (m.name == "custom") {
      found_custom = true;
      CHECK(m.better == model::Better::Higher);
      CHECK(m.unit == "widgets/s");
    }
  CHECK(found_custom);
}

TEST_CASE("metric lines on stdout are recorded too", "[runner]") {
  InterruptGuard guard;
  Harness h;
  auto s = suite_of({workload("train", 1)});
  h.launcher.script = [](const exec::LaunchSpec&, int) {
    Script sc;
    sc.stdout_lines = {"Epoch 1", R"(PERFGATE {"step": 0, "throughput": 50})",
                       R"(PERFGATE {"step": 1, "throughput": 70})"};
    return sc;
  };
  auto out = h.run(s, h.plan(s));
  auto d = h.load(out.run_id);
  const auto* thr = find(d.trials[0], "throughput");
  REQUIRE(thr != nullptr);
  CHECK(thr->n_total == 2);
  CHECK(thr->value == Approx(2.0 / (1 / 50.0 + 1 / 70.0)));
  CHECK(d.trials[0].steps == 2);
}

TEST_CASE("a failed trial is recorded with its stderr and the others still run", "[runner]") {
  InterruptGuard guard;
  Harness h;
  auto w = workload("train", 1);
  w.matrix = {axis("x", {"1", "2", "3"})};
  auto s = suite_of({w});
  h.launcher.script = [](const exec::LaunchSpec& spec, int) {
    Script sc;
    sc.metrics_lines = {step_line(0, 10, 100), step_line(1, 11, 101)};
    const auto& x = spec.env.at("PERFGATE_PARAM_X");
    if (x == "2") sc.exits(1, "Traceback (most recent call last):\nValueError: boom");
    if (x == "3") {
      sc.result.outcome = exec::Outcome::Signaled;
      sc.result.signal = 9;
      sc.result.exit_code = -1;
    }
    return sc;
  };
  auto out = h.run(s, h.plan(s));
  CHECK(h.launcher.specs.size() == 3);
  CHECK(out.status == model::RunStatus::Completed);
  CHECK(out.trials_ok == 1);
  CHECK(out.trials_failed == 2);
  CHECK(out.trials_not_run == 0);

  auto d = h.load(out.run_id);
  REQUIRE(d.trials.size() == 3);
  std::map<std::string, const model::TrialRecord*> by_x;
  for (const auto& t : d.trials)
    for (const auto& c : d.configs)
      if (c.id == t.config_id) by_x[model::params_from_json(c.params_json).at("x").text] = &t;
  REQUIRE(by_x.size() == 3);
  CHECK(by_x["1"]->status == model::TrialStatus::Ok);
  CHECK(by_x["1"]->error.empty());
  CHECK(by_x["2"]->status == model::TrialStatus::Failed);
  CHECK(by_x["2"]->exit_code == 1);
  CHECK_THAT(by_x["2"]->error, Catch::Contains("exited with code 1") && Catch::Contains("ValueError: boom"));
  CHECK(by_x["3"]->status == model::TrialStatus::Failed);
  CHECK(by_x["3"]->signal == 9);
  CHECK_THAT(by_x["3"]->error, Catch::Contains("signal 9"));
  auto runs = h.st->list_runs(5);
  REQUIRE(runs.has_value());
  CHECK((*runs)[0].trials_failed == 2);
  CHECK((*runs)[0].run.status == model::RunStatus::Completed);
}

TEST_CASE("a run whose every trial failed is Failed", "[runner]") {
  InterruptGuard guard;
  Harness h;
  auto w = workload("train", 2);
  w.matrix = {axis("x", {"1", "2"})};
  auto s = suite_of({w});
  h.launcher.script = [](const exec::LaunchSpec&, int) { return Script().exits(2, "bad"); };
  auto out = h.run(s, h.plan(s));
  CHECK(out.status == model::RunStatus::Failed);
  CHECK(out.trials_total == 4);
  CHECK(out.trials_failed == 4);
  CHECK(out.trials_ok == 0);
  CHECK(h.load(out.run_id).run.status == model::RunStatus::Failed);
}

TEST_CASE("an interrupt stops the run and keeps finished trials", "[runner]") {
  InterruptGuard guard;
  Harness h;
  auto w = workload("train", 2);
  w.matrix = {axis("x", {"1", "2"})};
  auto s = suite_of({w});
  h.launcher.script = [](const exec::LaunchSpec&, int call) {
    Script sc;
    sc.metrics_lines = {step_line(0, 10, 100)};
    if (call == 1) sc.during = [] { util::request_interrupt(); };
    return sc;
  };
  SECTION("requested before the first trial") {
    util::request_interrupt();
    auto out = h.run(s, h.plan(s));
    CHECK(out.status == model::RunStatus::Interrupted);
    CHECK(h.launcher.specs.empty());
    CHECK(out.trials_not_run == 4);
    auto d = h.load(out.run_id);
    CHECK(d.run.status == model::RunStatus::Interrupted);
    CHECK(d.trials.empty());
  }
  SECTION("requested while the second trial runs") {
    auto out = h.run(s, h.plan(s));
    CHECK(out.status == model::RunStatus::Interrupted);
    CHECK(h.launcher.specs.size() == 2);
    CHECK(out.trials_ok == 2);
    CHECK(out.trials_not_run == 2);
    auto d = h.load(out.run_id);
    CHECK(d.run.status == model::RunStatus::Interrupted);
    REQUIRE(d.trials.size() == 2);
    for (const auto& t : d.trials) {
      CHECK(t.status == model::TrialStatus::Ok);
      CHECK(find(t, "throughput") != nullptr);
    }
  }
  SECTION("the launcher reports the trial interrupted") {
    h.launcher.script = [](const exec::LaunchSpec&, int) {
      Script sc;
      sc.result.outcome = exec::Outcome::Interrupted;
      sc.result.error = "interrupted; process group terminated";
      return sc;
    };
    auto out = h.run(s, h.plan(s));
    CHECK(out.status == model::RunStatus::Interrupted);
    CHECK(h.launcher.specs.size() == 1);
    auto d = h.load(out.run_id);
    REQUIRE(d.trials.size() == 1);
    CHECK(d.trials[0].status == model::TrialStatus::Interrupted);
  }
}

TEST_CASE("parameters reach the workload through argv, env and PERFGATE_* variables", "[runner]") {
  InterruptGuard guard;
  Harness h;
  auto w = workload("train", 2);
  w.command = {"prog",  "--bucket",       "{bucket_mb}", "--workers={dataloader.num_workers}", "--repeat", "{repeat}",
               "--out", "{metrics_file}", "{{literal}}"};
  w.env = {{"MODE", "{graph_mode}"}, {"PLAIN", "x"}};
  model::Axis dl;
  dl.name = "dataloader";
  dl.values = {Params{{"dataloader.num_workers", Scalar::infer("2")}, {"dataloader.prefetch", Scalar::infer("4")}}};
  w.matrix = {axis("bucket_mb", {"25"}), axis("graph_mode", {"eager"}), dl};
  auto s = suite_of({w});
  auto plan = h.plan(s);
  REQUIRE(plan.cases.size() == 1);
  auto out = h.run(s, plan);
  CHECK(out.status == model::RunStatus::Completed);
  REQUIRE(h.launcher.specs.size() == 2);

  for (int i = 0; i < 2; ++i) {
    INFO("launch " << i);
    const auto& spec = h.launcher.specs[static_cast<std::size_t>(i)];
    const auto& env = spec.env;
    REQUIRE(env.count("PERFGATE_METRICS") == 1);
    const std::string metrics = env.at("PERFGATE_METRICS");
    CHECK(fs::path(metrics).filename() == "metrics.jsonl");
    CHECK(metrics.rfind((h.tmp / "results").string(), 0) == 0);
    CHECK(fs::exists(metrics));
    CHECK(spec.argv == std::vector<std::string>{"prog", "--bucket", "25", "--workers=2", "--repeat",
                                                std::to_string(plan.trials[static_cast<std::size_t>(i)].repeat),
                                                "--out", metrics, "{literal}"});
    CHECK(env.at("PERFGATE_PARAM_BUCKET_MB") == "25");
    CHECK(env.at("PERFGATE_PARAM_GRAPH_MODE") == "eager");
    CHECK(env.at("PERFGATE_PARAM_DATALOADER_NUM_WORKERS") == "2");
    CHECK(env.at("PERFGATE_PARAM_DATALOADER_PREFETCH") == "4");
    CHECK(env.at("PERFGATE_PARAMS") == plan.cases[0].params_json);
    CHECK(env.at("PERFGATE_PARAMS") ==
          R"({"bucket_mb":25,"dataloader":{"num_workers":2,"prefetch":4},"graph_mode":"eager"})");
    CHECK(env.at("MODE") == "eager");
    CHECK(env.at("PLAIN") == "x");
    CHECK(env.at("PERFGATE_WORKLOAD") == "train");
    CHECK(spec.cwd == w.cwd);
    CHECK(spec.timeout_s == 77);
    CHECK(spec.kill_grace_s == 3);
    CHECK(spec.log_limit_bytes == 1u << 20);
    CHECK_FALSE(spec.shell);
    CHECK(fs::path(spec.stdout_path).parent_path() == fs::path(metrics).parent_path());
  }
  // Each trial has its own directory and metrics file.
  CHECK(h.launcher.specs[0].env.at("PERFGATE_METRICS") != h.launcher.specs[1].env.at("PERFGATE_METRICS"));

  auto d = h.load(out.run_id);
  CHECK(d.run.suite == "unit");
  CHECK(d.run.tags == std::vector<std::string>{"unit"});
  CHECK(d.run.git_commit == "0123abcd");
  CHECK(d.run.seed == plan.seed);
  CHECK(d.run.status == model::RunStatus::Completed);
  CHECK_THAT(d.run.plan_json, Catch::Contains("\"seed\":1"));
  REQUIRE(d.configs.size() == 1);
  CHECK(d.configs[0].params_json == plan.cases[0].params_json);
}

TEST_CASE("a trial that reports nothing gets a note", "[runner]") {
  InterruptGuard guard;
  Harness h;
  auto s = suite_of({workload("quiet", 1)});
  auto out = h.run(s, h.plan(s));
  auto d = h.load(out.run_id);
  REQUIRE(d.trials.size() == 1);
  CHECK(d.trials[0].status == model::TrialStatus::Ok);
  CHECK(d.trials[0].steps == 0);
  CHECK_THAT(d.trials[0].notes, Catch::Contains("PERFGATE_METRICS"));
}

TEST_CASE("a first_step_ms summary from the workload wins over the first step", "[runner]") {
  InterruptGuard guard;
  Harness h;
  auto s = suite_of({workload("train", 1)});
  h.launcher.script = [](const exec::LaunchSpec&, int) {
    Script sc;
    sc.tick_s = 0.5;
    sc.metrics_lines = {step_line(0, 900, 1), step_line(1, 10, 100), R"({"summary": {"first_step_ms": 2301.0}})"};
    return sc;
  };
  auto out = h.run(s, h.plan(s));
  auto d = h.load(out.run_id);
  REQUIRE(d.trials.size() == 1);
  const auto* first = find(d.trials[0], "first_step_ms");
  REQUIRE(first != nullptr);
  CHECK(first->value == 2301.0);
  int n_first = 0;
  for (const auto& m : d.trials[0].summaries) n_first += m.metric == "first_step_ms";
  CHECK(n_first == 1);
  // Launch to the first step record, by the launcher's clock.
  const auto* ttfs = find(d.trials[0], "time_to_first_step_s");
  REQUIRE(ttfs != nullptr);
  CHECK(ttfs->value == 0.5);
}

TEST_CASE("a fact reported again with another value keeps the last and says so", "[runner]") {
  InterruptGuard guard;
  Harness h;
  auto s = suite_of({workload("train", 1)});
  h.launcher.script = [](const exec::LaunchSpec&, int) {
    Script sc;
    sc.metrics_lines = {R"({"meta": {"kind": {"world_size": "fact"}}})", step_line(0, 10, 100),
                        R"({"summary": {"world_size": 8}})", R"({"summary": {"world_size": 4}})"};
    return sc;
  };
  auto out = h.run(s, h.plan(s));
  auto d = h.load(out.run_id);
  REQUIRE(d.trials.size() == 1);
  const auto* ws = find(d.trials[0], "world_size");
  REQUIRE(ws != nullptr);
  CHECK(ws->value == 4);
  CHECK_THAT(d.trials[0].notes, Catch::Contains("world_size was reported with different values; the last, 4"));
  bool stored_as_fact = false;
  for (const auto& m : d.metrics) stored_as_fact |= m.name == "world_size" && m.fact;
  CHECK(stored_as_fact);
}

TEST_CASE("timed-out and unstartable trials are recorded as such", "[runner]") {
  InterruptGuard guard;
  Harness h;
  auto w = workload("train", 1);
  w.matrix = {axis("x", {"1", "2"})};
  auto s = suite_of({w});
  h.launcher.script = [](const exec::LaunchSpec& spec, int) {
    Script sc;
    if (spec.env.at("PERFGATE_PARAM_X") == "1") {
      sc.metrics_lines = {step_line(0, 10, 100)};
      sc.result.outcome = exec::Outcome::TimedOut;
      sc.result.signal = 15;
      sc.result.error = "timed out after 77.0 s; process group terminated";
    } else {
      sc.result.outcome = exec::Outcome::FailedToStart;
      sc.result.error = "command 'workload-binary' not found on PATH";
    }
    return sc;
  };
  auto out = h.run(s, h.plan(s));
  CHECK(out.status == model::RunStatus::Failed);
  CHECK(out.trials_failed == 2);
  auto d = h.load(out.run_id);
  REQUIRE(d.trials.size() == 2);
  for (const auto& t : d.trials) {
    auto x = model::params_from_json(d.configs[t.config_id == d.configs[0].id ? 0 : 1].params_json).at("x").text;
    INFO("x = " << x);
    if (x == "1") {
      CHECK(t.status == model::TrialStatus::TimedOut);
      CHECK_THAT(t.error, Catch::Contains("timed out"));
      CHECK(find(t, "throughput") != nullptr);  // what it reported before the timeout is kept
    } else {
      CHECK(t.status == model::TrialStatus::Failed);
      CHECK_THAT(t.error, Catch::Contains("workload-binary"));
      CHECK(find(t, "wall_time_s") == nullptr);  // nothing ran, so no harness numbers
    }
  }
}

TEST_CASE("a log preset reads stdout and stderr; warm-up counts each metric's own records", "[runner][parsers]") {
  InterruptGuard guard;
  Harness h;
  auto w = workload("megatron", 1, {model::Warmup::Kind::Steps, 2});
  w.metrics.parser = "megatron";
  auto s = suite_of({w});
  h.launcher.script = [&](const exec::LaunchSpec&, int) {
    Script sc;
    auto line = [](int i, double ms) {
      return fmt::format(
          " iteration {:8d}/{:8d} | elapsed time per iteration (ms): {} | global batch size: 32 | "
          "lm loss: 2.5 |",
          i, 10, ms);
    };
    // Python's logging writes to stderr; print() to stdout. Both are read.
    sc.stdout_lines = {line(1, 500), line(2, 400), "unrelated", line(3, 100)};
    sc.stderr_lines = {line(4, 102), line(5, 98), " iteration 6/ 10 | elapsed time per iteration (ms): n/a |"};
    // The metric protocol still works beside a preset.
    sc.metrics_lines = {R"({"summary": {"eval_accuracy": 0.5}})"};
    return sc;
  };
  auto out = h.run(s, h.plan(s));
  REQUIRE(out.trials_ok == 1);
  auto data = h.load(out.run_id);
  const auto& t = data.trials.at(0);
  auto* step = find(t, "step_time_ms");
  REQUIRE(step);
  CHECK(step->n_total == 5);
  CHECK(step->n_steady == 3);  // 500 and 400 were warm-up
  CHECK(step->median == 100);
  auto* tp = find(t, "throughput");
  REQUIRE(tp);
  CHECK(tp->median == Approx(32 / 0.100));
  REQUIRE(find(t, "eval_accuracy"));
  CHECK(find(t, "eval_accuracy")->value == 0.5);
  CHECK(t.malformed_lines == 1);
  CHECK_THAT(t.notes, Catch::Contains("1 log line(s) recognised but unreadable") && Catch::Contains("stderr line 3"));
}

TEST_CASE("a gbench workload gets --benchmark_out in its trial directory", "[runner][parsers]") {
  InterruptGuard guard;
  Harness h;
  auto w = workload("micro", 1);
  w.metrics.parser = "gbench";
  auto s = suite_of({w});
  h.launcher.script = [&](const exec::LaunchSpec& spec, int) {
    Script sc;
    // Plays the benchmark binary: writes its JSON where it was told to.
    std::string out_arg;
    for (const auto& a : spec.argv)
      if (a.starts_with("--benchmark_out=")) out_arg = a.substr(16);
    sc.during = [out_arg] {
      std::FILE* f = std::fopen(out_arg.c_str(), "wb");
      REQUIRE(f);
      std::fputs(R"({"context": {}, "benchmarks": [
        {"name": "BM_x", "run_name": "BM_x", "run_type": "iteration", "repetitions": 2, "repetition_index": 0,
         "iterations": 10, "real_time": 5.0, "cpu_time": 4.0, "time_unit": "us"},
        {"name": "BM_x", "run_name": "BM_x", "run_type": "iteration", "repetitions": 2, "repetition_index": 1,
         "iterations": 10, "real_time": 7.0, "cpu_time": 6.0, "time_unit": "us"}]})",
                 f);
      std::fclose(f);
    };
    return sc;
  };
  auto out = h.run(s, h.plan(s));
  REQUIRE(out.trials_ok == 1);
  const auto& spec = h.launcher.specs.at(0);
  REQUIRE(spec.argv.size() == 5);
  CHECK(spec.argv[3].starts_with("--benchmark_out="));
  CHECK(spec.argv[3].ends_with("/gbench.json"));
  CHECK(spec.argv[4] == "--benchmark_out_format=json");
  auto data = h.load(out.run_id);
  auto* rt = find(data.trials.at(0), "BM_x.real_time_us");
  REQUIRE(rt);
  CHECK(rt->n_total == 2);
  CHECK(rt->median == 6.0);
}

TEST_CASE("a gbench file the trial did not write is not read", "[runner][parsers]") {
  InterruptGuard guard;
  Harness h;
  auto stale = h.tmp / "old.json";
  {
    std::FILE* f = std::fopen(stale.c_str(), "wb");
    std::fputs(
        R"({"benchmarks": [{"name": "BM_old", "run_type": "iteration", "real_time": 1, "cpu_time": 1, "time_unit": "ns"}]})",
        f);
    std::fclose(f);
  }
  auto w = workload("micro", 1);
  w.metrics.parser = "gbench";
  w.metrics.file = stale.string();
  auto s = suite_of({w});
  auto out = h.run(s, h.plan(s));
  REQUIRE(out.trials_ok == 1);
  const auto& spec = h.launcher.specs.at(0);
  CHECK(spec.argv.size() == 3);  // the suite named the file: nothing added
  auto data = h.load(out.run_id);
  const auto& t = data.trials.at(0);
  CHECK_FALSE(find(t, "BM_old.real_time_ns"));
  CHECK_THAT(t.notes, Catch::Contains("old.json was not written during the trial"));
}

TEST_CASE("a log file named by the suite is read from where this trial starts writing", "[runner][parsers]") {
  InterruptGuard guard;
  Harness h;
  auto log = h.tmp / "train.log";
  auto append = [&](const std::string& text) {
    std::FILE* f = std::fopen(log.c_str(), "ab");
    std::fputs(text.c_str(), f);
    std::fclose(f);
  };
  append("epoch: 1 step: 1, loss is 9.0\n");  // an earlier trial's
  auto w = workload("ms", 1);
  w.metrics.parser = "mindspore";
  w.metrics.file = log.string();
  w.metrics.batch_size = "16";
  auto s = suite_of({w});
  h.launcher.script = [&](const exec::LaunchSpec&, int) {
    Script sc;
    sc.during = [&] {
      append("epoch: 1 step: 4, loss is 1.5\n");
      append("epoch time: 400.0 ms, per step time: 100.0 ms\n");
    };
    sc.stdout_lines = {"epoch: 1 step: 4, loss is 7.0"};  // stdout is not read when a file is named
    return sc;
  };
  auto out = h.run(s, h.plan(s));
  REQUIRE(out.trials_ok == 1);
  auto data = h.load(out.run_id);
  const auto& t = data.trials.at(0);
  REQUIRE(find(t, "loss"));
  CHECK(find(t, "loss")->n_total == 1);
  CHECK(find(t, "loss")->median == 1.5);
  REQUIRE(find(t, "throughput"));
  CHECK(find(t, "throughput")->median == Approx(160.0));
}

TEST_CASE("soak progress follows the parser's preferred primary, not the first metric", "[runner]") {
  InterruptGuard guard;
  Harness h;
  auto s = suite_of({workload("train", 1)});
  // A soak turns the host probe on, which runs this machine's npu-smi and
  // nvidia-smi when installed: unit tests launch no tool of the machine.
  s.workloads.at(0).host_probe = false;
  std::vector<std::string> followed;
  h.opts.soak.enabled = true;
  h.opts.soak.window_s = 1;
  h.opts.soak.on_progress = [&](const std::string&, double, const runner::TrialProgress& p, double) {
    followed.push_back(p.primary);
  };
  h.launcher.script = [](const exec::LaunchSpec&, int) {
    test::Script sc;
    // The loss arrives first, step time next, throughput from step 10 on: the
    // protocol's primary is throughput once reported, step time until then.
    for (int i = 0; i < 20; ++i) {
      std::string line = fmt::format(R"({{"step": {}, "loss": {}, "step_time_ms": 10)", i, 2.0 - 0.01 * i);
      if (i >= 10) line += R"(, "throughput": 100)";
      sc.metrics_lines.push_back(line + "}");
    }
    return sc;
  };
  auto out = h.run(s, h.plan(s));
  CHECK(out.trials_ok == 1);
  REQUIRE(followed.size() >= 3);
  CHECK(followed.front() == "step_time_ms");
  CHECK(followed.back() == "throughput");
  CHECK(std::find(followed.begin(), followed.end(), "loss") == followed.end());
}
