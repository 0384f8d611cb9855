#include "harness/report/gate_reporter.hpp"

#include "harness/report/dashboard.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/report/table.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::report {
using model::Comparison;
using model::VerdictKind;

namespace {

std::string signed_percent(double f) {
  if (!std::isfinite(f)) return "-";
  return fmt::format("{:+.1f}%", f * 100);
}

std::string change_cell(const Comparison& c) {
  if (c.verdict == VerdictKind::Missing || (c.n_base == 0 || c.n_cand == 0)) return "-";
  return signed_percent(c.change_rel);
}

std::string interval_cell(const Comparison& c) {
  if (!c.tested) return "-";
  return fmt::format("[{}, {}]", signed_percent(c.change_low_rel), signed_percent(c.change_high_rel));
}

std::string p_cell(const Comparison& c) {
  if (!c.tested) return "-";
  auto f = [](double p) { return p < 1e-4 ? fmt::format("{:.0e}", p) : fmt::format("{:.4f}", p); };
  return f(c.p_adjusted);
}

std::string median_cell(double v, const Comparison& c, int n) {
  if (n == 0 || !std::isfinite(v)) return "-";
  return format_with_unit(v, c.metric.unit);
}

std::string runs_list(const std::vector<store::RunRecord>& runs) {
  std::vector<std::string> ids;
  for (const auto& r : runs) ids.push_back(std::to_string(r.id));
  return util::join(ids, ", ");
}

bool is_failure_test(const Comparison& c) { return c.metric.name == model::k_trials_failed_metric; }

// "±5%", or "±32 MB" when the policy's absolute floor set the threshold.
std::string threshold_cell(const Comparison& c) {
  if (c.threshold_floor > 0) return fmt::format("±{:g} {}", c.threshold_floor, c.metric.unit);
  return fmt::format("±{:.0f}%", c.threshold_rel * 100);
}

// How much an unchanged or undecided comparison rules out.
std::string resolution_text(const Comparison& c) {
  if (!c.tested || is_failure_test(c)) return "";
  if (c.underpowered) {
    std::string need = c.trials_for_resolution > 0 ? fmt::format("{} candidate trials would", c.trials_for_resolution)
                                                   : "no number of candidate trials would (pool more baseline runs)";
    return fmt::format("no change of any size could be flagged at {}/{} trials: {}", c.n_base, c.n_cand, need);
  }
  if (std::isfinite(c.detectable_rel) && c.threshold_floor > 0)
    return fmt::format("a change over {:.1f} {} would have been seen", c.detectable_rel * std::fabs(c.base_median),
                       c.metric.unit);
  if (std::isfinite(c.detectable_rel))
    return fmt::format("a change over {:.1f} % would have been seen", 100 * c.detectable_rel);
  return "";
}

// What a reader needs beyond the numbers: why it is inconclusive, failures, notes.
std::string note_cell(const Comparison& c) {
  std::vector<std::string> parts;
  if (c.verdict == VerdictKind::Inconclusive && !is_failure_test(c)) {
    if (c.extra_trials > 0)
      parts.push_back(fmt::format("~{} more candidate trial(s) would likely decide", c.extra_trials));
    else if (c.extra_trials < 0)
      parts.push_back("needs a larger baseline too (pool more runs)");
  }
  if ((c.verdict == VerdictKind::Unchanged || c.verdict == VerdictKind::Inconclusive) && !resolution_text(c).empty())
    parts.push_back(resolution_text(c));
  if (c.added_trials > 0) parts.push_back(fmt::format("{} trial(s) added", c.added_trials));
  if (c.failed_cand > 0 && c.verdict != VerdictKind::Failed && !is_failure_test(c))
    parts.push_back(fmt::format("{} candidate trial(s) failed", c.failed_cand));
  if (!c.note.empty()) parts.push_back(c.note);
  if (c.verdict == VerdictKind::Failed && !c.failures.empty()) {
    constexpr std::size_t k_shown = 5;
    std::vector<std::string> shown(c.failures.begin(), c.failures.begin() + std::min(k_shown, c.failures.size()));
    std::string more = c.failures.size() > k_shown ? fmt::format(" (and {} more)", c.failures.size() - k_shown) : "";
    parts.push_back("failed trials: " + util::join(shown, " | ") + more);
  }
  return util::join(parts, "; ");
}

std::string joint_lines(const GateReport& r, bool markdown) {
  std::string out;
  for (const auto& j : r.joint) {
    if (j.verdict == VerdictKind::Unchanged) continue;
    std::string line = fmt::format(
        "joint test of {} over {} configurations: {} (median change {}, {} beyond their thresholds the bad way, {} the "
        "good "
        "way; van Elteren p = {:.2g}{}, adjusted {:.2g})",
        j.metric, j.configs, model::to_string(j.verdict), signed_percent(j.change_median_rel), j.moved_bad,
        j.moved_good, j.p_van_elteren,
        std::isfinite(j.p_stouffer) ? fmt::format(", runs (Stouffer) p = {:.2g}", j.p_stouffer) : "", j.p_adjusted);
    out += (markdown ? "- " + markdown_escape(line) : line) + "\n";
  }
  return out;
}

std::string context_lines(const GateReport& r, bool markdown) {
  std::vector<std::string> lines;
  for (const auto& [id, why] : r.left_out_runs)
    lines.push_back(fmt::format("left out run {} of the baseline: {}", id, why));
  if (!r.history_runs.empty()) {
    std::vector<std::string> ids;
    for (long long id : r.history_runs) ids.push_back(std::to_string(id));
    lines.push_back(fmt::format("run-to-run spread also read from older run{} {}", ids.size() == 1 ? "" : "s",
                                util::join(ids, ", ")));
  }
  for (const auto& n : r.probe_notes) lines.push_back(n);
  std::string out;
  for (const auto& l : lines) out += (markdown ? "> " + markdown_escape(l) : "note: " + l) + "\n";
  return out;
}

const char* colour_of(VerdictKind v) {
  switch (v) {
    case VerdictKind::Regression:
    case VerdictKind::Failed:
      return "\x1b[31m";  // red
    case VerdictKind::Improvement:
      return "\x1b[32m";  // green
    case VerdictKind::Inconclusive:
    case VerdictKind::Missing:
      return "\x1b[33m";  // yellow
    case VerdictKind::Unchanged:
      break;
  }
  return "";
}

TextTable comparison_table(const GateReport& r, bool markdown) {
  TextTable t;
  using A = TextTable::Align;
  bool ratio = r.policy.bootstrap_resamples > 0;
  std::vector<std::string> head = {
      "verdict",  "workload",  "configuration", "metric",
      "baseline", "candidate", "change",        fmt::format("{:.0f}% CI", r.policy.confidence * 100)};
  std::vector<A> align = {A::Left, A::Left, A::Left, A::Left, A::Right, A::Right, A::Right, A::Right};
  if (ratio) {
    head.push_back("median ratio (bootstrap)");
    align.push_back(A::Right);
  }
  for (const char* h : {"threshold", "p (adj)", "n base/cand", "note"}) {
    head.push_back(h);
    align.push_back(std::string_view(h) == "note" ? A::Left : A::Right);
  }
  t.columns(head, align);
  for (const auto& c : r.comparisons) {
    std::string verdict(model::to_string(c.verdict));
    if (markdown && (c.verdict == VerdictKind::Regression || c.verdict == VerdictKind::Failed))
      verdict = "**" + verdict + "**";
    std::vector<std::string> row = {verdict,
                                    c.workload,
                                    c.label.empty() ? "-" : c.label,
                                    c.metric.name,
                                    median_cell(c.base_median, c, c.n_base),
                                    median_cell(c.cand_median, c, c.n_cand),
                                    change_cell(c),
                                    interval_cell(c)};
    if (ratio)
      row.push_back(std::isfinite(c.ratio) ? fmt::format("{:.3f} [{:.3f}, {:.3f}]", c.ratio, c.ratio_low, c.ratio_high)
                                           : "-");
    for (auto cell : {threshold_cell(c), p_cell(c), fmt::format("{}/{}", c.n_base, c.n_cand), note_cell(c)})
      row.push_back(std::move(cell));
    t.row(std::move(row));
  }
  return t;
}

std::string counts_text(const analysis::VerdictCounts& n) {
  std::vector<std::string> parts;
  auto add = [&](int k, const char* one, const char* many) {
    if (k > 0) parts.push_back(fmt::format("{} {}", k, k == 1 ? one : many));
  };
  add(n.regression, "regression", "regressions");
  add(n.failed, "failed", "failed");
  add(n.missing, "missing", "missing");
  add(n.inconclusive, "inconclusive", "inconclusive");
  add(n.improvement, "improvement", "improvements");
  add(n.unchanged, "unchanged", "unchanged");
  if (parts.empty()) return "no comparisons";
  return util::join(parts, ", ");
}

}  // namespace

