#pragma once
// The search of `perfgate bisect`: which commit between a good and a bad one
// moved a metric, from trials measured at as few commits as it can.
//
// Noise model (the gate's two levels, docs/statistics.md): a trial's value at
// commit j in measurement run r is
//
//   y = mu_j + r_run + e_trial,   r_run ~ N(0, tau^2),  e_trial ~ N(0, sigma^2)
//
// with mu_j = mu_good before the culprit and mu_bad from it on. Each visit
// to a commit is one run (one batch of trials, its own run effect), so a
// run's mean has variance v = tau^2 + sigma^2 / n. The search:
//
// 1. Confirms the regression between the two ends with the two-level test
//    below (more runs at both ends until it is decided, at most end_runs_max
//    each); without one it stops: nothing to find.
// 2. Keeps a posterior over the culprit k (uniform prior over the commits
//    after the good end): commit j's runs add to every k <= j the log
//    likelihood ratio of "j is bad" (mean mu_bad) over "j is good" (mu_good),
//    sum over its runs of (mu_bad - mu_good)(m - (mu_good + mu_bad) / 2) / v,
//    capped at +-llr_cap per commit so that one commit that fits neither
//    level (a second, smaller step) cannot decide the search alone. The
//    levels and noise come from the ends; v from the spread of run means at
//    every commit measured more than once.
// 3. Measures next the commit at the posterior's median (Horstein's rule for
//    a noisy binary search; Waeber, Frazier & Henderson 2013, "Bisection
//    search with noisy responses", SIAM J. Control Optim. 51(3)), run after
//    run until its own odds reach llr_decide (a sequential probability ratio
//    test, Wald 1945) or it has its most trials: trials go where a step is
//    uncertain, and builds are not spent on commits read badly.
// 4. Stops at a culprit when its posterior mass reaches `confidence` and it
//    is confirmed against its parent by the two-level test on fresh runs of
//    both (at least two each, measured after the posterior got there: the
//    runs that led the search there were selected by it); or with the shortest range of consecutive
//    commits holding `confidence` of the mass when no commit can be measured
//    further (skipped, at max_trials_per_commit, or the budget is spent).
//
// The two-level test (as the gate's, both levels must reject): the
// Mann-Whitney test of the trials pooled per side, and a t test of the run
// means with the spread of run means pooled over every commit measured more
// than once; p is the larger, one-sided in the metric's bad direction, and
// the Hodges-Lehmann shift must pass the practical threshold.
//
// Commits that do not build (twice) or whose trials all fail are skipped as
// `git bisect skip` does: they carry no evidence, so a culprit next to them
// is tied with them and the range reported includes them.
//
// Several steps in a range: after a culprit is confirmed, the sub-ranges on
// either side are searched again when their own ends differ (the same
// data reused), up to max_culprits.
//
// Pure: the commits are indexes 0 (good) .. n-1 (bad), and an Oracle builds
// and measures them, so the simulator (tests/bench/bisect_sim) and the CLI
// run the same search.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <limits>

#include "harness/model/metric.hpp"
#include "harness/util/error.hpp"

namespace perfgate::analysis {

struct BisectOptions {
  model::Better better = model::Better::Lower;
  int trials_per_run = 5;          // one visit to a commit: a run of this many trials
  int end_runs = 3;                // runs at each end before the ends are tested
  int end_runs_max = 40;           // runs at each end before "no regression"
  int max_trials_per_commit = 60;  // beyond the ends, while searching
  int confirm_runs_max = 8;        // fresh runs per side to confirm a culprit against its parent
  double confidence = 0.95;        // posterior mass for a culprit or a range
  double alpha = 0.01;             // one-sided level of the two-level test
  double threshold_rel = 0;        // practical threshold of the bad change, relative; >0 also ends the ends' test
                                   // early when the change is surely below it
  double llr_cap = 8;              // most log likelihood ratio one commit can carry
  double llr_decide = 6.9;         // a commit is read until its odds reach this (log 999) or its most trials
  int max_builds = 0;              // 0: no limit
  long long max_trials = 0;        // 0: no limit
  int max_culprits = 3;
};

// A run measured at a commit: its trials' values (failed trials give none).
struct BisectRun {
  std::vector<double> values;
  int failed = 0;
};

class BisectOracle {
 public:
  virtual ~BisectOracle() = default;
  // Builds commit i (cached builds cost nothing); false when it does not build.
  virtual Expected<bool> build(std::size_t commit) = 0;
  // One run of `trials` trials at commit i (built first).
  virtual Expected<BisectRun> measure(std::size_t commit, int trials) = 0;
};

// The two-level comparison of two sets of runs.
struct BisectTest {
  double p = 1, p_trials = 1, p_runs = 1;            // one-sided, bad direction
  double change_rel = 0, low_rel = 0, high_rel = 0;  // Hodges-Lehmann shift / good median, and its 95 % interval
  int n_good = 0, n_bad = 0, runs_good = 0, runs_bad = 0;
  // 95 % upper bound of the change in the bad direction, relative: the larger of
  // the trial-level (Hodges-Lehmann) and run-level (t on run means) bounds;
  // infinite while the spread of runs is unknown.
  double bad_bound_rel = std::numeric_limits<double>::infinity();
  bool significant = false;  // p < alpha and the bad change beyond the threshold
};

struct BisectCommitState {
  std::vector<BisectRun> runs;
  bool built = false;
  bool skipped = false;  // did not build, or every trial failed
  int trials() const;
};

enum class BisectEnd { Culprit, Range, NoRegression };

struct BisectFinding {
  BisectEnd kind = BisectEnd::Range;
  std::size_t first = 0, last = 0;  // the culprit (first == last), or the range's commits (inclusive)
  std::size_t parent = 0;           // Culprit: the commit it was tested against
  double posterior = 0;             // mass on the culprit or range
  BisectTest test;                  // Culprit: against its parent; NoRegression: the ends
  std::size_t lo = 0, hi = 0;       // the sub-range searched
  std::string why;                  // Range / NoRegression: in words
};

struct BisectProgress {
  std::size_t lo = 0, hi = 0;    // the sub-range searched now
  std::size_t commits_left = 0;  // commits that may still be the culprit (95 % range)
  int builds = 0;
  long long trials = 0;
  std::size_t best = 0;  // the most likely culprit now
  double best_posterior = 0;
  std::string event;  // "built 17", "measured 17 (run 2)"
};

struct BisectResult {
  std::vector<BisectFinding> findings;  // in commit order; one NoRegression when the ends do not differ
  std::vector<BisectCommitState> commits;
  int builds = 0;  // build attempts (cached ones not counted)
  long long trials = 0;
  bool budget_spent = false;
};

// Runs the search over commits 0 (good) .. n - 1 (bad).
Expected<BisectResult> run_bisect(BisectOracle& oracle, std::size_t n_commits, const BisectOptions& opt,
                                  const std::function<void(const BisectProgress&)>& progress = {});

// The two-level test of the runs of `bad` against those of `good`, the
// spread of run means pooled over `all` (every commit's runs).
BisectTest bisect_test(const BisectCommitState& good, const BisectCommitState& bad,
                       const std::vector<BisectCommitState>& all, const BisectOptions& opt);

// The posterior over the culprit in (lo, hi] given the commits' runs
// (index k: P(culprit == k); 0 outside the range).
std::vector<double> bisect_posterior(const std::vector<BisectCommitState>& commits, std::size_t lo, std::size_t hi,
                                     const BisectOptions& opt);

}  // namespace perfgate::analysis
