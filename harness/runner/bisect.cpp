#include "harness/runner/bisect.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/analysis/run_summary.hpp"
#include "harness/exec/capture.hpp"
#include "harness/model/params.hpp"
#include "harness/stats/descriptive.hpp"
#include "harness/suite/loader.hpp"
#include "harness/suite/matrix.hpp"
#include "harness/suite/placeholders.hpp"
#include "harness/suite/plan.hpp"
#include "harness/util/environment.hpp"
#include "harness/util/file_lock.hpp"
#include "harness/util/interrupt.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/time.hpp"

namespace perfgate::runner {
namespace fs = std::filesystem;

namespace {

exec::ToolResult git(const std::string& repo, std::vector<std::string> args, double timeout_s = 60) {
  std::vector<std::string> argv = {"git", "-C", repo};
  argv.insert(argv.end(), args.begin(), args.end());
  return exec::run_tool(argv, timeout_s);
}

std::string first_line(const std::string& s) {
  auto t = util::trim(s);
  return std::string(t.substr(0, t.find('\n')));
}

std::string why_git_failed(const exec::ToolResult& r) {
  if (!r.ran) return r.error;
  std::string e = first_line(r.err);
  return e.empty() ? fmt::format("git exited with code {}", r.exit_code) : e;
}

Expected<std::string> resolve(const std::string& repo, const std::string& ref, const char* which) {
  auto r = git(repo, {"rev-parse", "--verify", "--quiet", ref + "^{commit}"});
  if (!r.ok() || util::trim(r.out).empty())
    return Error::input(fmt::format("--{} '{}' is not a commit in {}", which, ref, repo));
  return std::string(util::trim(r.out));
}

class Quiet final : public exec::TrialObserver {
 public:
  void on_stdout_line(std::string_view, bool, double) override {}
  void on_tick(double, bool) override {}
};

constexpr const char* k_interrupted = "interrupted";

// The oracle of the search: git worktrees, the user's build, the suite.
class GitOracle final : public analysis::BisectOracle {
 public:
  GitOracle(store::Store& st, exec::Launcher& launcher, const BisectRequest& req, BisectReport& report,
            const model::Suite& suite, const model::Case& the_case, std::string worktrees)
      : m_st(st),
        m_launcher(launcher),
        m_req(req),
        m_report(report),
        m_suite(suite),
        m_case(the_case),
        m_worktrees(std::move(worktrees)) {}

