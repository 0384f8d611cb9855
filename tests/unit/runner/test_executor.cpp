#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>
#include <csignal>
#include "harness/runner/executor.hpp"
#include "harness/runner/slots.hpp"
#include "harness/suite/loader.hpp"
#include "harness/suite/matrix.hpp"
#include "harness/suite/plan.hpp"
#include "harness/util/interrupt.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;
using namespace std::chrono_literals;

namespace {

model::Plan plan_of(int configs, int repeats, const std::string& order = "interleaved") {
  std::string yaml = fmt::format(
      "suite: s\norder: {}\ndefaults: {{repeats: {}}}\nworkloads:\n  - name: w\n    command: [x]\n"
      "    matrix: {{k: [",
      order, repeats);
  for (int i = 0; i < configs; ++i) yaml += (i ? ", " : "") + std::to_string(i);
  yaml += "]}\n";
  auto s = suite::load_suite_text(yaml, "e.yaml", "/suites");
  if (!s) FAIL(s.error().message);
  return suite::make_plan(*s, suite::expand(*s), 11);
}

std::vector<std::size_t> all(const model::Plan& p) {
  std::vector<std::size_t> v(p.trials.size());
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

std::vector<model::Slot> npu_slots(int n) {
  model::SlotsSpec spec;
  spec.kind = "npu";
  for (int i = 0; i < n; ++i) spec.devices.push_back(i);
  return *runner::make_slots(spec);
}

}  // namespace

TEST_CASE("serial executor: every trial once, in plan order", "[runner]") {
  test::TempDir tmp{"exec"};
  auto plan = plan_of(3, 2, "sequential");
  runner::SerialExecutor ex(model::Slot{}, {(tmp / "locks").string(), {}});
  std::vector<std::size_t> seen;
  auto r = ex.execute(plan, all(plan), [&](std::size_t i, const model::Slot& s) {
    CHECK(s.devices.empty());
    seen.push_back(i);
    return runner::TrialEnd::Done;
  });
  CHECK_FALSE(r.interrupted);
  CHECK(seen == all(plan));
}

TEST_CASE("slotted executor: trials side by side, each once, repeats spread over the slots", "[runner]") {
  test::TempDir tmp{"exec"};
  auto plan = plan_of(4, 8);
  auto slots = npu_slots(8);
  runner::SlottedExecutor ex(slots, {(tmp / "locks").string(), {}});
  std::mutex mu;
  std::multiset<std::size_t> seen;
  std::map<std::size_t, std::set<int>> slots_of_case;
  std::atomic<int> running{0}, most{0};
  auto r = ex.execute(plan, all(plan), [&](std::size_t i, const model::Slot& s) {
    int now = ++running;
    int m = most.load();
    while (now > m && !most.compare_exchange_weak(m, now)) {
    }
    std::this_thread::sleep_for(20ms);
    {
      std::lock_guard lock(mu);
      seen.insert(i);
      slots_of_case[plan.trials[i].case_index].insert(s.index);
      REQUIRE(s.devices.size() == 1);
    }
    --running;
    return runner::TrialEnd::Done;
  });
  CHECK_FALSE(r.interrupted);
  CHECK_FALSE(r.store_failed);
  CHECK(seen.size() == plan.trials.size());
  for (std::size_t i = 0; i < plan.trials.size(); ++i) CHECK(seen.count(i) == 1);
  CHECK(most.load() > 1);  // side by side (8 slots, 20 ms trials)
  CHECK(most.load() <= 8);
  // 8 repeats of each configuration on 8 slots: no slot ran one configuration twice
  // while the others ran it less, so each lands on several slots.
  for (const auto& [c, s] : slots_of_case) {
    INFO("case " << c);
    CHECK(s.size() >= 4);
  }
}

TEST_CASE("slotted executor: a store failure stops new trials, running ones finish", "[runner]") {
  test::TempDir tmp{"exec"};
  auto plan = plan_of(2, 10);
  runner::SlottedExecutor ex(npu_slots(2), {(tmp / "locks").string(), {}});
  std::atomic<int> calls{0};
  auto r = ex.execute(plan, all(plan), [&](std::size_t, const model::Slot&) {
    std::this_thread::sleep_for(5ms);
    return ++calls == 3 ? runner::TrialEnd::StoreFailed : runner::TrialEnd::Done;
  });
  CHECK(r.store_failed);
  CHECK(calls.load() <= 4);  // the failing trial and at most one in flight on the other slot
}

TEST_CASE("slotted executor: Ctrl-C while a slot waits for its device ends the wait", "[runner]") {
  test::TempDir tmp{"exec"};
  const std::string dir = (tmp / "locks").string();
  auto slots = npu_slots(2);
  // Another process holds npu 1 (a fork: flock belongs to the open file).
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto l = runner::DeviceLock::acquire(dir, slots[1]);
    char c = l ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  REQUIRE(c == 'y');
  auto plan = plan_of(1, 3);
  std::atomic<int> waits{0};
  runner::ExecutorOptions eo{dir, [&](const model::Slot& s, int device, const std::string&) {
                               CHECK(s.index == 1);
                               CHECK(device == 1);
                               ++waits;
                               util::request_interrupt();
                             }};
  runner::SlottedExecutor ex(slots, eo);
  std::vector<int> ran_on;
  std::mutex mu;
  auto r = ex.execute(plan, all(plan), [&](std::size_t, const model::Slot& s) {
    {
      std::lock_guard lock(mu);
      ran_on.push_back(s.index);
    }
    // Trials on slot 0 take long enough for slot 1's wait to be announced.
    std::this_thread::sleep_for(600ms);
    return util::interrupt_count() > 0 ? runner::TrialEnd::Interrupted : runner::TrialEnd::Done;
  });
  util::reset_interrupts();
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  ::close(ready[0]);
  ::close(ready[1]);
  CHECK(r.interrupted);
  CHECK(waits.load() == 1);
  for (int s : ran_on) CHECK(s == 0);  // nothing ran on the held device
  CHECK(ran_on.size() < 3);
}
