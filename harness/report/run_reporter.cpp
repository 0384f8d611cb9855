#include "harness/report/run_reporter.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "harness/model/trial.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::report {

Expected<std::unique_ptr<RunReporter>> make_run_reporter(const std::string& format) {
  if (format == "table") return make_table_reporter();
  if (format == "markdown" || format == "md") return make_markdown_reporter();
  if (format == "json") return make_json_reporter();
  if (format == "csv") return make_csv_reporter();
  const std::vector<std::string> known = {"table", "markdown", "json", "csv"};
  return Error::input(fmt::format("unknown format '{}'{}; use table, markdown, json or csv", format,
                                  util::did_you_mean(format, known)));
}

bool metric_selected(const std::string& name, const ShowOptions& opts) {
  return opts.metrics.empty() || std::any_of(opts.metrics.begin(), opts.metrics.end(),
                                             [&](const std::string& p) { return model::glob_match(p, name); });
}

bool shown_in_table(const analysis::MetricRow& m, const ShowOptions& opts) {
  if (m.fact) return false;  // facts are shown once per configuration, as key=value
  if (!opts.metrics.empty()) return metric_selected(m.info.name, opts);
  if (opts.all_metrics) return true;
  // first_step_ms has its own column; cpu time and time-to-first-step are in the JSON.
  using namespace model::harness_metric;
  return m.info.name != first_step_ms && m.info.name != cpu_time_s && m.info.name != time_to_first_step_s;
}

std::string facts_text(const analysis::ConfigSummary& c) {
  std::vector<std::string> parts;
  for (const auto& m : c.metrics) {
    if (!m.fact) continue;
    std::vector<std::string> values;
    for (const auto& t : m.trials) {
      auto v = util::format_number(t.value);  // a setting as written: 32, not 32.00
      if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
    }
    // Differing values (a note says how many trials had each) joined by '/': a '|' would split a Markdown cell.
    parts.push_back(fmt::format("{}={}", m.info.name, util::join(values, "/")));
  }
  return util::join(parts, " ");
}

std::string steady_text(const analysis::ConfigSummary& c, const std::vector<model::TrialRecord>& trials) {
  if (c.steady_classes.empty()) return "";
  std::vector<std::string> parts;
  for (const auto& [cls, n] : c.steady_classes) parts.push_back(fmt::format("{} {}", cls, n));
  std::vector<double> starts;
  for (const auto& t : trials)
    if (t.config_id == c.config_id && t.status == model::TrialStatus::Ok && !t.steady_class.empty())
      starts.push_back(static_cast<double>(t.steady_start));
  std::sort(starts.begin(), starts.end());
  std::string from = starts.empty() ? "" : fmt::format(" (steady from step {:g})", starts[starts.size() / 2]);
  return util::join(parts, ", ") + from;
}

}  // namespace perfgate::report
