#include "harness/report/bisect_reporter.hpp"

#include <cmath>

#include <fmt/format.h>

#include "harness/report/table.hpp"
#include "harness/stats/descriptive.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::report {
namespace {

std::string short_sha(const std::string& sha) { return sha.substr(0, 10); }

std::string subject(const runner::BisectCommit& c, std::size_t width = 60) {
  return c.subject.size() <= width ? c.subject : c.subject.substr(0, width - 3) + "...";
}

std::string pct(double x) { return std::isfinite(x) ? fmt::format("{:+.1f} %", 100 * x) : std::string("-"); }

std::string finding_text(const runner::BisectReport& r, const analysis::BisectFinding& f, bool markdown) {
  auto code = [&](const std::string& s) { return markdown ? "`" + s + "`" : s; };
  const auto& first = r.commits[f.first];
  switch (f.kind) {
    case analysis::BisectEnd::Culprit:
      return fmt::format(
          "culprit {} \"{}\" (commit {} of {}): {} {} (95 % interval {} .. {}) against its parent {}, "
          "one-sided p {:.2g} (trials {:.2g}, runs {:.2g}), posterior {:.0f} %",
          code(short_sha(first.sha)), subject(first), f.first, r.commits.size() - 1, r.metric, pct(f.test.change_rel),
          pct(f.test.low_rel), pct(f.test.high_rel), code(short_sha(r.commits[f.parent].sha)), f.test.p,
          f.test.p_trials, f.test.p_runs, 100 * f.posterior);
    case analysis::BisectEnd::Range: {
      std::vector<std::string> shas;
      for (std::size_t i = f.first; i <= f.last; ++i) {
        std::string s = code(short_sha(r.commits[i].sha));
        if (r.result.commits.size() > i && r.result.commits[i].skipped) s += " (skipped)";
        shas.push_back(s);
      }
      return fmt::format("the step is in {} commit(s), {} .. {} (posterior {:.0f} %): {}; {}", f.last - f.first + 1,
                         f.first, f.last, 100 * f.posterior, util::join(shas, ", "), f.why);
    }
    case analysis::BisectEnd::NoRegression:
      return fmt::format("no regression between the ends: {}", f.why);
  }
  return "";
}

// The commits measured (the ends and those the search built): build,
// trials, mean of the metric, runs.
TextTable commits_table(const runner::BisectReport& r, bool markdown) {
  using A = TextTable::Align;
  TextTable t;
  t.columns({"#", "commit", "subject", "build", "trials", "mean", "runs"},
            {A::Right, A::Left, A::Left, A::Left, A::Right, A::Right, A::Left});
  for (std::size_t i = 0; i < r.commits.size() && i < r.result.commits.size(); ++i) {
    const auto& s = r.result.commits[i];
    const auto& c = r.commits[i];
    if (c.build_status.empty() && s.runs.empty()) continue;
    std::vector<double> all;
    for (const auto& run : s.runs) all.insert(all.end(), run.values.begin(), run.values.end());
    t.row({std::to_string(i), markdown ? "`" + short_sha(c.sha) + "`" : short_sha(c.sha),
           subject(c, markdown ? 60 : 40), s.skipped ? "skipped" : c.build_status, std::to_string(s.trials()),
           all.empty() ? "-" : format_value(stats::mean(all)),
           std::to_string(s.runs.size()) + (c.runs_reused ? fmt::format(" ({} reused)", c.runs_reused) : "")});
  }
  return t;
}

}  // namespace

std::string bisect_table(const runner::BisectReport& r) {
  std::string out = fmt::format("bisect {}: {}, {} ({} is better), suite {}\n", r.bisect_id, r.label, r.metric,
                                r.better == model::Better::Higher ? "higher" : "lower", r.suite);
  if (r.commits.size() >= 2)
    out += fmt::format("good {} \"{}\" .. bad {} \"{}\": {} commits between\n", short_sha(r.commits.front().sha),
                       subject(r.commits.front(), 40), short_sha(r.commits.back().sha), subject(r.commits.back(), 40),
                       r.commits.size() - 2);
  if (!r.result.commits.empty()) out += commits_table(r, false).render();
  for (const auto& f : r.result.findings) out += finding_text(r, f, false) + "\n";
  if (r.interrupted) out += "interrupted: every build and trial so far is kept; the same command resumes from them\n";
  out += fmt::format("spent: {} build(s) run, {} cached; {} trial(s) run, {} reused{}\n", r.builds_run, r.builds_cached,
                     r.trials_run, r.trials_reused, r.result.budget_spent ? "; the budget ran out" : "");
  for (const auto& c : r.commits)
    if (c.build_status == "failed" && !c.build_log.empty())
      out += fmt::format("build of {} failed: {} (log: {})\n", short_sha(c.sha), c.build_error, c.build_log);
  return out;
}

std::string bisect_markdown(const runner::BisectReport& r) {
  std::string head = "no regression between the ends";
  for (const auto& f : r.result.findings) {
    if (f.kind == analysis::BisectEnd::Culprit) {
      head = fmt::format("culprit `{}`", short_sha(r.commits[f.first].sha));
      break;
    }
    if (f.kind == analysis::BisectEnd::Range) head = fmt::format("the step is in {} commits", f.last - f.first + 1);
  }
  if (r.interrupted) head = "interrupted";
  std::string out = fmt::format(
      "### perfgate bisect: {}\n\n{}, **{}** ({} is better), suite `{}`; good `{}`, bad `{}`\n\n", head,
      markdown_escape(r.label), markdown_escape(r.metric), r.better == model::Better::Higher ? "higher" : "lower",
      markdown_escape(r.suite), short_sha(r.commits.front().sha), short_sha(r.commits.back().sha));
  for (const auto& f : r.result.findings) out += "- " + markdown_escape(finding_text(r, f, true)) + "\n";
  out += "\n" + commits_table(r, true).render_markdown();
  out += fmt::format("\n{} build(s) run, {} cached; {} trial(s) run, {} reused.\n", r.builds_run, r.builds_cached,
                     r.trials_run, r.trials_reused);
  return out;
}

}  // namespace perfgate::report
