#include "harness/cli/commands.hpp"

#include <unistd.h>
#include <filesystem>
#include <iostream>
#include <optional>
#include <tuple>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "harness/analysis/run_summary.hpp"
#include "harness/analysis/soak.hpp"
#include "harness/analysis/sweep.hpp"
#include "harness/exec/process_launcher.hpp"
#include "harness/report/dashboard.hpp"
#include "harness/report/run_reporter.hpp"
#include "harness/report/soak_reporter.hpp"
#include "harness/report/sweep_reporter.hpp"
#include "harness/runner/runner.hpp"
#include "harness/runner/slots.hpp"
#include "harness/store/copy.hpp"
#include "harness/store/store.hpp"
#include "harness/suite/loader.hpp"
#include "harness/suite/matrix.hpp"
#include "harness/suite/placeholders.hpp"
#include "harness/suite/plan.hpp"
#include "harness/util/install_paths.hpp"
#include "harness/util/interrupt.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/time.hpp"
#include "harness/util/units.hpp"

namespace perfgate::cli {
namespace fs = std::filesystem;

int fail(const Error& e) {
  std::cerr << "perfgate: error: " << e.message << "\n";
  return exit_code_for(e);
}

Expected<std::unique_ptr<store::Store>> open_store(const State& s) {
  auto t = util::parse_duration_s(s.globals.db_timeout);
  if (!t) return Error::input("--db-timeout: " + t.error().message);
  return store::open_store(s.globals.db_path, {*t});
}

Expected<std::unique_ptr<store::Store>> open_existing_store(const State& s) {
  auto backend = store::backend_of(s.globals.db_path);
  if (!backend) return backend.error();
  std::error_code ec;
  if (*backend == store::Backend::Sqlite && !fs::exists(s.globals.db_path, ec))
    return Error::input(ec ? fmt::format("{}: cannot open the database: {}", s.globals.db_path, ec.message())
                           : fmt::format("{}: no database yet; `perfgate run SUITE` creates it", s.globals.db_path));
  return open_store(s);
}

namespace {

void print_plan(const model::Suite& suite, const model::Plan& plan, const runner::SoakOptions& soak) {
  std::cout << fmt::format("suite {}: {} configuration(s), {} trial(s), order {}, seed {}{}\n", suite.name,
                           plan.cases.size(), plan.trials.size(), plan.order, plan.seed,
                           suite.seed ? "" : " (fresh; pass --seed to run this exact order)");
  for (const auto& w : suite.workloads)
    std::cout << fmt::format("  workload {}: repeats {}, warm-up {}, timeout {}, cwd {}\n", w.name, w.repeats,
                             w.warmup.str(), util::format_duration(w.timeout_s), w.cwd);
  std::cout << "\n";
  for (const auto& t : plan.trials) {
    const auto& c = plan.cases[t.case_index];
    const auto& w = suite.workloads[c.workload_index];
    auto lookup = [&](std::string_view name) -> std::optional<std::string> {
      if (auto it = c.params.find(std::string(name)); it != c.params.end()) return it->second.text;
      if (name == "repeat") return std::to_string(t.repeat);
      // A soak's trials run for its duration (else the workload's timeout).
      if (name == "duration_s")
        return fmt::format("{:.0f}", soak.enabled && soak.duration_s > 0 ? soak.duration_s : w.timeout_s);
      // Where the shipped suites' programs are, as the run resolves them.
      if (name == "suite_dir" || name == "worktree") return suite.dir;
      if (name == "perfgate_libexec") return util::libexec_dir();
      return "{" + std::string(name) + "}";  // known only when the trial runs
    };
    std::vector<std::string> argv;
    for (const auto& a : w.command) {
      auto s = suite::substitute(a, lookup);
      argv.push_back(s ? *s : a);
    }
    std::string shown;
    if (w.shell)
      shown = "sh -c " + util::shell_quote(argv.at(0));
    else
      for (const auto& a : argv) shown += (shown.empty() ? "" : " ") + util::shell_quote(a);
    std::cout << fmt::format("{:4}  {}  repeat {}\n      {}\n", t.seq + 1, c.label, t.repeat + 1, shown);
  }
}

}  // namespace

namespace {

void run_options(CLI::App& sub, State& s) {
  sub.add_option("suite", s.suite_path, "suite YAML file")->required();
  sub.add_option("--set", s.sets, "override: KEY=V1,V2 sets a matrix axis (or repeats/timeout/warmup/...)");
  sub.add_option("--only", s.onlys,
                 "keep configurations where KEY is one of the values: KEY=V1,V2 (KEY may be 'workload')");
  sub.add_option("--tag", s.tags, "tag the run (repeatable), e.g. nightly");
  sub.add_option("--commit", s.commit, "commit the run measures (default: git HEAD where the suite lives)");
  sub.add_option("--branch", s.branch, "branch the run measures (default: from git)");
  sub.add_option("--profile", s.profiles, "machine profile from configs/profiles (repeatable)");
  sub.add_option("--seed", s.seed, "seed of the trial order (default: fresh, recorded with the run)");
  sub.add_option("--artifacts", s.artifacts_dir, "where logs go (default: next to the database)");
  sub.add_option("--slots", s.slots,
                 "the node's device slots, trials side by side: npu:0-7, npu:0-7/2 (2 per trial), cuda:0-3, "
                 "cpu:0-15/4, or {kind: ..., devices: [...], per_trial: N, env: VAR} (wins over suite and profile)");
  sub.add_flag("--dry-run", s.dry_run, "print the expanded plan in run order and exit");
  sub.add_flag("-q,--quiet", s.quiet, "no per-trial progress lines");
  sub.add_option("--max-failures", s.max_failures,
                 "exit 1 when more trials than this fail: a count (0) or a percentage of the run's trials (10%)");
  fleet_options(sub, s);
}

// A soak's default window: a thirtieth of the longest trial (at least 30
// windows), at most 60 s and at least half a second.
double soak_window_for(const runner::SoakOptions& soak, const model::Suite& suite) {
  if (soak.window_s > 0) return soak.window_s;
  double longest = soak.duration_s;
  if (longest <= 0)
    for (const auto& w : suite.workloads) longest = std::max(longest, w.timeout_s);
  return std::clamp(longest / 30, 0.5, 60.0);
}

// run and soak: load, expand, plan, then launch every trial into a new run.
int launch_suite(State& s, const runner::SoakOptions& soak) {
  std::optional<util::FailureLimit> max_failures;
  if (!s.max_failures.empty()) {
    auto l = util::parse_failure_limit(s.max_failures);
    if (!l) return fail(l.error());
    max_failures = *l;
  }
  suite::LoadOptions lo;
  lo.profiles = s.profiles;
  for (const auto& set : s.sets) {
    auto o = suite::parse_override(set);
    if (!o) return fail(o.error());
    lo.overrides.push_back(*o);
  }
  if (!s.slots.empty()) {
    auto sl = suite::parse_slots_option(s.slots);
    if (!sl) return fail(sl.error());
    lo.slots = *sl;
  }
  auto suite = suite::load_suite(s.suite_path, lo);
  if (!suite) return fail(suite.error());
  std::vector<model::Slot> slots;
  if (suite->slots) {
    auto made = runner::make_slots(*suite->slots);
    if (!made) return fail(made.error());  // validated at load; kept for a spec built elsewhere
    slots = std::move(*made);
  }
  if (s.seed >= 0) suite->seed = static_cast<std::uint64_t>(s.seed);
  std::vector<suite::CaseFilter> filters;
  for (const auto& o : s.onlys) {
    auto f = suite::parse_filter(o);
    if (!f) return fail(f.error());
    filters.push_back(*f);
  }
  auto cases = suite::filter_cases(suite::expand(*suite), filters);
  if (!cases) return fail(cases.error());
  if (cases->empty()) return fail(Error::input("--only left no configuration to run"));
  auto plan = suite::make_plan(*suite, std::move(*cases), suite->seed.value_or(suite::fresh_seed()));
  if (s.dry_run) {
    print_plan(*suite, plan, soak);
    if (slots.size() > 1 || (slots.size() == 1 && !slots[0].devices.empty())) {
      std::vector<std::string> shown;
      for (const auto& sl : slots) shown.push_back(fmt::format("{} {}", sl.kind, util::join_ints(sl.devices)));
      std::cout << fmt::format("slots: {} ({}), trials side by side\n", slots.size(), util::join(shown, "; "));
    }
    if (soak.enabled)
      std::cout << fmt::format("soak: every trial runs {}, window {}, a hang after {} without a step\n",
                               soak.duration_s > 0 ? util::format_duration(soak.duration_s) : "its workload's timeout",
                               util::format_duration(soak_window_for(soak, *suite)),
                               util::format_duration(soak.hang_after_s));
    return 0;
  }

  auto st = open_store(s);
  if (!st) return fail(st.error());
  util::install_interrupt_handlers();
  runner::RunOptions ro;
  ro.tags = s.tags;
  ro.commit = s.commit;
  ro.branch = s.branch;
  ro.artifacts_root = artifacts_root_of(s);
  ro.progress = s.quiet ? nullptr : &std::cerr;
  ro.command_line = s.globals.command_line;
  ro.profiles = s.profiles;
  ro.sets = s.sets;
  ro.soak = soak;
  ro.slots = slots;
  ro.slots_option = s.slots;
  if (ro.soak.enabled && ro.soak.window_s <= 0) ro.soak.window_s = soak_window_for(soak, *suite);
  if (s.executor == "slurm") {
    auto fleet = run_on_fleet(s, *suite, plan, **st, ro);
    if (!fleet) return fail(fleet.error());
    if (!*fleet) return 0;  // --no-wait
    return report_run_outcome(s, **st, **fleet, ro);
  }
  exec::ProcessLauncher launcher;
  auto outcome = runner::run_plan(*suite, plan, **st, launcher, ro);
  if (!outcome) return fail(outcome.error());
  return report_run_outcome(s, **st, *outcome, ro);
}

}  // namespace

int report_run_outcome(State& s, store::Store& st_ref, const runner::RunOutcome& outcome_ref,
                       const runner::RunOptions& ro) {
  const runner::SoakOptions& soak = ro.soak;
  std::optional<util::FailureLimit> max_failures;
  if (!s.max_failures.empty())
    if (auto l = util::parse_failure_limit(s.max_failures)) max_failures = *l;
  store::Store* st_ptr = &st_ref;
  auto* st = &st_ptr;
  const runner::RunOutcome* outcome = &outcome_ref;
  if (soak.enabled) {
    analysis::SoakAnalysisOptions so;
    so.window_s = ro.soak.window_s;
    auto rep = analysis::analyse_soak(**st, outcome->run_id, so);
    if (!rep) return fail(rep.error());
    std::cout << report::soak_table(*rep);
  } else {
    auto data = (*st)->load_run(outcome->run_id);
    if (!data) return fail(data.error());
    auto reporter = report::make_table_reporter();
    auto summary = analysis::summarise_run(*data);
    std::cout << reporter->show(summary, {});
    // A matrix: which configuration won, and whether it really did.
    if (summary.configs.size() > 1)
      if (auto sw = analysis::rank_sweep(summary, {})) std::cout << "\n" << report::sweep_short(*sw);
  }
  for (const auto& e : outcome->suite_errors) std::cerr << "perfgate: error: " << e << "\n";
  if (outcome->status == model::RunStatus::Interrupted) {
    std::cerr << fmt::format("perfgate: run {} interrupted after {} of {} trials; finished trials are kept\n",
                             outcome->run_id, outcome->trials_ok + outcome->trials_failed, outcome->trials_total);
    return static_cast<int>(ExitCode::HarnessError);
  }
  if (outcome->trials_ok == 0) {
    std::cerr << fmt::format("perfgate: every trial of run {} failed\n", outcome->run_id);
    return static_cast<int>(ExitCode::HarnessError);
  }
  if (max_failures && max_failures->exceeded(outcome->trials_failed, outcome->trials_total)) {
    std::cerr << fmt::format("perfgate: {} of {} trials of run {} failed, more than --max-failures {} allows\n",
                             outcome->trials_failed, outcome->trials_total, outcome->run_id, s.max_failures);
    return static_cast<int>(ExitCode::Regression);
  }
  if (outcome->trials_failed > 0)
    std::cerr << fmt::format("perfgate: warning: {} of {} trials failed (see above)\n", outcome->trials_failed,
                             outcome->trials_total);
  if (!outcome->suite_errors.empty()) {
    std::cerr << fmt::format("perfgate: run {} is recorded; fix the suite and run again\n", outcome->run_id);
    return static_cast<int>(ExitCode::InputError);
  }
  return 0;
}

void setup_run(CLI::App& sub, State& s) { run_options(sub, s); }

int do_run(State& s) { return launch_suite(s, {}); }

void setup_soak(CLI::App& sub, State& s) {
  run_options(sub, s);
  sub.add_option("--duration", s.soak_duration,
                 "how long every trial runs, e.g. 24h (default: each workload's timeout)");
  sub.add_option("--window", s.soak_window,
                 "progress and analysis window (default: a thirtieth of the duration, at most 60s, at least 0.5s)");
  sub.add_option("--hang-after", s.soak_hang_after, "a trial with no step record for this long is a hang")
      ->capture_default_str();
}

int do_soak(State& s) {
  runner::SoakOptions soak;
  soak.enabled = true;
  for (auto [text, out, what] : {std::tuple{&s.soak_duration, &soak.duration_s, "--duration"},
                                 std::tuple{&s.soak_window, &soak.window_s, "--window"},
                                 std::tuple{&s.soak_hang_after, &soak.hang_after_s, "--hang-after"}}) {
    if (text->empty()) continue;
    auto d = util::parse_duration_s(*text);
    if (!d) return fail(Error::input(fmt::format("{}: {}", what, d.error().message)));
    if (*d <= 0) return fail(Error::input(fmt::format("{} must be positive", what)));
    *out = *d;
  }
  if (s.soak_window.empty()) soak.window_s = 0;  // decided once the duration is known (launch_suite)
  // Live progress: rewritten in place on a terminal, one line per window in a log.
  bool tty = ::isatty(STDERR_FILENO) != 0;
  if (!s.quiet)
    soak.on_progress = [tty](const std::string& label, double duration_s, const runner::TrialProgress& p,
                             double soak_eta_s) {
      std::string line = report::soak_progress_line(label, duration_s, p.t_s, p.steps, p.primary, p.window_value,
                                                    p.throughput, p.drift_pct_per_h, p.sampled, soak_eta_s);
      if (tty)
        std::cerr << "\r\x1b[2K" << line << std::flush;
      else
        std::cerr << line << std::endl;
    };
  int rc = launch_suite(s, soak);
  if (tty && !s.quiet) std::cerr << "\n";
  return rc;
}

void setup_soak_report(CLI::App& sub, State& s) {
  sub.add_option("run", s.run_selector, "run id, latest, or latest:TAG")->required();
  sub.add_option("--window", s.soak_window, "analysis window (default: the one the soak ran with)");
  sub.add_option("--format", s.format, "table | markdown | json")->capture_default_str();
}

int do_soak_report(State& s) {
  if (s.format != "table" && s.format != "markdown" && s.format != "json")
    return fail(Error::input(fmt::format("--format '{}': use table, markdown or json", s.format)));
  double window_s = 0;
  if (!s.soak_window.empty()) {
    auto w = util::parse_duration_s(s.soak_window);
    if (!w || *w <= 0)
      return fail(Error::input(fmt::format("--window '{}': expected a duration such as 60s", s.soak_window)));
    window_s = *w;
  }
  auto st = open_existing_store(s);
  if (!st) return fail(st.error());
  auto id = (*st)->resolve_run(s.run_selector);
  if (!id) return fail(id.error());
  analysis::SoakAnalysisOptions so;
  so.window_s = window_s > 0 ? window_s : analysis::stored_soak_window_s(**st, *id);
  auto rep = analysis::analyse_soak(**st, *id, so);
  if (!rep) return fail(rep.error());
  std::cout << (s.format == "json"       ? report::soak_json(*rep)
                : s.format == "markdown" ? report::soak_markdown(*rep)
                                         : report::soak_table(*rep));
  return 0;
}

void setup_sweep(CLI::App& sub, State& s) {
  sub.add_option("run", s.run_selector, "run id, latest, or latest:TAG")->required();
  sub.add_option("--metric", s.metrics, "rank by this metric (default: the run's primary metric)");
  sub.add_option("--axes", s.sweep_axes,
                 "two parameters for a table of rows x columns, e.g. bucket_mb,dataloader.num_workers");
  sub.add_option("--format", s.format, "table | markdown | json | csv")->capture_default_str();
}

int do_sweep(State& s) {
  if (s.format != "table" && s.format != "markdown" && s.format != "md" && s.format != "json" && s.format != "csv")
    return fail(Error::input(fmt::format("--format '{}': use table, markdown, json or csv", s.format)));
  if (s.metrics.size() > 1) return fail(Error::input("sweep ranks by one --metric"));
  analysis::SweepOptions so;
  if (!s.metrics.empty()) so.metric = s.metrics.front();
  if (!s.sweep_axes.empty())
    for (const auto& a : util::split(s.sweep_axes, ',')) so.axes.emplace_back(util::trim(a));
  auto st = open_existing_store(s);
  if (!st) return fail(st.error());
  auto id = (*st)->resolve_run(s.run_selector);
  if (!id) return fail(id.error());
  auto data = (*st)->load_run(*id);
  if (!data) return fail(data.error());
  auto summary = analysis::summarise_run(*data);
  auto r = analysis::rank_sweep(summary, so);
  if (!r) return fail(r.error());
  std::cout << (s.format == "json"                           ? report::sweep_json(*r)
                : s.format == "csv"                          ? report::sweep_csv(*r)
                : s.format == "markdown" || s.format == "md" ? report::sweep_markdown(*r)
                                                             : report::sweep_table(*r));
  return 0;
}

void setup_runs(CLI::App& sub, State& s) {
  sub.add_option("--limit", s.limit, "how many runs, newest first")->capture_default_str();
  sub.add_option("--suite", s.suite_filter, "only runs of this suite");
  sub.add_option("--format", s.format, "table | markdown | json | csv")->capture_default_str();
}

int do_runs(State& s) {
  auto reporter = report::make_run_reporter(s.format);
  if (!reporter) return fail(reporter.error());
  // A read-only command never creates a database just to say it is empty.
  auto st = open_existing_store(s);
  if (!st) return fail(st.error());
  auto rows = (*st)->list_runs(s.limit, s.suite_filter);
  if (!rows) return fail(rows.error());
  std::cout << (*reporter)->runs(*rows);
  return 0;
}

void setup_show(CLI::App& sub, State& s) {
  sub.add_option("run", s.run_selector, "run id, latest, or latest:TAG")->required();
  sub.add_option("--format", s.format, "table | markdown | json | csv")->capture_default_str();
  sub.add_option("--metric", s.metrics, "only this metric (repeatable)");
  sub.add_flag("--all-metrics", s.all_metrics, "also show cpu time and time to first step in tables");
  sub.add_option("--dashboard-url", s.dashboard_url, "Markdown: link the run's dashboard pages at this URL");
}

int do_show(State& s) {
  auto reporter = report::make_run_reporter(s.format);
  if (!reporter) return fail(reporter.error());
  auto st = open_existing_store(s);
  if (!st) return fail(st.error());
  auto id = (*st)->resolve_run(s.run_selector);
  if (!id) return fail(id.error());
  auto data = (*st)->load_run(*id);
  if (!data) return fail(data.error());
  report::ShowOptions so;
  so.metrics = s.metrics;
  // --metric names or globs that match nothing are a typo, not "no trial".
  for (const auto& pattern : s.metrics) {
    std::vector<std::string> names;
    bool matched = false;
    for (const auto& m : data->metrics) {
      names.push_back(m.name);
      matched = matched || model::glob_match(pattern, m.name);
    }
    if (!matched)
      return fail(Error::input(fmt::format("run {} has no metric '{}'{}; metrics: {}", *id, pattern,
                                           util::did_you_mean(pattern, names), util::join(names, ", "))));
  }
  so.all_metrics = s.all_metrics;
  so.dashboard_url = s.dashboard_url;
  std::cout << (*reporter)->show(analysis::summarise_run(*data), so);
  return 0;
}

void setup_import(CLI::App& sub, State& s) {
  sub.add_option("files", s.import_files, "result files; each becomes one trial")->required();
  sub.add_option("--format", s.import_format, "gbench (Google Benchmark JSON) | jsonl (the metric protocol)")
      ->required();
  sub.add_option("--suite", s.import_suite, "suite name the run is filed under (baselines and history select by it)")
      ->required();
  sub.add_option("--workload", s.import_workload, "workload name (default: the format)");
  sub.add_option("--config", s.import_configs, "a parameter of the configuration, key=value (repeatable)");
  sub.add_option("--tag", s.tags, "tag the run (repeatable)");
  sub.add_option("--commit", s.commit, "commit measured (default: git HEAD of the current directory)");
  sub.add_option("--branch", s.branch, "branch measured (default: from git)");
  sub.add_flag("-q,--quiet", s.quiet, "no per-file progress lines");
}

void setup_db(CLI::App& sub, State& s) {
  sub.require_subcommand(1);
  s.db_copy = sub.add_subcommand("copy",
                                 "copy every run (trials, samples, verdicts) of FROM into TO; refuses a TO that "
                                 "already holds any of them");
  s.db_copy->add_option("from", s.copy_from, "source database: a SQLite file or a postgresql:// URL")->required();
  s.db_copy->add_option("to", s.copy_to, "target database, created or upgraded if needed")->required();
}

int do_db(State& s) {
  if (!s.db_copy || !s.db_copy->parsed()) return fail(Error::input("db: use `perfgate db copy FROM TO`"));
  auto t = util::parse_duration_s(s.globals.db_timeout);
  if (!t) return fail(Error::input("--db-timeout: " + t.error().message));
  const std::string from_name = store::display_name(s.copy_from), to_name = store::display_name(s.copy_to);
  std::error_code ec;
  if (store::backend_of(s.copy_from).value_or(store::Backend::Sqlite) == store::Backend::Sqlite &&
      !fs::exists(s.copy_from, ec))
    return fail(Error::input(ec ? fmt::format("{}: cannot open the database: {}", from_name, ec.message())
                                : fmt::format("{}: no such database", from_name)));
  auto from = store::open_store(s.copy_from, {*t});
  if (!from) return fail(from.error());
  auto to = store::open_store(s.copy_to, {*t});
  if (!to) return fail(to.error());
  auto counts = store::copy_history(
      **from, **to, [&](long long a, long long b) { std::cerr << fmt::format("run {} -> {}\n", a, b); });
  if (!counts) return fail(counts.error());
  std::cout << fmt::format("copied {} run(s), {} trial(s), {} sample(s), {} gate(s) from {} to {}", counts->runs,
                           counts->trials, counts->samples, counts->gates, from_name, to_name);
  if (counts->replaced > 0) std::cout << fmt::format("; {} of the runs replaced a half-written copy", counts->replaced);
  if (counts->kept > 0) std::cout << fmt::format("; {} run(s) already there, left as they were", counts->kept);
  std::cout << "\n";
  return 0;
}

int do_import(State& s) {
  runner::ImportRequest req;
  req.format = s.import_format;
  req.files = s.import_files;
  req.suite = s.import_suite;
  req.workload = s.import_workload;
  req.cwd = fs::current_path().string();
  for (const auto& kv : s.import_configs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      return fail(Error::input(fmt::format("--config '{}': expected key=value, e.g. --config impl=simd", kv)));
    req.params[kv.substr(0, eq)] = model::Scalar::infer(kv.substr(eq + 1));
  }
  auto st = open_store(s);
  if (!st) return fail(st.error());
  runner::RunOptions ro;
  ro.tags = s.tags;
  ro.commit = s.commit;
  ro.branch = s.branch;
  ro.progress = s.quiet ? nullptr : &std::cerr;
  ro.command_line = s.globals.command_line;
  ro.kind = model::RunKind::Import;
  auto outcome = runner::import_files(req, **st, ro);
  if (!outcome) return fail(outcome.error());
  auto data = (*st)->load_run(outcome->run_id);
  if (!data) return fail(data.error());
  std::cout << report::make_table_reporter()->show(analysis::summarise_run(*data), {});
  if (outcome->trials_ok == 0) {
    // The files are the input: none readable is an input error; the run stays, marked failed.
    std::cerr << fmt::format("perfgate: no file of run {} could be read\n", outcome->run_id);
    return static_cast<int>(ExitCode::InputError);
  }
  if (outcome->trials_failed > 0)
    std::cerr << fmt::format("perfgate: warning: {} of {} files could not be read (see above)\n",
                             outcome->trials_failed, outcome->trials_total);
  return 0;
}

void setup_dashboard(CLI::App& sub, State& s) {
  sub.add_option("--out", s.dashboard_out, "output directory; open its index.html")->capture_default_str();
  sub.add_option("--runs", s.dashboard_runs, "newest runs to include")
      ->check(CLI::Range(1, 1'000'000))
      ->capture_default_str();
  sub.add_flag("-q,--quiet", s.quiet, "no progress lines");
}

int do_dashboard(State& s) {
  auto st = open_existing_store(s);
  if (!st) return fail(st.error());
  report::DashboardOptions opt;
  opt.out_dir = s.dashboard_out;
  opt.db_label = store::display_name(s.globals.db_path);
  opt.max_runs = s.dashboard_runs;
  if (!s.quiet) opt.progress = [](const std::string& line) { std::cerr << "dashboard: " << line << std::endl; };
  util::SteadyClock clock;
  const double t0 = clock.now_s();
  auto stats = report::write_dashboard(**st, opt);
  if (!stats) return fail(stats.error());
  std::cout << fmt::format("wrote {}: {} run(s), {} suite(s), {} soak(s), {} in {:.1f} s\n",
                           (fs::path(s.dashboard_out) / "index.html").string(), stats->runs, stats->suites,
                           stats->soaks, util::format_bytes(static_cast<std::uint64_t>(stats->bytes)),
                           clock.now_s() - t0);
  return 0;
}

std::string artifacts_root_of(const State& s) {
  if (!s.artifacts_dir.empty()) return s.artifacts_dir;
  // Logs go next to a SQLite file; with a server, under ./results (each
  // database's runs in their own folder: runs/<database id>/<run>).
  const bool server = store::backend_of(s.globals.db_path).value_or(store::Backend::Sqlite) == store::Backend::Postgres;
  std::string root = server ? std::string("results") : fs::path(s.globals.db_path).parent_path().string();
  return root.empty() ? std::string(".") : root;
}

}  // namespace perfgate::cli