  Expected<bool> build(std::size_t i) override {
    auto& c = m_report.commits[i];
    if (!m_worktree_of[i].empty()) return true;
    // Two bisects of one repository share the worktrees folder (two
    // engineers, two CI jobs chasing one red night): while one holds a
    // commit's lock the other neither rebuilds nor replaces that worktree,
    // and finds the first one's build in the cache once it has the lock.
    auto held = lock_commit(c.sha);
    if (!held) return held.error();
    auto tree = git(m_req.repo, {"rev-parse", c.sha + "^{tree}"});
    if (!tree.ok())
      return Error::harness(fmt::format("git cannot read the tree of {}: {}", c.sha, why_git_failed(tree)));
    const std::string tree_hash(util::trim(tree.out));
    const std::string key = util::fnv1a_hex(tree_hash + '\n' + m_req.build_command);
    auto cached = m_st.find_build(key);
    if (!cached) return cached.error();
    std::error_code ec;
    if (*cached && (*cached)->status == "ok" && fs::is_directory((*cached)->worktree, ec)) {
      c.build_status = "cached";
      c.build_log = (*cached)->log_path;
      m_worktree_of[i] = (*cached)->worktree;
      ++m_report.builds_cached;
      return true;
    }
    // A commit that failed twice already (an earlier bisect) is not built again.
    if (*cached && (*cached)->status == "failed" && (*cached)->attempts >= 2 && m_attempts[i] == 0) {
      c.build_status = "failed";
      c.build_log = (*cached)->log_path;
      c.build_error = (*cached)->error;
      m_attempts[i] = 2;
      return false;
    }
    if (m_attempts[i] >= 2) return false;
    const fs::path wt = fs::path(m_worktrees) / c.sha.substr(0, 12);
    if (auto made = worktree(c.sha, wt); !made) return made.error();
    const int attempt = ++m_attempts[i];
    fs::create_directories(fs::path(m_worktrees) / "logs", ec);
    const fs::path log = fs::path(m_worktrees) / "logs" / fmt::format("{}-build{}.log", c.sha.substr(0, 12), attempt);
    auto command = suite::substitute(m_req.build_command, [&](std::string_view name) -> std::optional<std::string> {
      if (name == "commit") return c.sha;
      if (name == "worktree") return util::shell_quote(wt.string());
      return std::nullopt;
    });
    if (!command) return Error::input(fmt::format("--build: {}", command.error().message));
    exec::LaunchSpec spec;
    spec.shell = true;
    spec.argv = {*command};
    spec.cwd = wt.string();
    spec.env = util::current_environment();
    spec.env["PERFGATE_COMMIT"] = c.sha;
    spec.env["PERFGATE_WORKTREE"] = wt.string();
    spec.stdout_path = log.string();
    spec.stderr_path = log.string() + ".err";
    spec.timeout_s = m_req.build_timeout_s;
    spec.log_limit_bytes = 64ull << 20;
    spec.track_usage = false;
    Quiet quiet;
    auto res = m_launcher.launch(spec, quiet);
    if (res.outcome == exec::Outcome::Interrupted) return Error::harness(k_interrupted);
    const bool ok = res.outcome == exec::Outcome::Exited && res.exit_code == 0;
    ++m_report.builds_run;
    store::BuildRecord b;
    b.key = key;
    b.tree = tree_hash;
    b.build_command = m_req.build_command;
    b.git_commit = c.sha;
    b.status = ok ? "ok" : "failed";
    b.attempts = attempt;
    b.worktree = wt.string();
    b.log_path = log.string();
    if (!ok) {
      b.error = res.outcome == exec::Outcome::Exited ? fmt::format("exited with code {}", res.exit_code)
                                                     : fmt::format("{} {}", exec::to_string(res.outcome), res.error);
      if (!res.stderr_tail.empty()) b.error += ": " + std::string(util::trim(res.stderr_tail));
    }
    b.duration_s = res.wall_s;
    b.updated_at = util::unix_now_s();
    if (auto s = m_st.save_build(b); !s) return s.error();
    c.build_status = b.status;
    c.build_log = b.log_path;
    c.build_error = b.error;
    if (ok) m_worktree_of[i] = wt.string();
    return ok;
  }

