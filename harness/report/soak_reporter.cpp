#include "harness/report/soak_reporter.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/analysis/run_summary.hpp"
#include "harness/report/table.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/units.hpp"

namespace perfgate::report {

namespace {

std::string drift_cell(const analysis::MetricTrend& m) {
  if (m.windows < 3) return "-";
  if (m.memory) return fmt::format("{:+.1f} MB/h", m.slope_per_h);
  return fmt::format("{:+.2f} %/h", m.drift_pct_per_h);
}

TextTable metric_table(const analysis::TrialSoak& t) {
  TextTable tab;
  using A = TextTable::Align;
  tab.columns({"metric", "samples", "windows", "first", "last", "drift", "trend p", "steps", "stalls", "p99/p50 (max)"},
              {A::Left, A::Right, A::Right, A::Right, A::Right, A::Right, A::Right, A::Right, A::Right, A::Right});
  for (const auto& m : t.metrics) {
    if (m.metric == "loss") continue;  // only its NaNs matter; they are a finding
    tab.row({m.metric, std::to_string(m.samples), std::to_string(m.windows), format_with_unit(m.first_window, m.unit),
             format_with_unit(m.last_window, m.unit), drift_cell(m),
             m.windows >= 3 ? fmt::format("{:.2g}", m.trend_p) : "-", std::to_string(m.steps.size()),
             m.host_stalls > 0 ? fmt::format("{} (+{} host)", m.stalls, m.host_stalls) : std::to_string(m.stalls),
             m.jitter_median > 0 ? fmt::format("{:.2f} ({:.2f})", m.jitter_median, m.jitter_max) : "-"});
  }
  return tab;
}

std::string trial_head(const analysis::TrialSoak& t) {
  return fmt::format("trial {} · {}{} · {} · ran {} · {} steps", t.trial_id, t.workload,
                     t.label.empty() ? "" : " " + t.label, t.status, util::format_hms(t.wall_s), t.steps);
}

}  // namespace

std::string soak_table(const analysis::SoakReport& r) {
  std::string out = fmt::format("soak run {} · suite {} · {} · window {:.0f} s\n", r.run.id, r.run.suite,
                                model::to_string(r.run.status), r.options.window_s);
  int findings = 0;
  for (const auto& t : r.trials) {
    out += "\n" + trial_head(t) + "\n";
    if (t.status != "ok" && !t.error.empty()) out += "  " + util::sanitize_utf8(analysis::brief_error(t.error)) + "\n";
    if (!t.metrics.empty()) out += metric_table(t).render();
    if (t.findings.empty()) out += "  no findings\n";
    for (const auto& f : t.findings) {
      out += fmt::format("  finding: {}: {}\n", f.kind, f.summary);
      ++findings;
    }
    for (const auto& f : t.host_events)
      out += fmt::format("  host event (the machine, not the workload): {}: {}\n", f.kind, f.summary);
  }
  out += fmt::format("\n{} finding(s) in {} trial(s)\n", findings, r.trials.size());
  return out;
}

std::string soak_markdown(const analysis::SoakReport& r) {
  int findings = 0;
  for (const auto& t : r.trials) findings += static_cast<int>(t.findings.size());
  std::string out =
      fmt::format("{} **perfgate soak** — run {} of `{}`: {} finding(s) in {} trial(s), window {:.0f} s\n",
                  findings == 0 ? "✅" : "⚠️", r.run.id, markdown_escape(r.run.suite), findings, r.trials.size(),
                  r.options.window_s);
  for (const auto& t : r.trials) {
    out += "\n### " + markdown_escape(trial_head(t)) + "\n\n";
    if (t.status != "ok" && !t.error.empty())
      out += markdown_escape(util::sanitize_utf8(analysis::brief_error(t.error))) + "\n\n";
    if (!t.metrics.empty()) out += metric_table(t).render_markdown() + "\n";
    for (const auto& f : t.findings) out += fmt::format("- **{}**: {}\n", f.kind, markdown_escape(f.summary));
    if (t.findings.empty()) out += "No findings.\n";
    for (const auto& f : t.host_events)
      out += fmt::format("- host event ({}): {}\n", f.kind, markdown_escape(f.summary));
  }
  return out;
}

std::string soak_json(const analysis::SoakReport& r) {
  using nlohmann::json;
  auto num = [](double v) -> json { return std::isfinite(v) ? json(v) : json(nullptr); };
  json j;
  j["run"] = {{"id", r.run.id}, {"suite", r.run.suite}, {"status", model::to_string(r.run.status)}};
  j["options"] = {{"window_s", r.options.window_s},
                  {"significance", r.options.significance},
                  {"drift_pct_per_h", r.options.drift_pct_per_h},
                  {"memory_mb_per_h", r.options.memory_mb_per_h},
                  {"staircase_pct", r.options.staircase_pct},
                  {"stall_factor", r.options.stall_factor},
                  {"seed", r.options.seed}};
  json trials = json::array();
  for (const auto& t : r.trials) {
    json metrics = json::array();
    for (const auto& m : t.metrics) {
      json steps = json::array();
      for (const auto& s : m.steps)
        steps.push_back({{"t_s", s.t_s},
                         {"before", num(s.before)},
                         {"after", num(s.after)},
                         {"change_pct", num(s.change_pct)},
                         {"p", s.p_value}});
      metrics.push_back({{"metric", m.metric},
                         {"unit", m.unit},
                         {"samples", m.samples},
                         {"windows", m.windows},
                         {"first_window", num(m.first_window)},
                         {"last_window", num(m.last_window)},
                         {"slope_per_h", num(m.slope_per_h)},
                         {"slope_low_per_h", num(m.slope_low_per_h)},
                         {"slope_high_per_h", num(m.slope_high_per_h)},
                         {"drift_pct_per_h", num(m.drift_pct_per_h)},
                         {"trend_p", num(m.trend_p)},
                         {"staircase", steps},
                         {"stalls", m.stalls},
                         {"worst_stall_ratio", num(m.worst_stall_ratio)},
                         {"host_stalls", m.host_stalls},
                         {"jitter_median", num(m.jitter_median)},
                         {"jitter_max", num(m.jitter_max)},
                         {"cv_median", num(m.cv_median)},
                         {"non_finite", m.non_finite}});
    }
    auto findings_json = [&](const std::vector<analysis::Finding>& list) {
      json out = json::array();
      for (const auto& f : list) {
        json ev = json::array();
        for (const auto& e : f.evidence) ev.push_back({{"t_s", num(e.t_s)}, {"value", num(e.value)}, {"note", e.note}});
        out.push_back({{"kind", f.kind},
                       {"metric", f.metric},
                       {"value", num(f.value)},
                       {"unit", f.unit},
                       {"summary", f.summary},
                       {"evidence", ev}});
      }
      return out;
    };
    trials.push_back({{"trial", t.trial_id},
                      {"workload", t.workload},
                      {"label", t.label},
                      {"status", t.status},
                      {"error", t.error},
                      {"wall_s", t.wall_s},
                      {"steps", t.steps},
                      {"metrics", metrics},
                      {"findings", findings_json(t.findings)},
                      {"host_events", findings_json(t.host_events)}});
  }
  j["trials"] = std::move(trials);
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string soak_progress_line(const std::string& label, double duration_s, double t_s, long long steps,
                               const std::string& primary, double window_value, double throughput,
                               double drift_pct_per_h, const std::vector<std::pair<std::string, double>>& sampled,
                               double soak_eta_s) {
  std::string line = fmt::format("[soak] {} {} / {} · soak ETA {} · {} steps", label, util::format_hms(t_s),
                                 util::format_hms(duration_s), util::format_hms(soak_eta_s), steps);
  if (!primary.empty() && std::isfinite(window_value))
    line += fmt::format(" · {} {}", primary, util::format_value(window_value));
  if (std::isfinite(throughput) && primary != "throughput")
    line += fmt::format(" · throughput {}", util::format_value(throughput));
  if (std::isfinite(drift_pct_per_h)) line += fmt::format(" · drift {:+.2f} %/h", drift_pct_per_h);
  for (const auto& [name, v] : sampled)
    if (name == "host.rss_mb" || name.ends_with("hbm_used_mb"))
      line += fmt::format(" · {} {}", name, util::format_value(v));
  return line;
}

}  // namespace perfgate::report
