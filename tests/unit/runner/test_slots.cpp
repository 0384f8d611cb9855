#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>
#include <csignal>

#include "harness/runner/slots.hpp"
#include "harness/suite/plan.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;

TEST_CASE("device lists: ranges and single ids, errors that name the bad part", "[runner]") {
  CHECK(*runner::parse_device_list("0-7") == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(*runner::parse_device_list("6, 0-1,3") == std::vector<int>{0, 1, 3, 6});
  CHECK(*runner::parse_device_list("4") == std::vector<int>{4});
  auto bad = runner::parse_device_list("0-3,x");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message.find("'x'") != std::string::npos);
  CHECK_FALSE(runner::parse_device_list("5-2"));
  CHECK_FALSE(runner::parse_device_list(""));
  auto twice = runner::parse_device_list("0-3,2");
  REQUIRE_FALSE(twice);
  CHECK(twice.error().message.find("device 2 twice") != std::string::npos);
  // Found by the cli_values fuzz target: the largest long as a device id
  // stepped the range's loop past it (signed overflow).
  auto huge = runner::parse_device_list("9223372036854775807");
  REQUIRE_FALSE(huge);
  CHECK(huge.error().message.find("device id 9223372036854775807 is larger than 65535") != std::string::npos);
  CHECK_FALSE(runner::parse_device_list("9223372036854775800-9223372036854775807"));
  CHECK_FALSE(runner::parse_device_list("65536"));
  CHECK(*runner::parse_device_list("65535") == std::vector<int>{65535});
}

TEST_CASE("slots: devices cut into groups of per_trial, each exported in its kind's variable", "[runner]") {
  model::SlotsSpec npu{"npu", {0, 1, 2, 3, 4, 5, 6, 7}, 1, "", {}};
  auto one = runner::make_slots(npu);
  REQUIRE(one);
  REQUIRE(one->size() == 8);
  CHECK((*one)[3].devices == std::vector<int>{3});
  auto env = runner::slot_environment((*one)[3]);
  CHECK(env.at("ASCEND_RT_VISIBLE_DEVICES") == "3");
  CHECK(env.at("PERFGATE_SLOT") == "3");
  CHECK(env.at("PERFGATE_SLOT_DEVICES") == "3");

  npu.per_trial = 2;
  auto two = runner::make_slots(npu);
  REQUIRE(two);
  REQUIRE(two->size() == 4);
  CHECK(runner::slot_environment((*two)[1]).at("ASCEND_RT_VISIBLE_DEVICES") == "2,3");
  npu.per_trial = 8;  // one 8-card HCCL job
  REQUIRE(runner::make_slots(npu)->size() == 1);
  CHECK(runner::slot_environment(runner::make_slots(npu)->front()).at("ASCEND_RT_VISIBLE_DEVICES") ==
        "0,1,2,3,4,5,6,7");

  model::SlotsSpec cuda{"cuda", {0, 1}, 1, "", {}};
  CHECK(runner::slot_environment(runner::make_slots(cuda)->back()).at("CUDA_VISIBLE_DEVICES") == "1");
  // A kind perfgate does not know needs the variable named.
  model::SlotsSpec mlu{"mlu", {0, 1}, 1, "", {}};
  auto refused = runner::make_slots(mlu);
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("env:") != std::string::npos);
  mlu.env = "MLU_VISIBLE_DEVICES";
  CHECK(runner::slot_environment(runner::make_slots(mlu)->front()).at("MLU_VISIBLE_DEVICES") == "0");
  // CPU sets are not exported as a device variable.
  model::SlotsSpec cpu{"cpu", {0, 1, 2, 3}, 2, "", {}};
  auto cpus = runner::make_slots(cpu);
  REQUIRE(cpus->size() == 2);
  CHECK(runner::slot_environment((*cpus)[1]).size() == 2);
  CHECK(runner::slot_environment((*cpus)[1]).at("PERFGATE_SLOT_DEVICES") == "2,3");
  // Leftover devices and a zero per_trial are errors; no devices is one slot.
  model::SlotsSpec seven{"npu", {0, 1, 2, 3, 4, 5, 6}, 2, "", {}};
  auto left = runner::make_slots(seven);
  REQUIRE_FALSE(left);
  CHECK(left.error().message.find("1 left over") != std::string::npos);
  CHECK_FALSE(runner::make_slots(model::SlotsSpec{"npu", {0}, 0, "", {}}));
  CHECK(runner::make_slots(model::SlotsSpec{})->size() == 1);
}

