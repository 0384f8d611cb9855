// Terminal tables for `show` and `runs`.

#include <algorithm>

#include <fmt/format.h>

#include "harness/report/dashboard.hpp"
#include "harness/report/run_reporter.hpp"
#include "harness/report/table.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/units.hpp"

namespace perfgate::report {
namespace {

std::string short_commit(const std::string& c) { return c.substr(0, 10); }

std::string analysis_steady(const analysis::ConfigSummary& c, const analysis::RunSummary& rs) {
  auto s = steady_text(c, rs.trials);
  return s.empty() ? "-" : s;
}

// Shared by the text and Markdown forms: the run header and the metric table.
struct ShowParts {
  std::string title;
  std::vector<std::string> facts;
  TextTable table;
  bool any_small_n = false;
  double small_coverage = 1;
  std::vector<std::string> failures;
  std::vector<std::string> notes;
};

ShowParts build(const analysis::RunSummary& rs, const ShowOptions& opts) {
  ShowParts p;
  const auto& r = rs.run;
  p.title = fmt::format("run {} · suite {} · {}", r.id, r.suite, model::to_string(r.status));
  p.facts.push_back(
      fmt::format("started {}{}", format_utc(r.started_at),
                  r.ended_at > 0 ? fmt::format(", took {}", util::format_duration(r.ended_at - r.started_at)) : ""));
  p.facts.push_back(
      fmt::format("trials: {} ok, {} failed{}{}", rs.trials_ok, rs.trials_failed,
                  rs.trials_interrupted ? fmt::format(", {} interrupted", rs.trials_interrupted) : "",
                  rs.trials_lost ? fmt::format(", {} lost with their worker and run again", rs.trials_lost) : ""));
  if (!r.git_commit.empty())
    p.facts.push_back(
        fmt::format("commit {}{}", short_commit(r.git_commit), r.git_branch.empty() ? "" : " (" + r.git_branch + ")"));
  if (!r.tags.empty()) p.facts.push_back("tags " + util::join(r.tags, ", "));
  p.facts.push_back(fmt::format("seed {}", r.seed));
  p.facts.push_back("host " + r.host);

  const bool any_steady = std::any_of(rs.configs.begin(), rs.configs.end(),
                                      [](const analysis::ConfigSummary& c) { return !c.steady_classes.empty(); });
  std::vector<std::string> head = {"workload", "configuration", "metric", "n", "median", "95% CI", "CV", "first step"};
  std::vector<TextTable::Align> align = {TextTable::Align::Left,  TextTable::Align::Left,  TextTable::Align::Left,
                                         TextTable::Align::Right, TextTable::Align::Right, TextTable::Align::Right,
                                         TextTable::Align::Right, TextTable::Align::Right};
  if (any_steady) {
    head.push_back("steady state");
    align.push_back(TextTable::Align::Left);
  }
  p.table.columns(head, align);
  bool first_group = true;
  for (const auto& c : rs.configs) {
    std::string first_step = "-";
    if (const auto* fs = c.find(model::harness_metric::first_step_ms)) first_step = format_with_unit(fs->median, "ms");
    const std::string steady = any_steady ? analysis_steady(c, rs) : "";
    bool first_row = true;
    for (const auto& m : c.metrics) {
      if (!shown_in_table(m, opts)) continue;
      if (first_row && !first_group) p.table.separator();
      std::string ci = fmt::format("[{}, {}]", format_value(m.ci_low), format_value(m.ci_high));
      if (m.n > 1 && m.ci_coverage < 0.95) {
        ci += "*";
        p.any_small_n = true;
        p.small_coverage = std::min(p.small_coverage, m.ci_coverage);
      }
      if (m.n < 2) ci = "-";
      std::vector<std::string> row = {first_row ? c.workload : "",
                                      first_row ? (c.label.empty() ? "-" : c.label) : "",
                                      m.info.name,
                                      std::to_string(m.n),
                                      format_with_unit(m.median, m.info.unit),
                                      ci,
                                      m.n < 2 ? "-" : format_percent(m.cv),
                                      first_row ? first_step : ""};
      if (any_steady) row.push_back(first_row ? steady : "");
      p.table.row(std::move(row));
      first_row = false;
      first_group = false;
    }
    if (first_row) {  // no metric at all: every trial failed
      if (!first_group) p.table.separator();
      std::vector<std::string> row = {
          c.workload, c.label.empty() ? "-" : c.label, "(no successful trial)", "0", "-", "-", "-", "-"};
      if (any_steady) row.push_back("-");
      p.table.row(std::move(row));
      first_group = false;
    }
    // Facts once per configuration, as settings, not measurements.
    if (auto f = facts_text(c); !f.empty() && (opts.metrics.empty() || opts.all_metrics)) {
      std::vector<std::string> row = {"", "", "facts", "", f, "", "", ""};
      if (any_steady) row.push_back("");
      p.table.row(std::move(row));
    }
    const std::string where = c.label.empty() ? c.workload : c.workload + " " + c.label;
    for (const auto& f : c.failures) p.failures.push_back(fmt::format("{}: {}", where, f));
    for (const auto& n : c.notes) p.notes.push_back(fmt::format("{}: {}", where, n));
  }
  for (const auto& d : rs.slow_devices) p.notes.push_back(d.text());
  for (const auto& t : rs.trials)
    if (!t.notes.empty()) p.notes.push_back(fmt::format("trial {} (seq {}): {}", t.id, t.seq + 1, t.notes));
  return p;
}

class TableReporter final : public RunReporter {
 public:
  std::string show(const analysis::RunSummary& rs, const ShowOptions& opts) const override {
    auto p = build(rs, opts);
    std::string out = p.title + "\n" + util::join(p.facts, " · ") + "\n\n" + p.table.render();
    if (p.any_small_n)
      out += fmt::format(
          "\n* fewer than 6 trials: the interval is [min, max], which holds the median with {:.1f}% "
          "confidence; add repeats for a 95% interval\n",
          p.small_coverage * 100);
    if (!p.failures.empty()) out += "\nfailed trials:\n  " + util::join(p.failures, "\n  ") + "\n";
    if (!p.notes.empty()) out += "\nnotes:\n  " + util::join(p.notes, "\n  ") + "\n";
    return out;
  }