std::string gate_outcome(const analysis::VerdictCounts& n, int underpowered, model::Underpowered action) {
  if (n.regression > 0 || n.failed > 0) return "regression";
  if (underpowered > 0 && action == model::Underpowered::Fail) return "underpowered";
  if (n.inconclusive > 0 || n.missing > 0) return "inconclusive";
  return "pass";
}

std::string gate_headline(const GateReport& r) {
  std::string word = r.outcome == "regression"     ? "REGRESSION"
                     : r.outcome == "underpowered" ? "UNDERPOWERED"
                     : r.outcome == "inconclusive" ? "INCONCLUSIVE"
                     : r.outcome == "error"        ? "ERROR"
                                                   : "PASS";
  std::string added =
      r.adaptive ? fmt::format("; adaptive: {} trial(s) added in {} round(s)", r.trials_added, r.rounds) : "";
  std::string resolution;
  if (r.underpowered > 0) {
    resolution = fmt::format("; {} comparison(s) could not have flagged a lone regression at their trial counts",
                             r.underpowered);
  } else if (r.outcome == "pass" || r.outcome == "inconclusive") {
    // The largest change any gated comparison could have missed, in percent:
    // those judged against an absolute floor say theirs in their own rows.
    double worst = 0;
    for (const auto& c : r.comparisons)
      if (c.tested && !is_failure_test(c) && c.threshold_floor == 0 && std::isfinite(c.detectable_rel))
        worst = std::max(worst, c.detectable_rel);
    if (worst > 0) resolution = fmt::format("; no change over {:.1f} % could have been missed", 100 * worst);
  }
  return fmt::format("{}: {} (run {} of {} against run{} {}{}{})", word, counts_text(r.counts), r.candidate.id,
                     r.candidate.suite, r.baseline_runs.size() == 1 ? "" : "s", runs_list(r.baseline_runs), added,
                     resolution);
}

