// The fleet's pure parts: devices from Slurm, a worker's slots, a stored
// plan read back, the queue executor over a fake queue, and the submitter's
// follow over a real SQLite queue with a fake squeue.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "harness/runner/executor.hpp"
#include "harness/runner/fleet.hpp"
#include "harness/store/store.hpp"
#include "harness/suite/loader.hpp"
#include "harness/suite/matrix.hpp"
#include "harness/suite/plan.hpp"
#include "harness/util/time.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;

namespace {

// `scontrol -d show job 6` of a 4-task array: the master record lists every task.
const char* k_array_record = R"(JobId=6 ArrayJobId=6 ArrayTaskId=3 JobName=wrap
   JOB_GRES=npu:1
     Nodes=vm CPU_IDs=3 Mem=0 GRES=npu:1(IDX:3)
JobId=9 ArrayJobId=6 ArrayTaskId=2 JobName=wrap
   JOB_GRES=npu:1
     Nodes=vm CPU_IDs=2 Mem=0 GRES=npu:1(IDX:2)
JobId=7 ArrayJobId=6 ArrayTaskId=0 JobName=wrap
   JOB_GRES=npu:1
     Nodes=vm CPU_IDs=0 Mem=0 GRES=npu:1(IDX:0)
)";

runner::ToolFn scontrol_says(std::string out, std::vector<std::string>* asked = nullptr) {
  return [out, asked](const std::vector<std::string>& argv) {
    if (asked) *asked = argv;
    exec::ToolResult r;
    r.ran = true;
    r.exit_code = 0;
    r.out = out;
    return r;
  };
}

model::Suite suite_of(const std::string& yaml) {
  auto s = suite::load_suite_text(yaml, "fleet.yaml", "/suites");
  if (!s) FAIL(s.error().message);
  return std::move(*s);
}

}  // namespace

TEST_CASE("fleet: npu indexes from scontrol's GRES field", "[runner][fleet]") {
  auto one = runner::parse_gres_indexes("     Nodes=n1 CPU_IDs=0-3 Mem=0 GRES=npu:1(IDX:3)", "npu");
  REQUIRE(one);
  CHECK(*one == std::vector<int>{3});
  auto typed = runner::parse_gres_indexes("GRES=gpu:a100:2(IDX:0-1),npu:910b:3(IDX:0,2-3)", "npu");
  REQUIRE(typed);
  CHECK(*typed == std::vector<int>{0, 2, 3});
  auto gpu = runner::parse_gres_indexes("GRES=gpu:a100:2(IDX:0-1),npu:910b:3(IDX:0,2-3)", "gpu");
  REQUIRE(gpu);
  CHECK(*gpu == std::vector<int>{0, 1});
  auto none = runner::parse_gres_indexes("   JOB_GRES=(null)\n   Nodes=n1 CPU_IDs=0 Mem=0 GRES=", "npu");
  REQUIRE(none);
  CHECK(none->empty());
  // "xnpu:" is another resource, and JOB_GRES has no IDX.
  auto other = runner::parse_gres_indexes("JOB_GRES=npu:2 GRES=xnpu:1(IDX:5)", "npu");
  REQUIRE(other);
  CHECK(other->empty());
  CHECK_FALSE(runner::parse_gres_indexes("GRES=npu:1(IDX:3-x)", "npu"));
}

