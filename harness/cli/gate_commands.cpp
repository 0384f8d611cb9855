// compare, gate and history: the commands that draw conclusions from runs.
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "harness/analysis/baseline.hpp"
#include "harness/analysis/checklist.hpp"
#include "harness/analysis/gate.hpp"
#include "harness/analysis/gate_source.hpp"
#include "harness/analysis/history.hpp"
#include "harness/analysis/node_class.hpp"
#include "harness/cli/commands.hpp"
#include "harness/exec/process_launcher.hpp"
#include "harness/report/checklist_reporter.hpp"
#include "harness/report/gate_reporter.hpp"
#include "harness/report/history_reporter.hpp"
#include "harness/runner/fingerprint.hpp"
#include "harness/suite/checklist_loader.hpp"
#include "harness/suite/policy_loader.hpp"
#include "harness/util/interrupt.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/time.hpp"
#include "harness/util/units.hpp"

namespace perfgate::cli {

namespace {

// Colour only for a person at a terminal: https://no-color.org says an
// NO_COLOR variable that is set and not empty turns it off.
bool use_colour() {
  const char* no = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  return ::isatty(STDOUT_FILENO) && !(no && *no) && !(term && std::string_view(term) == "dumb");
}

Expected<model::GatePolicy> policy_of(const State& s) {
  if (s.policy_path.empty()) return model::default_gate_policy();
  return suite::load_gate_policy(s.policy_path);
}

struct Judged {
  report::GateReport report;
  int exit_code = 0;
};

// Whether more candidate trials can be run: the suite the candidate ran is
// still where it was (an imported run has none to rerun).
bool can_rerun(const store::RunRecord& run) {
  std::error_code ec;
  return !run.suite_path.empty() && std::filesystem::is_regular_file(run.suite_path, ec);
}

// What compare and gate share: candidate, baseline, comparisons, verdicts.
Expected<Judged> judge(const State& s, store::Store& st, const std::string& cand_sel, const std::string& command) {
  auto policy = policy_of(s);
  if (!policy) return policy.error();
  if (!s.underpowered.empty()) {
    if (s.underpowered == "adaptive")
      policy->underpowered = model::Underpowered::Adaptive;
    else if (s.underpowered == "fail")
      policy->underpowered = model::Underpowered::Fail;
    else if (s.underpowered == "warn")
      policy->underpowered = model::Underpowered::Warn;
    else
      return Error::input(fmt::format("--underpowered '{}': use adaptive, fail or warn", s.underpowered));
  }
  auto cand_id = st.resolve_run(cand_sel);
  if (!cand_id) return cand_id.error();
  auto cand = st.load_run(*cand_id);
  if (!cand) return cand.error();
  auto base = analysis::select_baseline(st, cand->run, s.base_selector, s.force);
  if (!base) return base.error();
  auto history = analysis::select_history(st, cand->run, *base, policy->history_runs);
  if (!history) return history.error();

  Judged j;
  auto& r = j.report;
  r.command = command;
  r.candidate = cand->run;
  r.baseline_selector = s.base_selector;
  r.policy = *policy;
  r.policy.bootstrap_resamples = s.bootstrap;
  r.policy.bootstrap_seed = static_cast<unsigned long long>(s.bootstrap_seed);
  r.warnings = base->warnings;
  r.left_out_runs = base->left_out;
  if (cand->run.status != model::RunStatus::Completed)
    r.warnings.push_back(
        fmt::format("candidate run {} is {}, not completed", cand->run.id, model::to_string(cand->run.status)));
  // Each configuration is compared within one node class (a fleet may mix node kinds).
  auto classes = analysis::node_class_view(st, *cand, s.force);
  if (!classes) return classes.error();
  if (classes->split) {
    std::vector<std::string> names;
    for (const auto& [hash, name] : classes->names) names.push_back(name);
    r.warnings.push_back(
        fmt::format("candidate run {} ran on {} node classes ({}): each is compared with the "
                    "baseline's trials on the same class",
                    cand->run.id, names.size(), util::join(names, ", ")));
  }
  std::vector<analysis::RunSummary> base_summaries, history_summaries;
  std::vector<double> base_probe;
  for (const auto& b : base->runs) {
    r.baseline_runs.push_back(b.run);
    if (int n = classes->trials_elsewhere(b); n > 0)
      r.warnings.push_back(fmt::format(
          "baseline run {}: {} trial(s) on node classes the candidate did not run on left out", b.run.id, n));
    for (auto& part : classes->summarise(b)) base_summaries.push_back(std::move(part));
    if (double p = analysis::host_probe_median(analysis::summarise_run(b)); std::isfinite(p)) base_probe.push_back(p);
  }
  if (!base_probe.empty()) {
    std::sort(base_probe.begin(), base_probe.end());
    r.probe_base_ms = base_probe[base_probe.size() / 2];
  }
  for (const auto& h : *history) {
    r.history_runs.push_back(h.run.id);
    for (auto& part : classes->summarise(h)) history_summaries.push_back(std::move(part));
  }

  // More candidate trials: asked for (--adaptive), or what the policy does
  // for comparisons that cannot reach its level, where the suite can rerun.
  const bool rerunnable = can_rerun(cand->run);
  const bool may_add =
      s.adaptive || (policy->underpowered == model::Underpowered::Adaptive && rerunnable && !s.no_rerun);
  std::unique_ptr<exec::ProcessLauncher> launcher;
  runner::RunOptions ro;
  if (may_add) {
    launcher = std::make_unique<exec::ProcessLauncher>();
    util::install_interrupt_handlers();
    ro.progress = &std::cerr;
    ro.probe_python = false;
    // A fleet run's extra trials reach their workers' database through PERFGATE_DB.
    const bool sqlite = store::backend_of(s.globals.db_path).value_or(store::Backend::Sqlite) == store::Backend::Sqlite;
    ro.db_spec = sqlite ? std::filesystem::absolute(s.globals.db_path).lexically_normal().string() : s.globals.db_path;
  }
  analysis::StoreTrialSource source(st, cand->run.id, std::move(base_summaries), r.policy, s.metrics, launcher.get(),
                                    ro, std::move(history_summaries), *classes);
  auto items = source.items();
  if (!items) return items.error();
  auto first = analysis::evaluate_gate(*items, r.policy);
  auto decided = analysis::count_verdicts(first.comparisons);
  const int underpowered_first = analysis::count_underpowered(first.comparisons);
  // Unless the adaptive mode was asked for: the underpowered ones judged at
  // the level of its deciding look, as adaptive_requests judges them, and
  // whether the trials the gate may add can bring any of them there.
  std::vector<model::Comparison> at_final;
  if (!s.adaptive && underpowered_first > 0)
    at_final = analysis::evaluate_gate(*items, analysis::adaptive_final_policy(r.policy)).comparisons;
  const bool reachable = std::any_of(at_final.begin(), at_final.end(), [&](const model::Comparison& c) {
    return c.underpowered && c.trials_for_resolution > 0 && c.trials_for_resolution <= s.max_trials;
  });
  // The policy's rerun is for resolution: a gate that already found a
  // regression or failure has its answer.
  const bool wants_resolution =
      !s.adaptive && may_add && underpowered_first > 0 && decided.regression == 0 && decided.failed == 0;
  const bool rerun_for_resolution = wants_resolution && reachable;
  if (wants_resolution && !rerun_for_resolution)
    std::cerr << fmt::format(
        "{} comparison(s) cannot reach the policy's level at their trial counts, nor with the {} candidate trials "
        "per configuration the gate may run (--max-trials): none run (underpowered: adaptive)\n",
        underpowered_first, s.max_trials);
  if (s.adaptive || rerun_for_resolution) {
    if (rerun_for_resolution)
      std::cerr << fmt::format(
          "{} comparison(s) cannot reach the policy's level at their trial counts; running more "
          "candidate trials (underpowered: adaptive)\n",
          underpowered_first);
    analysis::AdaptiveOptions ao;
    ao.max_trials = s.max_trials;
    auto g = analysis::adaptive_gate(source, r.policy, ao);
    if (!g) return g.error();
    r.comparisons = std::move(g->comparisons);
    r.joint = std::move(g->joint);
    r.family = g->family;
    r.alpha_lone = g->alpha_lone;
    r.adaptive = true;
    r.rounds = g->rounds;
    r.trials_added = g->trials_added;
  } else {
    r.comparisons = std::move(first.comparisons);
    r.joint = std::move(first.joint);
    r.family = first.family;
    r.alpha_lone = first.alpha_lone;
    // The trials an underpowered one needs are those of the adaptive mode's
    // deciding look: what the warning below suggests running with.
    for (std::size_t i = 0; i < r.comparisons.size() && i < at_final.size(); ++i)
      if (r.comparisons[i].underpowered && at_final[i].underpowered)
        r.comparisons[i].trials_for_resolution = at_final[i].trials_for_resolution;
  }
  if (r.comparisons.empty()) {
    std::set<std::string> names;
    for (const auto& m : cand->metrics) names.insert(m.name);
    return Error::input(
        fmt::format("{} of run {} has nothing to compare: {} of its metrics ({}); pass --metric or a --policy "
                    "that names them",
                    command, cand->run.id, s.metrics.empty() ? "the policy gates none" : "--metric matches none",
                    util::join(std::vector<std::string>(names.begin(), names.end()), ", ")));
  }
  analysis::sort_by_severity(r.comparisons);
  r.counts = analysis::count_verdicts(r.comparisons);
  r.underpowered = analysis::count_underpowered(r.comparisons);
  {
    // The candidate as it stands now (an adaptive gate added trials).
    auto now = st.load_run(cand->run.id);
    if (!now) return now.error();
    r.probe_cand_ms = analysis::host_probe_median(analysis::summarise_run(*now));
    bool flagged = r.counts.regression + r.counts.improvement + r.counts.failed > 0;
    if (auto note = analysis::host_probe_note(r.probe_cand_ms, r.probe_base_ms, flagged); !note.empty())
      r.probe_notes.push_back(note);
  }
  // Once reruns were tried (or cannot be), what is still underpowered fails
  // the gate under `adaptive` too: exit 0 must mean nothing could be missed.
  model::Underpowered action = policy->underpowered;
  if (action == model::Underpowered::Adaptive) action = model::Underpowered::Fail;
  if (r.underpowered > 0) {
    int most = 0;
    for (const auto& c : r.comparisons)
      if (c.underpowered) most = std::max(most, c.trials_for_resolution);
    std::string why =
        policy->underpowered == model::Underpowered::Adaptive && !rerunnable
            ? fmt::format(" (its suite {} cannot be rerun)", cand->run.suite_path.empty() ? "-" : cand->run.suite_path)
            : "";
    r.warnings.push_back(fmt::format(
        "{} comparison(s) could not have flagged a lone regression: the smallest p their test can give at these trial "
        "counts is above the {:.2g} the gate's {} tests need{}; {}",
        r.underpowered, r.alpha_lone, r.family, why,
        most > 0 ? fmt::format("up to {} candidate trials per configuration would (gate --adaptive --max-trials {})",
                               most, std::max(most, s.max_trials))
                 : "no number of candidate trials would: pool more baseline runs"));
  }
  r.outcome = report::gate_outcome(r.counts, r.underpowered, action);
  // Exit 3 is for a candidate with nothing to judge: every trial failed. A
  // build that crashes in some trials is a failed gate (exit 1).
  const bool none_ran = std::none_of(cand->trials.begin(), cand->trials.end(),
                                     [](const model::TrialRecord& t) { return t.status == model::TrialStatus::Ok; });
  if (r.counts.failed > 0 && r.counts.failed == r.counts.total() && none_ran)
    j.exit_code = static_cast<int>(ExitCode::HarnessError);
  else if (r.outcome == "regression" || r.outcome == "underpowered")
    j.exit_code = static_cast<int>(ExitCode::Regression);
  else if (r.outcome == "inconclusive" && s.strict)
    j.exit_code = static_cast<int>(ExitCode::Inconclusive);
  return j;
}

// The format was checked up front (check_format).
void print_report(const report::GateReport& r, const std::string& format) {
  if (format == "markdown" || format == "md")
    std::cout << report::gate_markdown(r);
  else if (format == "json")
    std::cout << report::gate_json(r);
  else
    std::cout << report::gate_table(r, use_colour());
}

void common_options(CLI::App& sub, State& s) {
  sub.add_option("--metric", s.metrics, "compare this metric (name or glob, repeatable) instead of the policy's");
  sub.add_option("--policy", s.policy_path, "gate policy YAML (default: the built-in one, as configs/gate.yaml)");
  sub.add_option("--format", s.format, "table | markdown | json")->capture_default_str();
  sub.add_flag("--force", s.force, "compare even when the machines' fingerprints differ");
  sub.add_flag("--strict", s.strict, "exit 4 when nothing regressed but something is inconclusive or missing");
  sub.add_option("--bootstrap", s.bootstrap, "also a bootstrap interval of the median ratio, with this many resamples")
      ->check(CLI::Range(100, 1'000'000));
  sub.add_option("--bootstrap-seed", s.bootstrap_seed, "seed of the bootstrap (recorded in the JSON)")
      ->capture_default_str();
  sub.add_option("--dashboard-url", s.dashboard_url, "Markdown links to this dashboard's run and trend views");
}

}  // namespace

Status write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Error::input(fmt::format("{}: cannot write ({})", path, std::strerror(errno)));
  out << text;
  out.close();
  if (!out) return Error::harness(fmt::format("{}: write failed", path));
  return Ok{};
}

