#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness/suite/matrix.hpp"
#include "harness/suite/plan.hpp"

using namespace perfgate;
using model::Params;
using model::Scalar;

namespace {

// One workload per entry of `repeats`, each with `cases_each` configurations.
model::Suite make_suite(std::vector<int> repeats, int cases_each, const std::string& order = "interleaved") {
  model::Suite s;
  s.name = "plan";
  s.order = order;
  for (std::size_t i = 0; i < repeats.size(); ++i) {
    model::Workload w;
    w.name = "w" + std::to_string(i);
    w.command = {"run"};
    w.repeats = repeats[i];
    model::Axis a;
    a.name = "x";
    for (int v = 0; v < cases_each; ++v) a.values.push_back(Params{{"x", Scalar::infer(std::to_string(v))}});
    w.matrix = {a};
    s.workloads.push_back(w);
  }
  return s;
}

std::vector<std::pair<std::size_t, int>> order_of(const model::Plan& p) {
  std::vector<std::pair<std::size_t, int>> out;
  for (const auto& t : p.trials) out.emplace_back(t.case_index, t.repeat);
  return out;
}

void check_seq(const model::Plan& p) {
  for (std::size_t i = 0; i < p.trials.size(); ++i) {
    INFO("trial " << i);
    CHECK(p.trials[i].seq == static_cast<int>(i));
  }
}

}  // namespace

TEST_CASE("an interleaved plan runs every case once per repeat block", "[suite]") {
  auto s = make_suite({4}, 8);
  auto cases = suite::expand(s);
  REQUIRE(cases.size() == 8);
  auto plan = suite::make_plan(s, cases, 12345);
  CHECK(plan.seed == 12345);
  CHECK(plan.order == "interleaved");
  CHECK(plan.cases.size() == 8);
  REQUIRE(plan.trials.size() == 32);
  check_seq(plan);
  for (int r = 0; r < 4; ++r) {
    std::set<std::size_t> seen;
    for (std::size_t i = 0; i < 8; ++i) {
      const auto& t = plan.trials[static_cast<std::size_t>(r) * 8 + i];
      CHECK(t.repeat == r);
      CHECK(t.case_index < 8);
      seen.insert(t.case_index);
    }
    CHECK(seen.size() == 8);
  }
}

TEST_CASE("the same seed gives the same order, another seed another", "[suite]") {
  auto s = make_suite({3}, 8);
  auto cases = suite::expand(s);
  auto a = suite::make_plan(s, cases, 7);
  auto b = suite::make_plan(s, cases, 7);
  auto c = suite::make_plan(s, cases, 8);
  auto d = suite::make_plan(s, cases, 0xdeadbeefcafeULL);
  CHECK(order_of(a) == order_of(b));
  // With 8 cases and 3 blocks a collision has probability (1/8!)^3.
  CHECK(order_of(a) != order_of(c));
  CHECK(order_of(a) != order_of(d));
  CHECK(order_of(c) != order_of(d));
  // And the order is really shuffled, not the suite order.
  std::vector<std::pair<std::size_t, int>> suite_order;
  for (int r = 0; r < 3; ++r)
    for (std::size_t ci = 0; ci < 8; ++ci) suite_order.emplace_back(ci, r);
  CHECK(order_of(a) != suite_order);
}

TEST_CASE("blocks are shuffled independently", "[suite]") {
  auto s = make_suite({6}, 8);
  auto plan = suite::make_plan(s, suite::expand(s), 99);
  std::set<std::vector<std::size_t>> blocks;
  for (int r = 0; r < 6; ++r) {
    std::vector<std::size_t> b;
    for (std::size_t i = 0; i < 8; ++i) b.push_back(plan.trials[static_cast<std::size_t>(r) * 8 + i].case_index);
    blocks.insert(b);
  }
  CHECK(blocks.size() > 1);
}

TEST_CASE("a sequential plan runs all repeats of a case back to back", "[suite]") {
  auto s = make_suite({3, 2}, 2, "sequential");
  auto cases = suite::expand(s);
  REQUIRE(cases.size() == 4);
  auto plan = suite::make_plan(s, cases, 5);
  CHECK(plan.order == "sequential");
  std::vector<std::pair<std::size_t, int>> expected = {{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1},
                                                       {1, 2}, {2, 0}, {2, 1}, {3, 0}, {3, 1}};
  CHECK(order_of(plan) == expected);
  check_seq(plan);
  // The seed does not matter for a sequential plan.
  CHECK(order_of(suite::make_plan(s, cases, 6)) == expected);
}

TEST_CASE("workloads with different repeats: later blocks hold only the longer ones", "[suite]") {
  auto s = make_suite({3, 1}, 4);
  auto cases = suite::expand(s);
  REQUIRE(cases.size() == 8);
  auto plan = suite::make_plan(s, cases, 2024);
  REQUIRE(plan.trials.size() == 4 * 3 + 4 * 1);
  check_seq(plan);
  std::map<std::size_t, std::vector<int>> repeats_of;
  for (const auto& t : plan.trials) repeats_of[t.case_index].push_back(t.repeat);
  for (const auto& [ci, reps] : repeats_of) {
    INFO("case " << ci);
    auto want = cases[ci].workload_index == 0 ? std::vector<int>{0, 1, 2} : std::vector<int>{0};
    CHECK(reps == want);  // each repeat once, in increasing order
  }
  // Block 0 holds all 8 cases; blocks 1 and 2 only the 4 cases of w0.
  for (std::size_t i = 0; i < 8; ++i) CHECK(plan.trials[i].repeat == 0);
  for (std::size_t i = 8; i < plan.trials.size(); ++i) {
    CHECK(plan.trials[i].repeat > 0);
    CHECK(cases[plan.trials[i].case_index].workload_index == 0);
  }
}

TEST_CASE("an empty case list gives an empty plan", "[suite]") {
  auto s = make_suite({3}, 2);
  auto plan = suite::make_plan(s, {}, 1);
  CHECK(plan.trials.empty());
  CHECK(plan.cases.empty());
}

TEST_CASE("fresh_seed fits in 53 bits", "[suite]") {
  for (int i = 0; i < 20; ++i) CHECK(suite::fresh_seed() < (1ull << 53));
}