TEST_CASE("fleet: a worker's devices come from Slurm's variables or scontrol", "[runner][fleet]") {
  std::vector<std::string> asked;
  // --gres=gpu:2: Slurm exports the devices.
  auto cuda = runner::slurm_devices({{"SLURM_JOB_ID", "7"}, {"SLURM_JOB_GPUS", "4,5"}, {"CUDA_VISIBLE_DEVICES", "4,5"}},
                                    scontrol_says("", &asked));
  REQUIRE(cuda);
  CHECK(cuda->kind == "cuda");
  CHECK(cuda->devices == std::vector<int>{4, 5});
  CHECK(asked.empty());
  // A generic npu resource: only scontrol knows, and the array's master
  // record lists every task: this task's own line counts.
  auto npu = runner::slurm_devices({{"SLURM_JOB_ID", "6"}}, scontrol_says(k_array_record, &asked));
  REQUIRE(npu);
  CHECK(asked == std::vector<std::string>{"scontrol", "-d", "show", "job", "6"});
  CHECK(npu->kind == "npu");
  CHECK(npu->devices == std::vector<int>{3});
  auto task2 = runner::slurm_devices({{"SLURM_JOB_ID", "9"}}, scontrol_says(k_array_record));
  REQUIRE(task2);
  CHECK(task2->devices == std::vector<int>{2});
  // Outside Slurm: nothing asked, no devices.
  asked.clear();
  auto outside = runner::slurm_devices({}, scontrol_says("", &asked));
  REQUIRE(outside);
  CHECK(outside->devices.empty());
  CHECK(asked.empty());
  // scontrol failing is an error that says so.
  auto broken = runner::slurm_devices({{"SLURM_JOB_ID", "6"}}, [](const std::vector<std::string>&) {
    exec::ToolResult r;
    r.error = "scontrol: command not found on PATH";
    return r;
  });
  REQUIRE_FALSE(broken);
  CHECK_THAT(broken.error().message, Catch::Contains("scontrol") && Catch::Contains("job 6"));
}

TEST_CASE("fleet: a worker's slots cut Slurm's devices by the suite's per_trial", "[runner][fleet]") {
  const auto with_slots = suite_of(
      "suite: s\nslots: {kind: npu, devices: [0-7], per_trial: 2}\n"
      "workloads:\n  - name: w\n    command: [x]\n");
  const auto without = suite_of("suite: s\nworkloads:\n  - name: w\n    command: [x]\n");
  runner::SlurmDevices eight{"npu", {0, 1, 2, 3, 4, 5, 6, 7}, "scontrol"};
  auto pairs = runner::worker_slots(with_slots, eight);
  REQUIRE(pairs);
  REQUIRE(pairs->size() == 4);
  CHECK((*pairs)[3].devices == std::vector<int>{6, 7});
  CHECK((*pairs)[0].kind == "npu");
  // No slots in the suite: one slot holding every device the job got.
  auto whole = runner::worker_slots(without, eight);
  REQUIRE(whole);
  REQUIRE(whole->size() == 1);
  CHECK(whole->front().devices.size() == 8);
  // No devices from Slurm: the suite's own slots, or none.
  auto own = runner::worker_slots(with_slots, {});
  REQUIRE(own);
  CHECK(own->size() == 4);
  auto bare = runner::worker_slots(without, {});
  REQUIRE(bare);
  CHECK(bare->empty());
}

TEST_CASE("fleet: a stored plan reads back as the run planned it", "[runner][fleet]") {
  auto s = suite_of(
      "suite: s\ndefaults: {repeats: 3}\nworkloads:\n  - name: w\n    command: [x, '{k}']\n"
      "    matrix: {k: [1, 2], mode: [a, b]}\n");
  auto plan = suite::make_plan(s, suite::expand(s), 42);
  store::RunRecord run;
  run.id = 5;
  run.plan_json = runner::plan_json(plan);
  auto back = runner::plan_of_run(s, run);
  REQUIRE(back);
  REQUIRE(back->cases.size() == plan.cases.size());
  REQUIRE(back->trials.size() == plan.trials.size());
  for (std::size_t i = 0; i < plan.cases.size(); ++i) {
    CHECK(back->cases[i].params_json == plan.cases[i].params_json);
    CHECK(back->cases[i].label == plan.cases[i].label);
  }
  for (std::size_t i = 0; i < plan.trials.size(); ++i) {
    CHECK(back->trials[i].case_index == plan.trials[i].case_index);
    CHECK(back->trials[i].repeat == plan.trials[i].repeat);
    CHECK(back->trials[i].seq == plan.trials[i].seq);
  }
  CHECK(back->seed == 42);
  // A workload renamed since: an input error naming it.
  auto renamed = suite_of("suite: s\nworkloads:\n  - name: other\n    command: [x]\n");
  auto bad = runner::plan_of_run(renamed, run);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("'w'"));
}