std::string gate_table(const GateReport& r, bool colour) {
  std::string out = fmt::format("perfgate {}: run {} ({}, commit {}) against {} (run{} {})\n", r.command,
                                r.candidate.id, r.candidate.suite, r.candidate.git_commit.substr(0, 10),
                                r.baseline_selector.empty() ? "baseline" : r.baseline_selector,
                                r.baseline_runs.size() == 1 ? "" : "s", runs_list(r.baseline_runs));
  out += fmt::format("policy: {} (FDR {}, {}, thresholds {} / {} / {} for throughput / latency / memory)\n",
                     r.policy.path.empty() ? "built-in" : r.policy.path, r.policy.fdr,
                     model::to_string(r.policy.correction), format_percent(r.policy.throughput_threshold),
                     format_percent(r.policy.latency_threshold), format_percent(r.policy.memory_threshold));
  for (const auto& w : r.warnings) out += "warning: " + w + "\n";
  out += "\n";
  std::string table = comparison_table(r, false).render();
  if (colour) {
    // Colour whole rows by their verdict (the first column), after layout so widths stay right.
    std::string coloured;
    for (auto line : util::split(table, '\n')) {
      std::string l(line);
      auto sp = l.find(' ');
      auto v = model::verdict_from_string(l.substr(0, sp));
      const char* c = v ? colour_of(*v) : "";
      coloured += *c ? std::string(c) + l + "\x1b[0m\n" : l + "\n";
    }
    while (coloured.size() > 1 && coloured.ends_with("\n\n")) coloured.pop_back();
    table = coloured;
  }
  out += table;
  std::string extra = joint_lines(r, false) + context_lines(r, false);
  if (!extra.empty()) out += "\n" + extra;
  std::string head = gate_headline(r);
  if (colour) {
    const char* c = r.outcome == "regression" ? "\x1b[1;31m" : r.outcome == "pass" ? "\x1b[1;32m" : "\x1b[1;33m";
    head = std::string(c) + head + "\x1b[0m";
  }
  return out + "\n" + head + "\n";
}

