#pragma once
// `perfgate bisect`: the commits between a good and a bad one, each checked
// out in its own git worktree (the user's checkout is never touched), built
// with the user's command (cached by tree hash and command), and measured by
// the suite's one configuration as runs of kind `bisect` with their commit.
// The search itself is analysis/bisect (pure); this is its oracle over git,
// the build and the store. Runs already stored for a commit (an earlier or
// interrupted bisect) are read instead of run again.

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "harness/analysis/bisect.hpp"
#include "harness/exec/launcher.hpp"
#include "harness/runner/runner.hpp"
#include "harness/store/store.hpp"
#include "harness/util/error.hpp"

namespace perfgate::runner {

struct BisectRequest {
  std::string repo = ".";  // a git checkout holding both commits
  std::string good, bad;   // refs
  // A shell command run in the commit's worktree; {commit} and {worktree}
  // are replaced (the path shell-quoted), and PERFGATE_COMMIT /
  // PERFGATE_WORKTREE are set.
  std::string build_command;
  double build_timeout_s = 3600;
  std::string suite_path;
  std::vector<std::string> onlys, sets, profiles;
  std::string metric;         // empty: the configuration's primary metric
  std::string worktrees_dir;  // empty: <artifacts_root>/bisect/worktrees
  analysis::BisectOptions search;
  RunOptions run;  // artifacts_root, command_line; progress: notes of the build (a worktree another bisect holds),
                   // not the trials' lines (see on_progress)
};

struct BisectCommit {
  std::string sha, subject;
  std::string build_status;     // "" (not built), ok, failed, cached
  std::string build_log;        // its stdout log (stderr beside it, .err.log)
  std::string build_error;      // last lines of stderr when it failed
  std::vector<long long> runs;  // bisect runs read for it, in order
  int runs_reused = 0;          // of those, runs stored before this bisect
};

struct BisectReport {
  long long bisect_id = 0;  // in the store
  std::string repo, suite, workload, params_json, label, metric, unit;
  model::Better better = model::Better::Lower;
  std::string good_ref, bad_ref;
  std::vector<BisectCommit> commits;  // 0: good .. n-1: bad
  analysis::BisectResult result;
  int builds_run = 0, builds_cached = 0;
  long long trials_run = 0, trials_reused = 0;
  bool interrupted = false;
  std::string outcome;  // culprit | range | no-regression | interrupted
};

using BisectProgressFn = std::function<void(const analysis::BisectProgress&, const BisectReport&)>;

Expected<BisectReport> run_git_bisect(store::Store& st, exec::Launcher& launcher, const BisectRequest& req,
                                      const BisectProgressFn& on_progress = {});

// The commits from good to bad along bad's first parents ([good, ..., bad]),
// or an input error naming what is wrong with the refs.
struct GitCommit {
  std::string sha, subject;
};
Expected<std::vector<GitCommit>> first_parent_range(const std::string& repo, const std::string& good,
                                                    const std::string& bad);

// The report as JSON (also stored with the bisect).
std::string bisect_report_json(const BisectReport& r);

}  // namespace perfgate::runner
