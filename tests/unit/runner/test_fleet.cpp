// The fleet's pure parts: devices from Slurm, a worker's slots, a stored
// plan read back, and the queue executor over a fake queue.
#include <catch2/catch.hpp>

#include <algorithm>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "harness/runner/executor.hpp"
#include "harness/runner/fleet.hpp"
#include "harness/suite/loader.hpp"
#include "harness/suite/matrix.hpp"
#include "harness/suite/plan.hpp"

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