TEST_CASE("fleet: the queue executor runs what the queue hands out, waits while others hold claims",
          "[runner][fleet]") {
  auto s = suite_of(
      "suite: s\ndefaults: {repeats: 4}\nworkloads:\n  - name: w\n    command: [x]\n"
      "    matrix: {k: [1, 2]}\n");
  auto plan = suite::make_plan(s, suite::expand(s), 3);
  std::mutex mu;
  std::vector<std::size_t> queue;  // what the "database" still holds
  for (std::size_t i = 0; i < plan.trials.size(); ++i) queue.push_back(i);
  int held_elsewhere = 3;  // polls during which another worker still holds a claim
  std::vector<std::size_t> ran;
  runner::QueueSource src;
  src.poll_s = 0.01;
  src.claim = [&]() -> Expected<std::optional<std::size_t>> {
    if (queue.empty()) return std::optional<std::size_t>{};
    auto i = queue.back();
    queue.pop_back();
    return std::optional<std::size_t>(i);
  };
  src.may_come = [&]() -> Expected<bool> {
    if (held_elsewhere == 0) return false;
    if (--held_elsewhere == 0) queue.push_back(0);  // the other worker's lease ran out
    return true;
  };
  std::vector<model::Slot> slots(2);
  slots[0].index = 0;
  slots[1].index = 1;
  runner::QueueExecutor ex(slots, {}, src);
  auto done = ex.execute(plan, {}, [&](std::size_t index, const model::Slot&) {
    std::lock_guard lock(mu);
    ran.push_back(index);
    return runner::TrialEnd::Done;
  });
  CHECK_FALSE(done.interrupted);
  CHECK(static_cast<bool>(done.queue_failure));
  REQUIRE(ran.size() == plan.trials.size() + 1);
  CHECK(std::count(ran.begin(), ran.end(), std::size_t{0}) == 2);  // run again after the lease ran out

  // A queue that cannot be read stops the executor with the reason.
  runner::QueueSource broken;
  broken.claim = []() -> Expected<std::optional<std::size_t>> { return Error::harness("server gone"); };
  broken.may_come = []() -> Expected<bool> { return false; };
  runner::QueueExecutor ex2(slots, {}, broken);
  auto failed = ex2.execute(plan, {}, [](std::size_t, const model::Slot&) { return runner::TrialEnd::Done; });
  REQUIRE_FALSE(failed.queue_failure);
  CHECK_THAT(failed.queue_failure.error().message, Catch::Contains("server gone"));
}

namespace {

// A fleet run of `n` trials in a SQLite file, submitted as Slurm job 41.
long long queued_fleet_run(store::Store& st, int n) {
  store::RunRecord r;
  r.suite = "fleet";
  r.started_at = util::unix_now_s();
  r.status = model::RunStatus::Running;
  r.host = "submit-host";
  r.pid = ::getpid();
  r.plan_json = "{}";
  auto run = st.begin_run(r);
  REQUIRE(run);
  std::vector<store::QueueItem> items;
  for (int i = 0; i < n; ++i) items.push_back({static_cast<std::size_t>(i), i});
  REQUIRE(st.enqueue_trials(*run, items, 2));
  REQUIRE(st.record_fleet_job(*run, "41"));
  return *run;
}

// A worker on its own connection: claims and finishes every trial, ok.
// Runs on a thread of its own, so it reports rather than asserts (Catch2 v2
// assertions are for the test's thread): "" when all went well.
std::string run_every_trial(const std::string& db, long long run_id) {
  auto st = store::open_store(db);
  if (!st) return st.error().message;
  auto config = (*st)->config_id("sim", "{}");
  if (!config) return config.error().message;
  for (;;) {
    auto c = (*st)->claim_trial(run_id, "node-a:1", 600);
    if (!c) return c.error().message;
    if (!c->has_value()) return "";
    model::TrialRecord t;
    t.run_id = run_id;
    t.config_id = *config;
    t.seq = static_cast<int>((*c)->plan_index);
    t.host = "node-a";
    auto id = (*st)->begin_claimed_trial(t, (*c)->plan_index, "node-a:1");
    if (!id) return id.error().message;
    t.id = *id;
    t.status = model::TrialStatus::Ok;
    t.wall_s = 0.1;
    if (auto done = (*st)->finish_trial(t, {}); !done) return done.error().message;
  }
}

exec::ToolResult squeue_running() {
  exec::ToolResult r;
  r.ran = true;
  r.exit_code = 0;
  r.out = "RUNNING|None\n";
  return r;
}

exec::ToolResult squeue_timed_out() {
  exec::ToolResult r;
  r.ran = true;
  r.exit_code = 1;
  r.err = "slurm_load_jobs error: Socket timed out on send/recv operation\n";
  return r;
}

}  // namespace