  std::string runs(const std::vector<store::RunListRow>& rows) const override {
    if (rows.empty()) return "no runs yet: `perfgate run SUITE` records one\n";
    TextTable t;
    t.columns({"id", "suite", "started", "took", "status", "ok", "failed", "tags", "commit"},
              {TextTable::Align::Right, TextTable::Align::Left, TextTable::Align::Left, TextTable::Align::Right,
               TextTable::Align::Left, TextTable::Align::Right, TextTable::Align::Right, TextTable::Align::Left,
               TextTable::Align::Left});
    for (const auto& r : rows)
      t.row({std::to_string(r.run.id), r.run.suite, format_utc(r.run.started_at),
             r.run.ended_at > 0 ? util::format_duration(r.run.ended_at - r.run.started_at) : "-",
             std::string(model::to_string(r.run.status)), std::to_string(r.trials_ok), std::to_string(r.trials_failed),
             util::join(r.run.tags, ","), short_commit(r.run.git_commit)});
    return t.render();
  }

  friend class MarkdownReporter;
};

class MarkdownReporter final : public RunReporter {
 public:
  std::string show(const analysis::RunSummary& rs, const ShowOptions& opts) const override {
    auto p = build(rs, opts);
    std::string out = "### perfgate " + markdown_escape(p.title) + "\n\n" +
                      markdown_escape(util::join(p.facts, " · ")) + "\n\n" + p.table.render_markdown();
    if (p.any_small_n)
      out += fmt::format(
          "\n\\* fewer than 6 trials: the interval is [min, max], which holds the median with {:.1f}% "
          "confidence.\n",
          p.small_coverage * 100);
    if (!p.failures.empty()) {
      out += "\n**Failed trials**\n\n";
      for (const auto& f : p.failures) out += "- " + markdown_escape(f) + "\n";
    }
    if (!p.notes.empty()) {
      out += "\n**Notes**\n\n";
      for (const auto& n : p.notes) out += "- " + markdown_escape(n) + "\n";
    }
    if (!opts.dashboard_url.empty()) {
      auto base = dashboard_index_url(opts.dashboard_url);
      out += fmt::format("\nDashboard: [run {}]({}{})", rs.run.id, base, run_anchor(rs.run.id));
      if (rs.configs.size() > 1) out += fmt::format(" · [sweep]({}#/sweep/{})", base, rs.run.id);
      if (rs.run.kind == model::RunKind::Soak) out += fmt::format(" · [soak]({}#/soak/{})", base, rs.run.id);
      out += "\n";
    }
    return out;
  }

  std::string runs(const std::vector<store::RunListRow>& rows) const override {
    TextTable t;
    t.columns({"id", "suite", "started", "status", "ok", "failed", "tags", "commit"},
              {TextTable::Align::Right, TextTable::Align::Left, TextTable::Align::Left, TextTable::Align::Left,
               TextTable::Align::Right, TextTable::Align::Right, TextTable::Align::Left, TextTable::Align::Left});
    for (const auto& r : rows)
      t.row({std::to_string(r.run.id), r.run.suite, format_utc(r.run.started_at),
             std::string(model::to_string(r.run.status)), std::to_string(r.trials_ok), std::to_string(r.trials_failed),
             util::join(r.run.tags, ","), short_commit(r.run.git_commit)});
    return t.render_markdown();
  }
};

}  // namespace

std::unique_ptr<RunReporter> make_table_reporter() { return std::make_unique<TableReporter>(); }
std::unique_ptr<RunReporter> make_markdown_reporter() { return std::make_unique<MarkdownReporter>(); }

}  // namespace perfgate::report