std::string gate_markdown(const GateReport& r) {
  std::string icon = r.outcome == "regression" ? "❌" : r.outcome == "pass" ? "✅" : "⚠️";
  std::string out = fmt::format("{} **perfgate {}** — {}\n\n", icon, r.command, markdown_escape(gate_headline(r)));
  std::string commit =
      r.candidate.git_commit.empty() ? "unknown" : "`" + markdown_escape(r.candidate.git_commit.substr(0, 12)) + "`";
  out += fmt::format("Candidate: run {} of `{}`, commit {}{}. Baseline: `{}` (run{} {}). Policy: {}, FDR {}.\n\n",
                     r.candidate.id, markdown_escape(r.candidate.suite), commit,
                     r.candidate.git_branch.empty() ? "" : " (" + markdown_escape(r.candidate.git_branch) + ")",
                     markdown_escape(r.baseline_selector), r.baseline_runs.size() == 1 ? "" : "s",
                     runs_list(r.baseline_runs), markdown_escape(r.policy.path.empty() ? "built-in" : r.policy.path),
                     r.policy.fdr);
  for (const auto& w : r.warnings) out += "> warning: " + markdown_escape(w) + "\n";
  if (!r.warnings.empty()) out += "\n";
  out += comparison_table(r, true).render_markdown();
  if (std::string j = joint_lines(r, true); !j.empty()) out += "\n" + j;
  if (std::string ctx = context_lines(r, true); !ctx.empty()) out += "\n" + ctx;
  if (!r.dashboard_url.empty()) {
    auto base = dashboard_index_url(r.dashboard_url);
    out += fmt::format("\nDashboard: [run {}]({}{})", r.candidate.id, base, run_anchor(r.candidate.id));
    // Trends of what needs a look; unchanged metrics are one click away on the run's page.
    for (const auto& c : r.comparisons) {
      if (c.verdict == VerdictKind::Unchanged) continue;
      auto label = c.workload + (c.label.empty() ? "" : " " + c.label);
      out += fmt::format(" · [{} {} trend]({}{})", markdown_escape(label), markdown_escape(c.metric.name), base,
                         trend_anchor(r.candidate.suite, c.metric.name, label));
    }
    out += "\n";
  }
  return out;
}

std::string xml_escape(std::string_view s) {
  std::string out;
  std::string clean = util::sanitize_utf8(s);
  for (unsigned char ch : clean) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 allows no control characters but tab, newline and carriage return.
        if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')
          out += "?";
        else
          out += static_cast<char>(ch);
    }
  }
  return out;
}

std::string gate_junit(const GateReport& r) {
  int failures = r.counts.regression + r.counts.failed;
  int skipped = r.counts.inconclusive + r.counts.missing;
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"perfgate\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n",
                     r.comparisons.size(), failures, skipped);
  out += fmt::format("  <testsuite name=\"perfgate {} {}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\">\n", r.command,
                     xml_escape(r.candidate.suite), r.comparisons.size(), failures, skipped);
  for (const auto& c : r.comparisons) {
    std::string classname = c.workload + (c.label.empty() ? "" : " " + c.label);
    std::string detail =
        fmt::format("{}: {} -> {}, change {} (CI {}), threshold {}, p adj {}, n {}/{}{}", c.metric.name,
                    median_cell(c.base_median, c, c.n_base), median_cell(c.cand_median, c, c.n_cand), change_cell(c),
                    interval_cell(c), threshold_cell(c), p_cell(c), c.n_base, c.n_cand,
                    note_cell(c).empty() ? "" : "; " + note_cell(c));
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\">", xml_escape(classname), xml_escape(c.metric.name));
    switch (c.verdict) {
      case VerdictKind::Regression:
      case VerdictKind::Failed:
        out += fmt::format("\n      <failure message=\"{}\" type=\"{}\">{}</failure>\n    ",
                           xml_escape(fmt::format("{} {}", model::to_string(c.verdict), change_cell(c))),
                           model::to_string(c.verdict), xml_escape(detail));
        break;
      case VerdictKind::Inconclusive:
      case VerdictKind::Missing:
        out += fmt::format("\n      <skipped message=\"{}\"/>\n    ",
                           xml_escape(fmt::format("{}: {}", model::to_string(c.verdict), detail)));
        break;
      default:
        out += fmt::format("\n      <system-out>{}</system-out>\n    ",
                           xml_escape(fmt::format("{}: {}", model::to_string(c.verdict), detail)));
    }
    out += "</testcase>\n";
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