void setup_compare(CLI::App& sub, State& s) {
  sub.add_option("baseline", s.base_selector, "baseline: run id, latest:TAG, or tag:T,last:N / commit:SHA")->required();
  sub.add_option("candidate", s.run_selector, "candidate run: id, latest, or latest:TAG")->required();
  common_options(sub, s);
}

Status check_format(const std::string& format) {
  if (format == "table" || format == "markdown" || format == "md" || format == "json") return Ok{};
  return Error::input(fmt::format("--format '{}': use table, markdown (md) or json", format));
}

int do_compare(State& s) {
  if (auto f = check_format(s.format); !f) return fail(f.error());
  auto st = open_existing_store(s);
  if (!st) return fail(st.error());
  // compare looks at two runs as they are: it launches nothing, and a
  // comparison too small to decide is said, not failed.
  s.no_rerun = true;
  if (s.underpowered.empty()) s.underpowered = "warn";
  auto j = judge(s, **st, s.run_selector, "compare");
  if (!j) return fail(j.error());
  j->report.dashboard_url = s.dashboard_url;
  print_report(j->report, s.format);
  return j->exit_code;
}

void setup_gate(CLI::App& sub, State& s) {
  s.run_selector = "latest";
  sub.add_option("--run", s.run_selector, "candidate run: id, latest, or latest:TAG")->capture_default_str();
  sub.add_option("--baseline", s.base_selector, "baseline: run id, latest:TAG, or tag:T,last:N / commit:SHA")
      ->required();
  common_options(sub, s);
  sub.add_option("--markdown", s.markdown_path, "also write the Markdown report here (CI summary)");
  sub.add_option("--junit", s.junit_path, "also write JUnit XML here");
  sub.add_option("--json", s.json_path, "also write the JSON report here");
  sub.add_flag("--adaptive", s.adaptive, "run more candidate trials for inconclusive or suspicious comparisons first");
  sub.add_option(
      "--underpowered", s.underpowered,
      "what to do when a comparison cannot reach the policy's level: adaptive | fail | warn (default: the policy's)");
  sub.add_flag("--no-rerun", s.no_rerun, "never launch trials (an underpowered gate then fails or warns)");
  sub.add_option("--max-trials", s.max_trials, "adaptive: most candidate trials per configuration")
      ->check(CLI::Range(2, 1000))
      ->capture_default_str();
  sub.add_flag("--no-store", s.no_store, "do not record the verdicts in the database");
}