  Expected<analysis::BisectRun> measure(std::size_t i, int trials) override {
    if (auto& q = m_prefetched[i]; !q.empty()) {
      auto r = q.front();
      q.pop_front();
      return r;
    }
    auto& c = m_report.commits[i];
    // Runs stored for this commit by an earlier (or interrupted) bisect of
    // the same configuration are read before anything is run again.
    store::RunQuery q;
    q.suite = m_suite.name;
    q.commit_prefix = c.sha;
    q.bisect_runs = true;
    auto found = m_st.find_runs(q);
    if (!found) return found.error();
    std::vector<store::RunRecord> stored = *found;
    std::sort(stored.begin(), stored.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
    for (const auto& r : stored) {
      if (r.kind != model::RunKind::Bisect || m_used.count(r.id) || r.git_commit != c.sha) continue;
      auto v = values_of(r.id);
      if (!v) return v.error();
      if (!*v) continue;  // another configuration
      m_used.insert(r.id);
      c.runs.push_back(r.id);
      ++c.runs_reused;
      m_report.trials_reused += static_cast<long long>((*v)->values.size()) + (*v)->failed;
      return **v;
    }
    auto wt = m_worktree_of.find(i);
    if (wt == m_worktree_of.end())
      return Error::harness(fmt::format("commit {} was measured before it was built", c.sha));
    RunOptions ro = m_req.run;
    ro.kind = model::RunKind::Bisect;
    ro.commit = c.sha;
    ro.branch = "bisect";
    ro.tags = {"bisect"};
    ro.worktree = wt->second;
    ro.progress = nullptr;
    ro.probe_python = false;
    model::Plan plan;
    plan.seed = suite::fresh_seed();
    plan.cases = {m_case};
    for (int r = 0; r < trials; ++r) plan.trials.push_back({0, r, r});
    auto out = run_plan(m_suite, plan, m_st, m_launcher, ro);
    if (!out) return out.error();
    if (out->status == model::RunStatus::Interrupted) return Error::harness(k_interrupted);
    m_used.insert(out->run_id);
    c.runs.push_back(out->run_id);
    m_report.trials_run += trials;
    auto v = values_of(out->run_id);
    if (!v) return v.error();
    if (!*v) {
      analysis::BisectRun none;
      none.failed = trials;
      return none;
    }
    return **v;
  }

  void prefetch(std::size_t i, analysis::BisectRun r) { m_prefetched[i].push_back(std::move(r)); }

 private:
  Expected<util::FileLock> lock_commit(const std::string& sha) {
    std::error_code ec;
    fs::create_directories(m_worktrees, ec);
    if (ec) return Error::harness(fmt::format("cannot create the worktrees folder {}: {}", m_worktrees, ec.message()));
    const std::string path = (fs::path(m_worktrees) / (sha.substr(0, 12) + ".lock")).string();
    util::FileLock::WaitOptions wo;
    wo.what = "the worktree of " + sha.substr(0, 12);
    wo.give_up = [] { return util::interrupt_count() > 0; };
    wo.on_wait = [&] {
      if (m_req.run.progress)
        *m_req.run.progress << fmt::format("bisect: waiting for another bisect building {} ({})\n", sha.substr(0, 10),
                                           path)
                            << std::flush;
    };
    auto lock = util::FileLock::acquire(path, wo);
    if (!lock && util::interrupt_count() > 0) return Error::harness(k_interrupted);
    return lock;
  }

  Status worktree(const std::string& sha, const fs::path& wt) {
    std::error_code ec;
    if (fs::exists(wt / ".git", ec)) {
      auto head = git(wt.string(), {"rev-parse", "HEAD"});
      if (head.ok() && util::trim(head.out) == sha) return Ok{};
      // Something else is there (a worktree left at another commit): start over.
      git(m_req.repo, {"worktree", "remove", "--force", wt.string()});
      fs::remove_all(wt, ec);
    } else if (fs::exists(wt, ec)) {
      fs::remove_all(wt, ec);
    }
    git(m_req.repo, {"worktree", "prune"});
    fs::create_directories(wt.parent_path(), ec);
    auto add = git(m_req.repo, {"worktree", "add", "--detach", "--force", wt.string(), sha}, 300);
    if (!add.ok())
      return Error::harness(fmt::format("git worktree add {} {}: {}", wt.string(), sha, why_git_failed(add)));
    return Ok{};
  }

  // The configuration's values of the metric in a run; nullopt when the run
  // has no trial of it. Sets the report's metric on first use.
  Expected<std::optional<analysis::BisectRun>> values_of(long long run_id) {
    auto data = m_st.load_run(run_id);
    if (!data) return data.error();
    auto summary = analysis::summarise_run(*data);
    for (const auto& cs : summary.configs) {
      if (cs.workload != m_case.workload || cs.params_json != m_case.params_json) continue;
      if (cs.trials_ok + cs.trials_failed == 0) return std::optional<analysis::BisectRun>();
      if (m_report.metric.empty()) m_report.metric = cs.primary_metric;
      analysis::BisectRun r;
      r.failed = cs.trials_failed;
      const auto* row = cs.find(m_report.metric);
      if (row) {
        if (m_report.unit.empty()) {
          m_report.unit = row->info.unit;
          m_report.better = row->info.better == model::Better::None ? model::Better::Lower : row->info.better;
        }
        for (const auto& t : row->trials)
          if (std::isfinite(t.value))
            r.values.push_back(t.value);
          else
            ++r.failed;
      } else {
        r.failed += cs.trials_ok;  // the metric is missing: nothing to compare
      }
      return std::optional<analysis::BisectRun>(std::move(r));
    }
    return std::optional<analysis::BisectRun>();
  }

  store::Store& m_st;
  exec::Launcher& m_launcher;
  const BisectRequest& m_req;
  BisectReport& m_report;
  const model::Suite& m_suite;
  const model::Case& m_case;
  std::string m_worktrees;
  std::map<std::size_t, std::string> m_worktree_of;
  std::map<std::size_t, int> m_attempts;
  std::map<std::size_t, std::deque<analysis::BisectRun>> m_prefetched;
  std::set<long long> m_used;
};

const char* kind_name(analysis::BisectEnd k) {
  switch (k) {
    case analysis::BisectEnd::Culprit:
      return "culprit";
    case analysis::BisectEnd::Range:
      return "range";
    case analysis::BisectEnd::NoRegression:
      return "no-regression";
  }
  return "?";
}

}  // namespace

Expected<std::vector<GitCommit>> first_parent_range(const std::string& repo, const std::string& good,
                                                    const std::string& bad) {
  auto top = git(repo, {"rev-parse", "--show-toplevel"});
  if (!top.ok()) return Error::input(fmt::format("--repo {} is not a git checkout: {}", repo, why_git_failed(top)));
  auto g = resolve(repo, good, "good");
  if (!g) return g.error();
  auto b = resolve(repo, bad, "bad");
  if (!b) return b.error();
  if (*g == *b) return Error::input(fmt::format("--good {} and --bad {} are the same commit", good, bad));
  auto anc = git(repo, {"merge-base", "--is-ancestor", *g, *b});
  if (!anc.ran || (anc.exit_code != 0 && anc.exit_code != 1))
    return Error::harness(fmt::format("git merge-base: {}", why_git_failed(anc)));
  if (anc.exit_code == 1)
    return Error::input(
        fmt::format("--good {} is not an ancestor of --bad {}: nothing lies between them to search", good, bad));
  auto log = git(repo, {"log", "--first-parent", "--format=%H%x09%s", *g + ".." + *b}, 120);
  if (!log.ok()) return Error::harness(fmt::format("git log: {}", why_git_failed(log)));
  std::vector<GitCommit> out;
  for (auto line : util::split(log.out, '\n')) {
    if (line.empty()) continue;
    auto tab = line.find('\t');
    out.push_back(
        {std::string(line.substr(0, tab)), tab == std::string_view::npos ? "" : std::string(line.substr(tab + 1))});
  }
  std::reverse(out.begin(), out.end());
  if (out.empty()) return Error::input(fmt::format("no commits between --good {} and --bad {}", good, bad));
  // The oldest listed must sit right on good: else good is off bad's first-parent line (on a merged branch).
  auto parent = git(repo, {"rev-parse", out.front().sha + "^1"});
  if (!parent.ok() || util::trim(parent.out) != *g)
    return Error::input(
        fmt::format("--good {} is an ancestor of --bad {} but not on its first-parent history (it came "
                    "in through a merge); bisect along the mainline from the merge's parent",
                    good, bad));
  auto subject = git(repo, {"log", "-1", "--format=%s", *g});
  out.insert(out.begin(), GitCommit{*g, subject.ok() ? first_line(subject.out) : ""});
  return out;
}

Expected<BisectReport> run_git_bisect(store::Store& st, exec::Launcher& launcher, const BisectRequest& req,
                                      const BisectProgressFn& on_progress) {
  BisectReport report;
  report.repo = req.repo;
  report.good_ref = req.good;
  report.bad_ref = req.bad;
  report.metric = req.metric;
  if (req.build_command.empty()) return Error::input("--build is required: the command that builds a commit");
  {
    // Placeholders of the build command, checked before anything runs.
    auto probe = suite::substitute(req.build_command, [](std::string_view name) -> std::optional<std::string> {
      if (name == "commit" || name == "worktree") return std::string("x");
      return std::nullopt;
    });
    if (!probe)
      return Error::input(fmt::format("--build: {} (placeholders: {{commit}}, {{worktree}})", probe.error().message));
  }
  auto commits = first_parent_range(req.repo, req.good, req.bad);
  if (!commits) return commits.error();
  for (const auto& c : *commits) report.commits.push_back({c.sha, c.subject, "", "", "", {}, 0});

  // The suite's one configuration, each visit a run of trials_per_run trials.
  suite::LoadOptions lo;
  lo.profiles = req.profiles;
  for (const auto& set : req.sets) {
    auto o = suite::parse_override(set);
    if (!o) return o.error();
    lo.overrides.push_back(*o);
  }
  auto suite = suite::load_suite(req.suite_path, lo);
  if (!suite) return suite.error();
  std::vector<suite::CaseFilter> filters;
  for (const auto& o : req.onlys) {
    auto f = suite::parse_filter(o);
    if (!f) return f.error();
    filters.push_back(*f);
  }
  auto cases = suite::filter_cases(suite::expand(*suite), filters);
  if (!cases) return cases.error();
  if (cases->empty()) return Error::input(fmt::format("--only selects no configuration of {}", req.suite_path));
  if (cases->size() > 1) {
    std::vector<std::string> labels;
    for (const auto& c : *cases) labels.push_back(c.label);
    return Error::input(
        fmt::format("--only selects {} configurations of {} ({}); bisect follows one: add --only KEY=VALUE "
                    "until one is left",
                    cases->size(), req.suite_path, util::join(labels, "; ")));
  }
  const model::Case the_case = cases->front();
  report.suite = suite->name;
  report.workload = the_case.workload;
  report.params_json = the_case.params_json;
  report.label = the_case.label;

  std::string worktrees = req.worktrees_dir;
  if (worktrees.empty()) worktrees = (fs::path(req.run.artifacts_root) / "bisect" / "worktrees").string();
  worktrees = fs::absolute(worktrees).lexically_normal().string();

  GitOracle oracle(st, launcher, req, report, *suite, the_case, worktrees);
  analysis::BisectOptions opt = req.search;
  auto finish = [&](const std::string& outcome) -> Expected<BisectReport> {
    report.outcome = outcome;
    store::BisectRecord rec;
    rec.created_at = util::unix_now_s();
    rec.suite = report.suite;
    rec.workload = report.workload;
    rec.params_json = report.params_json;
    rec.metric = report.metric;
    rec.good = report.commits.front().sha;
    rec.bad = report.commits.back().sha;
    rec.outcome = outcome;
    rec.report_json = bisect_report_json(report);
    auto id = st.save_bisect(rec);
    if (!id) return id.error();
    report.bisect_id = *id;
    return report;
  };
  auto was_interrupted = [&](const Error& e) { return e.message == k_interrupted || util::interrupt_count() > 0; };

  // The good end first: its run says which metric and which way is bad
  // before the search starts (the search reads that run back).
  {
    auto built = oracle.build(0);
    if (!built) return was_interrupted(built.error()) ? finish("interrupted") : Expected<BisectReport>(built.error());
    if (!*built)
      return Error::input(fmt::format("the good end {} does not build with --build: {} (log: {})",
                                      report.commits.front().sha.substr(0, 12), report.commits.front().build_error,
                                      report.commits.front().build_log));
    auto first = oracle.measure(0, opt.trials_per_run);
    if (!first) return was_interrupted(first.error()) ? finish("interrupted") : Expected<BisectReport>(first.error());
    if (report.unit.empty() && first->values.empty())
      return Error::input(fmt::format("the good end's trials of {} gave no value of {}{}", report.label,
                                      report.metric.empty() ? "a primary metric" : report.metric,
                                      report.metric.empty() ? "" : " (--metric names another?)"));
    oracle.prefetch(0, *first);
  }
  opt.better = report.better;
  std::function<void(const analysis::BisectProgress&)> progress;
  if (on_progress) progress = [&](const analysis::BisectProgress& p) { on_progress(p, report); };
  auto result = analysis::run_bisect(oracle, report.commits.size(), opt, progress);
  if (!result) {
    if (was_interrupted(result.error())) {
      report.interrupted = true;
      return finish("interrupted");
    }
    return result.error();
  }
  report.result = std::move(*result);
  std::string outcome = "no-regression";
  for (const auto& f : report.result.findings) {
    if (f.kind == analysis::BisectEnd::Culprit)
      outcome = "culprit";
    else if (f.kind == analysis::BisectEnd::Range && outcome != "culprit")
      outcome = "range";
  }
  return finish(outcome);
}

std::string bisect_report_json(const BisectReport& r) {
  using nlohmann::json;
  auto num = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  auto commit = [&](std::size_t i) {
    const auto& c = r.commits.at(i);
    return json{{"index", i}, {"sha", c.sha}, {"subject", c.subject}};
  };
  json j;
  j["bisect"] = r.bisect_id;
  j["repo"] = r.repo;
  j["suite"] = r.suite;
  j["workload"] = r.workload;
  j["params"] = json::parse(r.params_json, nullptr, false);
  j["label"] = r.label;
  j["metric"] = r.metric;
  j["unit"] = r.unit;
  j["better"] = model::to_string(r.better);
  j["good"] = {{"ref", r.good_ref}, {"sha", r.commits.empty() ? "" : r.commits.front().sha}};
  j["bad"] = {{"ref", r.bad_ref}, {"sha", r.commits.empty() ? "" : r.commits.back().sha}};
  j["outcome"] = r.outcome;
  j["builds"] = {{"run", r.builds_run}, {"cached", r.builds_cached}};
  j["trials"] = {{"run", r.trials_run}, {"reused", r.trials_reused}};
  json findings = json::array();
  for (const auto& f : r.result.findings) {
    json x{{"kind", kind_name(f.kind)},
           {"first", commit(f.first)},
           {"last", commit(f.last)},
           {"posterior", num(f.posterior)},
           {"why", f.why}};
    if (f.kind != analysis::BisectEnd::Range) {
      x["against"] = commit(f.kind == analysis::BisectEnd::Culprit ? f.parent : f.lo);
      x["change"] = num(f.test.change_rel);
      x["change_low"] = num(f.test.low_rel);
      x["change_high"] = num(f.test.high_rel);
      x["p"] = num(f.test.p);
      x["p_trials"] = num(f.test.p_trials);
      x["p_runs"] = num(f.test.p_runs);
      x["trials"] = {f.test.n_good, f.test.n_bad};
      x["runs"] = {f.test.runs_good, f.test.runs_bad};
    }
    findings.push_back(std::move(x));
  }
  j["findings"] = std::move(findings);
  json commits = json::array();
  for (std::size_t i = 0; i < r.commits.size(); ++i) {
    const auto& c = r.commits[i];
    json x = commit(i);
    x["build"] = c.build_status;
    if (!c.build_log.empty()) x["build_log"] = c.build_log;
    if (!c.build_error.empty()) x["build_error"] = c.build_error;
    x["runs"] = c.runs;
    x["runs_reused"] = c.runs_reused;
    if (i < r.result.commits.size()) {
      const auto& s = r.result.commits[i];
      x["trials"] = s.trials();
      x["skipped"] = s.skipped;
      std::vector<double> means;
      for (const auto& run : s.runs)
        if (!run.values.empty()) means.push_back(stats::mean(run.values));
      x["run_means"] = means;
    }
    commits.push_back(std::move(x));
  }
  j["commits"] = std::move(commits);
  j["interrupted"] = r.interrupted;
  return j.dump(2);
}

}  // namespace perfgate::runner
