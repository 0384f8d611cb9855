// The search of `perfgate bisect` against oracles whose answers are known:
// a step at a known commit, none, commits that do not build, two steps, the
// budget. Its accuracy over many noisy histories is a benchmark
// (tests/bench/bisect_sim), not a test.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "harness/analysis/bisect.hpp"

using namespace perfgate;
using analysis::BisectEnd;

namespace {

// Step times of 100 ms with 1 % trial noise and a 0.25 % run effect; each
// step listed adds its size from its commit on.
class StepOracle final : public analysis::BisectOracle {
 public:
  StepOracle(std::map<std::size_t, double> steps, std::set<std::size_t> broken = {}, std::set<std::size_t> failing = {})
      : m_steps(std::move(steps)), m_broken(std::move(broken)), m_failing(std::move(failing)) {}
  Expected<bool> build(std::size_t c) override {
    ++build_calls[c];
    return !m_broken.count(c);
  }
  Expected<analysis::BisectRun> measure(std::size_t c, int trials) override {
    REQUIRE_FALSE(m_broken.count(c));
    analysis::BisectRun r;
    ++runs[c];
    if (m_failing.count(c)) {
      r.failed = trials;
      return r;
    }
    double level = 100;
    for (auto [at, size] : m_steps)
      if (c >= at) level += size;
    std::normal_distribution<double> z(0, 1);
    double run_effect = 0.25 * z(m_rng);
    for (int i = 0; i < trials; ++i) r.values.push_back(level + run_effect + z(m_rng));
    return r;
  }
  std::map<std::size_t, int> build_calls, runs;

 private:
  std::map<std::size_t, double> m_steps;
  std::set<std::size_t> m_broken, m_failing;
  std::mt19937_64 m_rng{42};
};

std::vector<analysis::BisectFinding> of_kind(const analysis::BisectResult& r, BisectEnd k) {
  std::vector<analysis::BisectFinding> out;
  for (const auto& f : r.findings)
    if (f.kind == k) out.push_back(f);
  return out;
}

}  // namespace

TEST_CASE("the two-level test of bisect equals SciPy's Mann-Whitney and t test", "[bisect]") {
  analysis::BisectCommitState good, bad;
  good.runs = {{{10.0, 10.2, 9.9, 10.1}, 0}, {{10.3, 10.1, 10.4, 10.2}, 0}};
  bad.runs = {{{10.6, 10.9, 10.7, 10.8}, 0}, {{10.5, 10.7, 10.6, 10.9}, 0}};
  analysis::BisectOptions opt;
  auto t = analysis::bisect_test(good, bad, {good, bad}, opt);
  // scipy.stats.mannwhitneyu(bad, good, alternative="greater").pvalue
  CHECK(t.p_trials == Approx(0.00044945639405704485).epsilon(1e-9));
  // pooled run-mean variance 0.01140625 on 2 df; scipy.stats.t.sf(5.266851624, 2)
  CHECK(t.p_runs == Approx(0.0171051137).epsilon(1e-7));
  CHECK(t.p == Approx(t.p_runs));
  CHECK_FALSE(t.significant);  // the run level does not reject at 0.01
  // Hodges-Lehmann: the median of the 64 differences, 0.6, over the good median 10.15.
  CHECK(t.change_rel == Approx(0.6 / 10.15));
  opt.alpha = 0.05;
  CHECK(analysis::bisect_test(good, bad, {good, bad}, opt).significant);
  // Higher is better: the same numbers are an improvement.
  opt.better = model::Better::Higher;
  auto up = analysis::bisect_test(good, bad, {good, bad}, opt);
  CHECK(up.p > 0.9);
  CHECK_FALSE(up.significant);
}

TEST_CASE("bisect names the commit of a clear step, with about log2(n) builds", "[bisect]") {
  for (std::size_t culprit : {std::size_t{1}, std::size_t{37}, std::size_t{63}, std::size_t{99}}) {
    StepOracle o({{culprit, 3.0}});
    auto r = analysis::run_bisect(o, 100, {});
    REQUIRE(r);
    auto culprits = of_kind(*r, BisectEnd::Culprit);
    REQUIRE(culprits.size() == 1);
    CHECK(culprits[0].first == culprit);
    CHECK(culprits[0].parent == culprit - 1);
    CHECK(culprits[0].test.significant);
    CHECK(culprits[0].test.change_rel == Approx(0.03).margin(0.01));
    CHECK(culprits[0].posterior >= 0.95);
    CHECK(r->builds <= 7 + 3);
    for (auto [c, n] : o.build_calls) CHECK(n == 1);  // each commit built once
  }
}

TEST_CASE("bisect stops when the ends do not differ, and says so", "[bisect]") {
  StepOracle o({});
  auto r = analysis::run_bisect(o, 50, {});
  REQUIRE(r);
  REQUIRE(r->findings.size() == 1);
  CHECK(r->findings[0].kind == BisectEnd::NoRegression);
  CHECK_THAT(r->findings[0].why, Catch::Contains("the ends do not differ"));
  CHECK(r->builds == 2);
  // An improvement is not a regression either.
  StepOracle better({{20, -3.0}});
  auto b = analysis::run_bisect(better, 50, {});
  REQUIRE(b);
  CHECK(b->findings.at(0).kind == BisectEnd::NoRegression);
}

