#include "harness/report/sweep_reporter.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/report/table.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::report {
using analysis::SweepEntry;
using analysis::SweepResult;

namespace {

std::string interval(const SweepEntry& e) {
  if (e.n < 2) return "-";
  return fmt::format("[{}, {}]{}", format_value(e.ci_low), format_value(e.ci_high), e.min_max ? "*" : "");
}

// What the best's lead over this one says.
std::string against_best(const SweepEntry& e, const SweepResult& r) {
  if (e.rank == 1) return "best";
  std::string lead = fmt::format("best leads by {:+.1f}%", 100 * e.advantage_rel);
  if (e.beaten) return fmt::format("{}: better (p adj {:.2g})", lead, e.p_adjusted);
  std::string why =
      e.advantage_rel <= r.threshold_rel ? fmt::format("within the {:.0f} % threshold", 100 * r.threshold_rel)
      : e.underpowered ? fmt::format("{} and {} trials cannot be told apart (the smallest p, Holm-adjusted, is {:.2g})",
                                     r.entries.front().n, e.n, e.min_p_adjusted)
                       : fmt::format("not significant (p adj {:.2g})", e.p_adjusted);
  std::string need =
      e.repeats_to_separate > 0 ? fmt::format("; ~{} repeats each would separate them", e.repeats_to_separate) : "";
  return fmt::format("tied: {}, {}{}", lead, why, need);
}

std::string headline(const SweepResult& r) {
  const auto& best = r.entries.front();
  std::string direction = r.better == model::Better::Higher ? "highest" : "lowest";
  if (r.clear_winner)
    return fmt::format("best: {} ({} {} {}), better than every other configuration beyond the {:.0f} % threshold",
                       best.label, direction, r.metric, format_with_unit(best.median, r.unit), 100 * r.threshold_rel);
  // Name up to two ties; a long list would bury the sentence.
  std::string tied = r.tied_with_best.size() <= 2 ? util::join(r.tied_with_best, " and ")
                                                  : fmt::format("{}, {} and {} more", r.tied_with_best[0],
                                                                r.tied_with_best[1], r.tied_with_best.size() - 2);
  const bool resolution = std::all_of(r.entries.begin() + 1, r.entries.end(),
                                      [](const SweepEntry& e) { return e.beaten || e.underpowered; });
  return fmt::format(
      "no clear winner: {} has the {} {} ({}), tied with {}{}", best.label, direction, r.metric,
      format_with_unit(best.median, r.unit), tied,
      resolution ? fmt::format(" (at {} trials each no lead can be significant; add repeats)", best.n) : "");
}

TextTable ranked_table(const SweepResult& r) {
  TextTable t;
  using A = TextTable::Align;
  t.columns({"rank", "configuration", "n", r.metric, "95% CI", "against the best"},
            {A::Right, A::Left, A::Right, A::Right, A::Right, A::Left});
  for (const auto& e : r.entries)
    t.row({std::to_string(e.rank), e.label, std::to_string(e.n), format_with_unit(e.median, r.unit), interval(e),
           against_best(e, r)});
  return t;
}

TextTable axes_table(const SweepResult& r) {
  TextTable t;
  std::vector<std::string> head = {r.axes[0] + " \\ " + r.axes[1]};
  std::vector<TextTable::Align> align = {TextTable::Align::Left};
  for (const auto& c : r.columns) {
    head.push_back(c);
    align.push_back(TextTable::Align::Right);
  }
  t.columns(head, align);
  for (const auto& row : r.rows) {
    std::vector<std::string> cells = {row};
    for (const auto& col : r.columns) {
      std::string cell = "-";
      for (const auto& c : r.cells)
        if (c.row == row && c.column == col && c.entry >= 0) {
          const auto& e = r.entries[static_cast<std::size_t>(c.entry)];
          cell = format_value(e.median) + (e.rank == 1 ? " (best)" : "");
        }
      cells.push_back(cell);
    }
    t.row(std::move(cells));
  }
  return t;
}

std::string footnotes(const SweepResult& r) {
  std::string out;
  if (std::any_of(r.entries.begin(), r.entries.end(), [](const SweepEntry& e) { return e.min_max && e.n > 1; }))
    out += "* fewer than 6 trials: the interval is [min, max], not 95 %\n";
  out += fmt::format(
      "method: the best against each other configuration, two-sided Mann-Whitney, Holm over {} comparisons "
      "at alpha 0.05, and a lead beyond the {:.0f} % threshold (docs/statistics.md, \"Sweeps\")\n",
      r.entries.size() - 1, 100 * r.threshold_rel);
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string sweep_table(const SweepResult& r) {
  std::string out = fmt::format("sweep of {} ({}, {} is better)\n\n", r.metric, r.unit.empty() ? "no unit" : r.unit,
                                model::to_string(r.better)) +
                    ranked_table(r).render();
  if (!r.axes.empty()) out += "\n" + axes_table(r).render();
  out += "\n" + footnotes(r) + "\n" + headline(r) + "\n";
  return out;
}

std::string sweep_markdown(const SweepResult& r) {
  std::string out =
      fmt::format("**perfgate sweep** — {}\n\n", markdown_escape(headline(r))) + ranked_table(r).render_markdown();
  if (!r.axes.empty()) out += "\n" + axes_table(r).render_markdown();
  out += "\n" + markdown_escape(footnotes(r));
  return out;
}

std::string sweep_short(const SweepResult& r) {
  std::string out = "sweep: " + headline(r) + "\n";
  for (std::size_t i = 1; i < r.entries.size() && i <= 3; ++i)
    out += fmt::format("  #{} {}: {} ({})\n", r.entries[i].rank, r.entries[i].label,
                       format_with_unit(r.entries[i].median, r.unit), against_best(r.entries[i], r));
  out += "  (perfgate sweep RUN ranks all of them, with intervals and --axes)\n";
  return out;
}

std::string sweep_json(const SweepResult& r) {
  using nlohmann::json;
  auto num = [](double v) -> json { return std::isfinite(v) ? json(v) : json(nullptr); };
  json entries = json::array();
  for (const auto& e : r.entries)
    entries.push_back({{"rank", e.rank},
                       {"configuration", e.label},
                       {"workload", e.config->workload},
                       {"params", json::parse(e.config->params_json, nullptr, false)},
                       {"n", e.n},
                       {"median", num(e.median)},
                       {"ci_low", num(e.ci_low)},
                       {"ci_high", num(e.ci_high)},
                       {"ci_coverage", num(e.ci_coverage)},
                       {"min_max", e.min_max},
                       {"advantage_of_best", e.rank == 1 ? json(nullptr) : num(e.advantage_rel)},
                       {"p", e.rank == 1 ? json(nullptr) : num(e.p_value)},
                       {"p_adjusted", e.rank == 1 ? json(nullptr) : num(e.p_adjusted)},
                       {"beaten_by_best", e.beaten},
                       {"repeats_to_separate", e.repeats_to_separate},
                       {"underpowered", e.underpowered}});
  json cells = json::array();
  for (const auto& c : r.cells)
    cells.push_back(
        {{"row", c.row},
         {"column", c.column},
         {"configurations", c.configurations},
         {"rank", c.entry >= 0 ? json(r.entries[static_cast<std::size_t>(c.entry)].rank) : json(nullptr)},
         {"median", c.entry >= 0 ? num(r.entries[static_cast<std::size_t>(c.entry)].median) : json(nullptr)}});
  json j = {{"metric", r.metric},
            {"unit", r.unit},
            {"better", model::to_string(r.better)},
            {"threshold", r.threshold_rel},
            {"clear_winner", r.clear_winner},
            {"best", r.entries.front().label},
            {"tied_with_best", r.tied_with_best},
            {"headline", headline(r)},
            {"entries", entries},
            {"axes", r.axes},
            {"cells", cells},
            {"notes", r.notes}};
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string sweep_csv(const SweepResult& r) {
  // One row per configuration; parameters as columns, so it reads straight into pandas.
  std::vector<std::string> params;
  for (const auto& e : r.entries)
    for (const auto& [k, v] : e.config->params)
      if (std::find(params.begin(), params.end(), k) == params.end()) params.push_back(k);
  std::string out = "rank,workload";
  for (const auto& p : params) out += "," + csv_field(p);
  out += ",n,median,ci_low,ci_high,min_max,advantage_of_best,p_adjusted,beaten_by_best,metric,unit\n";
  for (const auto& e : r.entries) {
    out += fmt::format("{},{}", e.rank, csv_field(e.config->workload));
    for (const auto& p : params) {
      auto it = e.config->params.find(p);
      out += "," + csv_field(it == e.config->params.end() ? "" : it->second.text);
    }
    out += fmt::format(
        ",{},{},{},{},{},{},{},{},{},{}\n", e.n, util::format_number(e.median), util::format_number(e.ci_low),
        util::format_number(e.ci_high), e.min_max ? 1 : 0, e.rank == 1 ? "" : util::format_number(e.advantage_rel),
        e.rank == 1 ? "" : util::format_number(e.p_adjusted), e.beaten ? 1 : 0, csv_field(r.metric), csv_field(r.unit));
  }
  return out;
}

}  // namespace perfgate::report