TEST_CASE("fleet: the follow outlasts a failing squeue, gives up past its grace, and polls a quiet run less",
          "[runner][fleet]") {
  test::TempDir dir;
  const std::string db = (dir.path() / "fleet.db").string();
  auto st = store::open_store(db);
  REQUIRE(st);
  const long long run_id = queued_fleet_run(**st, 2);
  std::atomic<int> asked{0};
  std::ostringstream progress;
  runner::FollowOptions fo;
  fo.progress = &progress;
  fo.poll_s = 0.02;

  SECTION("slurmctld busy for three polls, then the workers finish") {
    // The trials end only after squeue answers again, so the follow has to last through its failures.
    std::string worker_error = "not run";
    std::jthread worker([&] {
      while (asked < 6) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      worker_error = run_every_trial(db, run_id);
    });
    auto out = runner::follow_fleet(**st, run_id, fo, [&](const std::vector<std::string>& argv) {
      if (argv.at(0) != "squeue") FAIL("unexpected " << argv.at(0));
      return ++asked <= 3 ? squeue_timed_out() : squeue_running();
    });
    worker.join();
    CHECK(worker_error == "");
    REQUIRE(out);
    CHECK(out->trials_ok == 2);
    CHECK(out->status == model::RunStatus::Completed);
    CHECK_THAT(progress.str(), Catch::Contains("Socket timed out") &&
                                   Catch::Contains("following the run from the database until squeue answers") &&
                                   Catch::Contains("squeue answers again"));
  }
  SECTION("a run where nothing happens is looked at less and less often") {
    // One second of waiting (the worker starts late): polled every 10 ms
    // without backing off, squeue would be asked about 100 times; backing
    // off to 80 ms, a dozen or so. A loaded machine only asks fewer.
    fo.poll_s = 0.01;
    fo.max_poll_s = 0.08;
    fo.squeue_interval_s = 0.08;
    std::string worker_error = "not run";
    std::jthread worker([&] {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      worker_error = run_every_trial(db, run_id);
    });
    auto out = runner::follow_fleet(**st, run_id, fo, [&](const std::vector<std::string>& argv) {
      if (argv.at(0) != "squeue") FAIL("unexpected " << argv.at(0));
      ++asked;
      return squeue_running();
    });
    worker.join();
    CHECK(worker_error == "");
    REQUIRE(out);
    CHECK(out->trials_ok == 2);
    CHECK(asked >= 2);
    CHECK(asked <= 30);
  }
  SECTION("squeue failing past the grace is an error that leaves the job running") {
    fo.squeue_grace_s = 0.2;
    auto out = runner::follow_fleet(**st, run_id, fo, [&](const std::vector<std::string>& argv) {
      if (argv.at(0) != "squeue") FAIL("a job squeue cannot see is not cancelled: " << argv.at(0));
      ++asked;
      return squeue_timed_out();
    });
    REQUIRE_FALSE(out);
    CHECK_THAT(out.error().message, Catch::Contains("squeue has failed for") && Catch::Contains("Socket timed out") &&
                                        Catch::Contains(fmt::format("perfgate wait {}", run_id)));
    CHECK(asked >= 2);  // it asked again after the first failure (a loaded machine asks fewer times)
    auto data = (*st)->load_run(run_id);
    REQUIRE(data);
    CHECK(data->run.status == model::RunStatus::Running);
  }
}