TEST_CASE("a freed slot takes the first trial whose configuration it has run least", "[runner]") {
  model::Plan plan;
  plan.cases.resize(3);
  // Interleaved blocks: a b c | b c a
  for (auto [c, r] : std::vector<std::pair<std::size_t, int>>{{0, 0}, {1, 0}, {2, 0}, {1, 1}, {2, 1}, {0, 1}})
    plan.trials.push_back({c, r, static_cast<int>(plan.trials.size())});
  std::vector<std::size_t> pending = {0, 1, 2, 3, 4, 5};
  // A fresh slot takes plan order.
  CHECK(runner::pick_trial(plan, pending, {}) == 0);
  // A slot that ran case 0 and case 1 once: the first pending trial of case 2.
  CHECK(runner::pick_trial(plan, {3, 4, 5}, {{0, 1}, {1, 1}}) == 1);
  // Every case already ran there: the least, plan order among equals.
  CHECK(runner::pick_trial(plan, {3, 4, 5}, {{0, 1}, {1, 2}, {2, 2}}) == 2);
  CHECK(runner::pick_trial(plan, {3, 4, 5}, {{0, 1}, {1, 1}, {2, 1}}) == 0);

  // Over a whole run on 3 slots taken in turn, every case runs on 3 different slots.
  model::Plan big;
  big.cases.resize(4);
  for (int r = 0; r < 3; ++r)
    for (std::size_t c = 0; c < 4; ++c) big.trials.push_back({c, r, static_cast<int>(big.trials.size())});
  std::vector<std::size_t> left;
  for (std::size_t i = 0; i < big.trials.size(); ++i) left.push_back(i);
  std::vector<std::map<std::size_t, int>> runs(3);
  std::map<std::size_t, std::vector<int>> slots_of_case;
  for (int turn = 0; !left.empty(); ++turn) {
    const int slot = turn % 3;
    const std::size_t k = runner::pick_trial(big, left, runs[slot]);
    const std::size_t c = big.trials[left[k]].case_index;
    ++runs[slot][c];
    slots_of_case[c].push_back(slot);
    left.erase(left.begin() + static_cast<std::ptrdiff_t>(k));
  }
  for (auto& [c, s] : slots_of_case) {
    std::sort(s.begin(), s.end());
    INFO("case " << c);
    CHECK(s == std::vector<int>{0, 1, 2});
  }
}

TEST_CASE("device locks: a second holder waits, a dead holder releases", "[runner]") {
  test::TempDir tmp{"locks"};
  const std::string dir = (tmp / "locks").string();
  model::Slot two{1, "npu", {2, 3}, "ASCEND_RT_VISIBLE_DEVICES"};
  model::Slot three{2, "npu", {3}, "ASCEND_RT_VISIBLE_DEVICES"};
  auto held = runner::DeviceLock::acquire(dir, two);
  REQUIRE(held);
  CHECK(held->held());

  // Another process (flock locks belong to the open file, so a fork with its
  // own open is another holder) cannot take device 3 while we hold it.
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto t = runner::DeviceLock::try_acquire(dir, three);
    ::_exit(t ? 0 : 7);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 7);

  // A child that takes the lock and is killed leaves it free.
  held->release();
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto t = runner::DeviceLock::acquire(dir, three);
    char c = t ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  CHECK(c == 'y');
  auto busy = runner::DeviceLock::try_acquire(dir, three);
  REQUIRE_FALSE(busy);
  CHECK(busy.error().message.find("npu 3 is held by another process") != std::string::npos);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  auto again = runner::DeviceLock::try_acquire(dir, three);
  REQUIRE(again);
  ::close(ready[0]);
  ::close(ready[1]);

  // A wait is announced once per held device, then ends when the holder lets go:
  // the child holds device 3 until the parent's wait callback tells it to exit.
  again->release();
  int go[2];
  REQUIRE(::pipe(ready) == 0);
  REQUIRE(::pipe(go) == 0);
  pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto t = runner::DeviceLock::acquire(dir, three);
    char y = t ? 'y' : 'n';
    (void)!::write(ready[1], &y, 1);
    char z;
    (void)!::read(go[0], &z, 1);
    ::_exit(0);
  }
  REQUIRE(::read(ready[0], &c, 1) == 1);
  REQUIRE(c == 'y');
  std::vector<int> waited;
  auto second = runner::DeviceLock::acquire(dir, two, [&](int d, const std::string& path) {
    waited.push_back(d);
    CHECK(path.find("npu-3.lock") != std::string::npos);
    char z = 'x';
    (void)!::write(go[1], &z, 1);
  });
  REQUIRE(second);
  CHECK(second->held());
  CHECK(waited == std::vector<int>{3});
  ::waitpid(pid, &status, 0);
  for (int fd : {ready[0], ready[1], go[0], go[1]}) ::close(fd);
}