std::string gate_json(const GateReport& r) {
  using nlohmann::json;
  auto num = [](double v) -> json { return std::isfinite(v) ? json(v) : json(nullptr); };
  json j;
  j["command"] = r.command;
  j["outcome"] = r.outcome;
  j["headline"] = gate_headline(r);
  if (r.gate_id > 0) j["gate_id"] = r.gate_id;
  j["candidate"] = {{"run", r.candidate.id},
                    {"suite", r.candidate.suite},
                    {"commit", r.candidate.git_commit},
                    {"branch", r.candidate.git_branch}};
  json runs = json::array();
  for (const auto& b : r.baseline_runs) runs.push_back(b.id);
  j["baseline"] = {{"selector", r.baseline_selector}, {"runs", runs}};
  j["policy"] = {{"path", r.policy.path},
                 {"fdr", r.policy.fdr},
                 {"correction", model::to_string(r.policy.correction)},
                 {"min_trials", r.policy.min_trials},
                 {"baseline_outlier_mads", r.policy.baseline_outlier_mads},
                 {"bootstrap_resamples", r.policy.bootstrap_resamples},
                 {"bootstrap_seed", r.policy.bootstrap_seed},
                 {"confidence", r.policy.confidence}};
  j["counts"] = {{"regression", r.counts.regression}, {"improvement", r.counts.improvement},
                 {"unchanged", r.counts.unchanged},   {"inconclusive", r.counts.inconclusive},
                 {"missing", r.counts.missing},       {"failed", r.counts.failed}};
  j["adaptive"] = {{"enabled", r.adaptive}, {"rounds", r.rounds}, {"trials_added", r.trials_added}};
  j["warnings"] = r.warnings;
  j["family"] = r.family;
  j["alpha_lone"] = num(r.alpha_lone);
  j["underpowered"] = r.underpowered;
  j["policy"]["underpowered"] = model::to_string(r.policy.underpowered);
  j["policy"]["failures"] = model::to_string(r.policy.failures);
  j["policy"]["history_runs"] = r.policy.history_runs;
  json left = json::array();
  for (const auto& [id, why] : r.left_out_runs) left.push_back({{"run", id}, {"reason", why}});
  j["baseline"]["left_out"] = std::move(left);
  j["baseline"]["history_runs"] = r.history_runs;
  j["host_probe"] = {
      {"candidate_ms", num(r.probe_cand_ms)}, {"baseline_ms", num(r.probe_base_ms)}, {"notes", r.probe_notes}};
  json joints = json::array();
  for (const auto& jt : r.joint)
    joints.push_back({{"metric", jt.metric},
                      {"verdict", model::to_string(jt.verdict)},
                      {"configs", jt.configs},
                      {"moved_bad", jt.moved_bad},
                      {"moved_good", jt.moved_good},
                      {"change_median", num(jt.change_median_rel)},
                      {"threshold", num(jt.threshold_rel)},
                      {"p_van_elteren", num(jt.p_van_elteren)},
                      {"p_stouffer", num(jt.p_stouffer)},
                      {"p", num(jt.p_value)},
                      {"p_adjusted", num(jt.p_adjusted)}});
  j["joint"] = std::move(joints);
  json cs = json::array();
  for (const auto& c : r.comparisons) {
    cs.push_back(
        {{"workload", c.workload},
         {"params", json::parse(c.params_json, nullptr, false)},
         {"label", c.label},
         {"node_class", c.node_class},
         {"metric", c.metric.name},
         {"unit", c.metric.unit},
         {"better", model::to_string(c.metric.better)},
         {"verdict", model::to_string(c.verdict)},
         {"threshold", c.threshold_rel},
         {"threshold_floor", c.threshold_floor > 0 ? json(c.threshold_floor) : json(nullptr)},
         {"n_base", c.n_base},
         {"n_cand", c.n_cand},
         {"failed_base", c.failed_base},
         {"failed_cand", c.failed_cand},
         {"base_median", num(c.base_median)},
         {"cand_median", num(c.cand_median)},
         {"change", num(c.change_rel)},
         {"change_low", c.tested ? num(c.change_low_rel) : json(nullptr)},
         {"change_high", c.tested ? num(c.change_high_rel) : json(nullptr)},
         {"interval_coverage", c.tested ? num(c.interval_coverage) : json(nullptr)},
         {"ratio", num(c.ratio)},
         {"ratio_low", num(c.ratio_low)},
         {"ratio_high", num(c.ratio_high)},
         {"u", c.tested ? num(c.u) : json(nullptr)},
         {"p", c.tested ? num(c.p_value) : json(nullptr)},
         {"p_adjusted", c.tested ? num(c.p_adjusted) : json(nullptr)},
         {"exact", c.exact},
         {"extra_trials", c.extra_trials},
         {"added_trials", c.added_trials},
         {"base_left_out", c.base_left_out},
         {"p_trials", c.tested ? num(c.p_trials) : json(nullptr)},
         {"p_runs", num(c.p_runs)},
         {"run_spread_known", c.run_spread_known},
         {"run_sd", num(c.run_sd_rel)},
         {"base_runs", c.base_runs},
         {"history_runs", c.history_runs},
         {"detectable",
          c.tested && !is_failure_test(c) && std::isfinite(c.detectable_rel) ? json(c.detectable_rel) : json(nullptr)},
         {"underpowered", c.underpowered},
         {"trials_for_resolution", c.trials_for_resolution},
         {"joint", c.joint},
         {"failures", c.failures},
         {"resolution", resolution_text(c)},
         {"note", c.note}});
  }
  j["comparisons"] = std::move(cs);
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace perfgate::report
