// perfgate bisect: from a red gate (or two refs) to the commit that moved
// the metric (runner/bisect, analysis/bisect; docs/cli.md).

#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "harness/analysis/gate.hpp"
#include "harness/cli/commands.hpp"
#include "harness/exec/process_launcher.hpp"
#include "harness/model/params.hpp"
#include "harness/report/bisect_reporter.hpp"
#include "harness/runner/bisect.hpp"
#include "harness/util/interrupt.hpp"
#include "harness/util/units.hpp"

namespace perfgate::cli {

namespace {

// --from-gate RUN: the gate's candidate is bad, its newest baseline run is
// good, and its most severe regression names the configuration and metric.
Status from_gate(State& s, store::Store& st, runner::BisectRequest& req) {
  auto run_id = st.resolve_run(s.from_gate);
  if (!run_id) return run_id.error();
  auto gates = st.load_gates(*run_id);
  if (!gates) return gates.error();
  if (gates->empty())
    return Error::input(fmt::format("--from-gate {}: run {} was never gated; run `perfgate gate --run {}` first",
                                    s.from_gate, *run_id, *run_id));
  const auto& g = gates->front();
  std::vector<model::Comparison> regressions;
  for (const auto& c : g.comparisons)
    if (c.verdict == model::VerdictKind::Regression && c.metric.name != model::k_trials_failed_metric)
      regressions.push_back(c);
  if (regressions.empty())
    return Error::input(fmt::format("--from-gate {}: its gate {} found no regression (outcome {}); nothing to bisect",
                                    s.from_gate, g.id, g.outcome));
  analysis::sort_by_severity(regressions);
  // The largest bad change first: the one a person would chase.
  std::stable_sort(regressions.begin(), regressions.end(), [](const auto& a, const auto& b) {
    auto bad = [](const model::Comparison& c) {
      return c.metric.better == model::Better::Higher ? -c.change_rel : c.change_rel;
    };
    return bad(a) > bad(b);
  });
  const auto& worst = regressions.front();
  if (g.baseline_runs.empty())
    return Error::input(fmt::format("--from-gate {}: its gate pooled no baseline run", s.from_gate));
  auto cand = st.load_run(*run_id);
  if (!cand) return cand.error();
  auto base = st.load_run(g.baseline_runs.front());
  if (!base) return base.error();
  if (cand->run.git_commit.empty() || base->run.git_commit.empty())
    return Error::input(
        fmt::format("--from-gate {}: run {} or its baseline run {} has no git commit recorded; pass "
                    "--good and --bad",
                    s.from_gate, *run_id, base->run.id));
  if (s.bisect_good.empty()) req.good = base->run.git_commit;
  if (s.bisect_bad.empty()) req.bad = cand->run.git_commit;
  if (s.suite_path.empty()) req.suite_path = cand->run.suite_path;
  if (s.metrics.empty()) req.metric = worst.metric.name;
  if (s.onlys.empty()) {
    req.onlys.push_back("workload=" + worst.workload);
    for (const auto& [k, v] : model::params_from_json(worst.params_json)) req.onlys.push_back(k + "=" + v.text);
  }
  // The suite as the candidate ran it: its profiles and --set values.
  auto plan = nlohmann::json::parse(cand->run.plan_json, nullptr, false);
  if (plan.is_object() && plan.contains("load") && plan["load"].is_object()) {
    for (const auto& p : plan["load"].value("profiles", nlohmann::json::array()))
      if (s.profiles.empty()) req.profiles.push_back(p.get<std::string>());
    for (const auto& x : plan["load"].value("sets", nlohmann::json::array()))
      if (s.sets.empty()) req.sets.push_back(x.get<std::string>());
  }
  std::cerr << fmt::format("bisect: from gate {} of run {}: {} {} {:+.1f} %, good {} (run {}) .. bad {} (run {})\n",
                           g.id, *run_id, worst.workload, worst.label, 100 * worst.change_rel, req.good.substr(0, 10),
                           base->run.id, req.bad.substr(0, 10), *run_id);
  return Ok{};
}

}  // namespace

void setup_bisect(CLI::App& sub, State& s) {
  sub.add_option("--good", s.bisect_good, "a commit (ref) where the metric was fine");
  sub.add_option("--bad", s.bisect_bad,
                 "a later commit (ref) where it is not; good must be on its first-parent history");
  sub.add_option("--build", s.bisect_build,
                 "shell command that builds a commit, run in its worktree; {commit} and {worktree} are replaced "
                 "(also PERFGATE_COMMIT, PERFGATE_WORKTREE)");
  sub.add_option("--suite", s.suite_path, "the suite that measures it; {worktree} in it names the commit's worktree");
  sub.add_option("--only", s.onlys,
                 "KEY=VALUE: keep configurations with it (repeatable); one configuration must be left");
  sub.add_option("--set", s.sets, "override a suite key, as for run (repeatable)");
  sub.add_option("--profile", s.profiles, "machine profile, as for run (repeatable)");
  sub.add_option("--metric", s.metrics, "the metric to follow (default: the configuration's primary metric)");
  sub.add_option("--repo", s.bisect_repo, "the git checkout holding the commits (never modified)")
      ->capture_default_str();
  sub.add_option("--worktrees", s.bisect_worktrees,
                 "where each commit's worktree and build log go (default: <artifacts>/bisect/worktrees)");
  sub.add_option("--artifacts", s.artifacts_dir, "where run logs go (default: next to the database)");
  sub.add_option("--max-builds", s.max_builds, "stop after this many builds (0: no limit)");
  sub.add_option("--max-trials", s.max_bisect_trials, "stop after this many trials (0: no limit)");
  sub.add_option("--max-culprits", s.max_culprits, "most culprits to find in one range")->capture_default_str();
  sub.add_option("--threshold-pct", s.bisect_threshold_pct,
                 "smallest slowdown worth a culprit, in % of the good end (0: any); the ends' test also stops "
                 "once the change is surely below it")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  sub.add_option("--trials", s.trials_per_run, "trials per visit to a commit (one run)")->capture_default_str();
  sub.add_option("--build-timeout", s.build_timeout, "a build that takes longer fails")->capture_default_str();
  sub.add_option("--from-gate", s.from_gate,
                 "RUN: bisect the worst regression of the run's newest gate, from its baseline's commit to its own");
  sub.add_option("--format", s.format, "table, markdown or json")->capture_default_str();
  sub.add_option("--markdown", s.markdown_path, "also write the Markdown report here (CI summary)");
  sub.add_option("--json", s.json_path, "also write the JSON report here");
  sub.add_flag("-q,--quiet", s.quiet, "no progress lines");
}

int do_bisect(State& s) {
  if (s.format != "table" && s.format != "markdown" && s.format != "json")
    return fail(Error::input(fmt::format("--format '{}': use table, markdown or json", s.format)));
  if (s.trials_per_run < 2) return fail(Error::input("--trials must be at least 2"));
  auto timeout = util::parse_duration_s(s.build_timeout);
  if (!timeout) return fail(Error::input(fmt::format("--build-timeout: {}", timeout.error().message)));
  auto st = open_store(s);
  if (!st) return fail(st.error());
  runner::BisectRequest req;
  req.repo = s.bisect_repo;
  req.good = s.bisect_good;
  req.bad = s.bisect_bad;
  req.build_command = s.bisect_build;
  req.build_timeout_s = *timeout;
  req.suite_path = s.suite_path;
  req.onlys = s.onlys;
  req.sets = s.sets;
  req.profiles = s.profiles;
  if (s.metrics.size() > 1) return fail(Error::input("--metric: bisect follows one metric"));
  if (!s.metrics.empty()) req.metric = s.metrics.front();
  if (!s.from_gate.empty())
    if (auto f = from_gate(s, **st, req); !f) return fail(f.error());
  if (req.good.empty() || req.bad.empty())
    return fail(Error::input("bisect needs --good and --bad (or --from-gate RUN)"));
  if (req.suite_path.empty()) return fail(Error::input("bisect needs --suite (or --from-gate RUN)"));
  req.worktrees_dir = s.bisect_worktrees;
  req.search.trials_per_run = s.trials_per_run;
  req.search.max_builds = s.max_builds;
  req.search.max_trials = s.max_bisect_trials;
  req.search.max_culprits = std::max(1, s.max_culprits);
  req.search.threshold_rel = s.bisect_threshold_pct / 100;
  req.run.artifacts_root = artifacts_root_of(s);
  req.run.command_line = s.globals.command_line;
  req.run.profiles = req.profiles;
  req.run.sets = req.sets;
  util::install_interrupt_handlers();
  exec::ProcessLauncher launcher;
  runner::BisectProgressFn progress;
  if (!s.quiet) req.run.progress = &std::cerr;  // the oracle's notes (a worktree another bisect holds)
  if (!s.quiet)
    progress = [](const analysis::BisectProgress& p, const runner::BisectReport& r) {
      const std::size_t last = r.commits.empty() ? 0 : r.commits.size() - 1;
      std::string best = p.best < r.commits.size() && p.hi > p.lo
                             ? fmt::format("best guess {} ({:.0f} %), {} commit(s) left",
                                           r.commits[p.best].sha.substr(0, 10), 100 * p.best_posterior, p.commits_left)
                             : std::string("testing the ends");
      std::cerr << fmt::format("bisect [{}..{} of {}]: {} | builds {} ({} cached), trials {} ({} reused) | {}\n", p.lo,
                               p.hi, last, p.event, r.builds_run, r.builds_cached, r.trials_run, r.trials_reused, best);
    };
  auto rep = runner::run_git_bisect(**st, launcher, req, progress);
  if (!rep) return fail(rep.error());
  for (auto [path, text] : {std::pair{&s.markdown_path, report::bisect_markdown(*rep)},
                            std::pair{&s.json_path, runner::bisect_report_json(*rep)}}) {
    if (path->empty()) continue;
    if (auto w = write_file(*path, text); !w) return fail(w.error());
  }
  if (s.format == "json")
    std::cout << runner::bisect_report_json(*rep) << "\n";
  else if (s.format == "markdown")
    std::cout << report::bisect_markdown(*rep);
  else
    std::cout << report::bisect_table(*rep);
  // 0: a culprit named (or nothing to find between the ends); 1: only a
  // range; 3: interrupted (everything measured is kept: the same command resumes).
  if (rep->interrupted) return static_cast<int>(ExitCode::HarnessError);
  if (rep->outcome == "range") return static_cast<int>(ExitCode::Regression);
  return 0;
}

}  // namespace perfgate::cli