int do_gate(State& s) {
  // Before anything is stored or written: exit 2 means nothing was done.
  if (auto f = check_format(s.format); !f) return fail(f.error());
  auto st = open_existing_store(s);
  if (!st) return fail(st.error());
  auto j = judge(s, **st, s.run_selector, "gate");
  if (!j) return fail(j.error());
  auto& r = j->report;
  r.dashboard_url = s.dashboard_url;
  if (!s.no_store) {
    store::GateRecord g;
    g.run_id = r.candidate.id;
    g.created_at = util::unix_now_s();
    g.baseline = s.base_selector;
    for (const auto& b : r.baseline_runs) g.baseline_runs.push_back(b.id);
    g.policy = r.policy.path;
    g.outcome = r.outcome;
    g.trials_added = r.trials_added;
    g.forced = s.force;
    g.comparisons = r.comparisons;
    auto id = (*st)->save_gate(g);
    if (!id) return fail(id.error());
    r.gate_id = *id;
  }
  using Render = std::string (*)(const report::GateReport&);
  for (auto [path, render] : {std::pair<const std::string*, Render>{&s.markdown_path, report::gate_markdown},
                              std::pair<const std::string*, Render>{&s.junit_path, report::gate_junit},
                              std::pair<const std::string*, Render>{&s.json_path, report::gate_json}}) {
    if (path->empty()) continue;
    if (auto w = write_file(*path, render(r)); !w) return fail(w.error());
  }
  print_report(r, s.format);
  return j->exit_code;
}