TEST_CASE("a practical threshold ends the ends' test once the change is surely below it", "[bisect]") {
  // 100 ms, 1 % trial noise: a 2 % threshold is about twenty trial standard
  // deviations of a mean of 15 trials away, so three runs a side settle it.
  analysis::BisectOptions opt;
  opt.threshold_rel = 0.02;
  StepOracle flat({});
  auto r = analysis::run_bisect(flat, 50, opt);
  REQUIRE(r);
  REQUIRE(r->findings.size() == 1);
  CHECK(r->findings[0].kind == BisectEnd::NoRegression);
  CHECK_THAT(r->findings[0].why, Catch::Contains("below the 2.00 % threshold"));
  CHECK(r->findings[0].test.bad_bound_rel < 0.02);
  CHECK(flat.runs[0] < opt.end_runs_max);
  CHECK(flat.runs[49] < opt.end_runs_max);
  // Without one, the same flat range reads every run the ends may get.
  StepOracle flat0({});
  auto r0 = analysis::run_bisect(flat0, 50, {});
  REQUIRE(r0);
  CHECK(flat0.runs[0] == analysis::BisectOptions{}.end_runs_max);
  // A 5 % step is past a 2 % threshold and still found.
  StepOracle step({{30, 5.0}});
  auto s = analysis::run_bisect(step, 50, opt);
  REQUIRE(s);
  auto culprits = of_kind(*s, BisectEnd::Culprit);
  REQUIRE(culprits.size() == 1);
  CHECK(culprits[0].first == 30);
  // A 1 % step is below it: no culprit.
  StepOracle small({{30, 1.0}});
  auto m = analysis::run_bisect(small, 50, opt);
  REQUIRE(m);
  CHECK(of_kind(*m, BisectEnd::Culprit).empty());
}

TEST_CASE("a culprit next to commits that do not build is a range that includes them", "[bisect]") {
  SECTION("its parent does not build") {
    StepOracle o({{40, 3.0}}, {38, 39});
    auto r = analysis::run_bisect(o, 100, {});
    REQUIRE(r);
    REQUIRE(of_kind(*r, BisectEnd::Culprit).empty());
    auto ranges = of_kind(*r, BisectEnd::Range);
    REQUIRE(ranges.size() == 1);
    CHECK(ranges[0].first == 38);
    CHECK(ranges[0].last == 40);
    CHECK(o.build_calls[39] == 2);  // tried twice before it is skipped
    CHECK(r->commits[39].skipped);
  }
  SECTION("it does not build itself") {
    StepOracle o({{40, 3.0}}, {40});
    auto r = analysis::run_bisect(o, 100, {});
    REQUIRE(r);
    auto ranges = of_kind(*r, BisectEnd::Range);
    REQUIRE(ranges.size() == 1);
    CHECK(ranges[0].first == 40);
    CHECK(ranges[0].last == 41);
  }
  SECTION("its trials all fail") {
    StepOracle o({{40, 3.0}}, {}, {40});
    auto r = analysis::run_bisect(o, 100, {});
    REQUIRE(r);
    CHECK(r->commits[40].skipped);
    auto ranges = of_kind(*r, BisectEnd::Range);
    REQUIRE(ranges.size() == 1);
    CHECK(ranges[0].first == 40);
    CHECK(ranges[0].last == 41);
  }
}

TEST_CASE("two steps in a range are both found", "[bisect]") {
  StepOracle o({{20, 3.0}, {70, 4.0}});
  auto r = analysis::run_bisect(o, 100, {});
  REQUIRE(r);
  auto culprits = of_kind(*r, BisectEnd::Culprit);
  std::string seen;
  for (const auto& c : culprits)
    seen += " " + std::to_string(c.first) + " (range " + std::to_string(c.lo) + ".." + std::to_string(c.hi) +
            ", change " + std::to_string(c.test.change_rel) + ")";
  INFO("culprits:" << seen);
  REQUIRE(culprits.size() == 2);
  CHECK(culprits[0].first == 20);
  CHECK(culprits[1].first == 70);
  analysis::BisectOptions one;
  one.max_culprits = 1;
  StepOracle again({{20, 3.0}, {70, 4.0}});
  auto r1 = analysis::run_bisect(again, 100, one);
  REQUIRE(r1);
  CHECK(of_kind(*r1, BisectEnd::Culprit).size() == 1);
}

TEST_CASE("bisect keeps to its budget and names the range it got to", "[bisect]") {
  analysis::BisectOptions opt;
  opt.max_builds = 5;
  StepOracle o({{61, 3.0}});
  auto r = analysis::run_bisect(o, 100, opt);
  REQUIRE(r);
  CHECK(r->budget_spent);
  CHECK(r->builds <= 5);
  auto ranges = of_kind(*r, BisectEnd::Range);
  REQUIRE(ranges.size() == 1);
  CHECK(ranges[0].first <= 61);
  CHECK(ranges[0].last >= 61);
  CHECK(ranges[0].last - ranges[0].first < 40);
}

TEST_CASE("bisect refuses ends that do not build", "[bisect]") {
  StepOracle o({{5, 3.0}}, {0});
  auto r = analysis::run_bisect(o, 10, {});
  REQUIRE_FALSE(r);
  CHECK_THAT(r.error().message, Catch::Contains("good end does not build"));
  StepOracle two({{1, 3.0}});
  auto adjacent = analysis::run_bisect(two, 2, {});
  REQUIRE(adjacent);
  REQUIRE(adjacent->findings.size() == 1);
  CHECK(adjacent->findings[0].kind == BisectEnd::Culprit);
  CHECK(adjacent->findings[0].first == 1);
}