void setup_history(CLI::App& sub, State& s) {
  s.limit = 365;  // a year of nightlies
  sub.add_option("--suite", s.suite_filter, "suite name")->required();
  sub.add_option("--metric", s.metrics, "metric name or glob (repeatable; default: the policy's gated metrics)");
  sub.add_option("--config", s.config_filters, "only configurations with KEY=VALUE (or workload=NAME), repeatable");
  sub.add_option("--policy", s.policy_path, "gate policy YAML: which metrics by default, their directions");
  sub.add_option("--limit", s.limit, "newest runs to read")->capture_default_str();
  sub.add_option("--seed", s.history_seed, "seed of the permutation test")->capture_default_str();
  sub.add_flag("--all-machines", s.all_machines, "include runs of other machine fingerprints than the newest run's");
  sub.add_option("--bisect", s.history_bisect,
                 "ID: the runs of that bisect, in commit order from its good end to its bad one, instead of the "
                 "suite's runs in time order");
  sub.add_option("--format", s.format, "table | json")->capture_default_str();
}

namespace {

// history --bisect: the bisect's runs, oldest commit first (its report lists
// the commits in order, each with the runs read for it).
Expected<std::vector<store::RunRecord>> bisect_runs_in_commit_order(store::Store& st, const std::string& suite,
                                                                    long long bisect_id) {
  auto bisects = st.load_bisects(suite);
  if (!bisects) return bisects.error();
  auto b =
      std::find_if(bisects->begin(), bisects->end(), [&](const store::BisectRecord& x) { return x.id == bisect_id; });
  if (b == bisects->end())
    return Error::input(fmt::format("--bisect {}: no bisect of suite '{}' has that id", bisect_id, suite));
  auto rep = nlohmann::json::parse(b->report_json, nullptr, false);
  std::vector<store::RunRecord> out;
  if (!rep.is_object() || !rep.contains("commits")) return out;
  for (const auto& c : rep["commits"])
    for (const auto& id : c.value("runs", nlohmann::json::array())) {
      auto data = st.load_run(id.get<long long>());
      if (!data) return data.error();
      out.push_back(data->run);
    }
  // Newest first, as find_runs lists them: the bad end's last run first.
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace

int do_history(State& s) {
  if (s.format != "table" && s.format != "json")
    return fail(Error::input(fmt::format("--format '{}': use table or json", s.format)));
  auto policy = policy_of(s);
  if (!policy) return fail(policy.error());
  auto st = open_existing_store(s);
  if (!st) return fail(st.error());
  store::RunQuery q;
  q.suite = s.suite_filter;
  q.limit = s.limit;
  auto runs =
      s.history_bisect > 0 ? bisect_runs_in_commit_order(**st, s.suite_filter, s.history_bisect) : (*st)->find_runs(q);
  if (!runs) return fail(runs.error());
  if (runs->empty())
    return fail(Error::input(fmt::format("no completed runs of suite '{}' in {}; `perfgate runs` lists the suites",
                                         s.suite_filter, store::display_name(s.globals.db_path))));
  report::HistoryReport hr;
  hr.suite = s.suite_filter;
  const auto& newest = runs->front();
  std::vector<analysis::RunSummary> summaries;
  int other = 0;
  for (auto it = runs->rbegin(); it != runs->rend(); ++it) {
    if (!s.all_machines && it->fingerprint_hash != newest.fingerprint_hash) {
      ++other;
      continue;
    }
    auto data = (*st)->load_run(it->id);
    if (!data) return fail(data.error());
    summaries.push_back(analysis::summarise_run(*data));
  }
  if (other > 0)
    hr.warnings.push_back(fmt::format(
        "left out {} run(s) of other machines than run {}'s (--all-machines includes them)", other, newest.id));
  analysis::HistoryOptions ho;
  ho.metrics = s.metrics;
  ho.config_filters = s.config_filters;
  ho.change_points.seed = static_cast<std::uint64_t>(s.history_seed);
  auto series = analysis::history(summaries, *policy, ho);
  hr.runs = static_cast<int>(summaries.size());
  hr.series = &series;
  hr.significance = ho.change_points.significance;
  hr.seed = ho.change_points.seed;
  if (series.empty())
    return fail(Error::input(fmt::format("no series to analyse in {} run(s) of '{}': check --metric and --config",
                                         summaries.size(), s.suite_filter)));
  std::cout << (s.format == "json" ? report::history_json(hr) : report::history_table(hr));
  return 0;
}

void setup_checklist(CLI::App& sub, State& s) {
  s.run_selector = "latest";
  sub.add_option("checklist", s.checklist_path, "checklist YAML, e.g. configs/release-checklist.yaml")->required();
  sub.add_option("--run", s.run_selector, "the run items are judged on (an item's own `run:` wins)")
      ->capture_default_str();
  sub.add_option("--baseline", s.base_selector, "baseline of no_regression items that name none");
  sub.add_option("--window", s.soak_window, "soak analysis window (default: the one each soak ran with)");
  sub.add_option("--markdown", s.markdown_path, "also write the Markdown report here");
  sub.add_option("--junit", s.junit_path, "also write JUnit XML here");
  sub.add_option("--json", s.json_path, "also write the JSON report here");
  sub.add_option("--format", s.format, "table | markdown | json")->capture_default_str();
  sub.add_flag("--strict", s.strict, "optional items that cannot be evaluated fail too");
  sub.add_flag("--force", s.force, "no_regression: compare across machine fingerprints");
}

int do_checklist(State& s) {
  if (auto f = check_format(s.format); !f) return fail(f.error());
  auto cl = suite::load_checklist(s.checklist_path);
  if (!cl) return fail(cl.error());
  double window_s = 0;  // 0: each soak's own
  if (!s.soak_window.empty()) {
    auto w = util::parse_duration_s(s.soak_window);
    if (!w || *w <= 0)
      return fail(Error::input(fmt::format("--window '{}': expected a duration such as 60s", s.soak_window)));
    window_s = *w;
  }
  auto st = open_existing_store(s);
  if (!st) return fail(st.error());
  analysis::ChecklistOptions co;
  co.run = s.run_selector;
  co.baseline = s.base_selector;
  co.force = s.force;
  co.soak_window_s = window_s;
  auto res = analysis::evaluate_checklist(**st, *cl, co);
  if (!res) return fail(res.error());
  using Render = std::string (*)(const analysis::ChecklistResult&, bool);
  for (auto [path, render] : {std::pair<const std::string*, Render>{&s.markdown_path, report::checklist_markdown},
                              std::pair<const std::string*, Render>{&s.junit_path, report::checklist_junit},
                              std::pair<const std::string*, Render>{&s.json_path, report::checklist_json}}) {
    if (path->empty()) continue;
    if (auto wr = write_file(*path, render(*res, s.strict)); !wr) return fail(wr.error());
  }
  std::cout << (s.format == "json"                           ? report::checklist_json(*res, s.strict)
                : s.format == "markdown" || s.format == "md" ? report::checklist_markdown(*res, s.strict)
                                                             : report::checklist_table(*res, s.strict));
  return analysis::checklist_failed(*res, s.strict) ? static_cast<int>(ExitCode::Regression) : 0;
}

}  // namespace perfgate::cli
