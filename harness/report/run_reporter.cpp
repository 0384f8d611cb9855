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
  const std::vector<std::string> known = {"table", "markdown", "json"};
  return Error::input(fmt::format("unknown format '{}'{}; use table, markdown or json", format,
                                  util::did_you_mean(format, known)));
}

bool shown_in_table(const analysis::MetricRow& m, const ShowOptions& opts) {
  if (!opts.metrics.empty())
    return std::find(opts.metrics.begin(), opts.metrics.end(), m.info.name) != opts.metrics.end();
  if (opts.all_metrics) return true;
  // first_step_ms has its own column; cpu time and time-to-first-step are in the JSON.
  using namespace model::harness_metric;
  return m.info.name != first_step_ms && m.info.name != cpu_time_s && m.info.name != time_to_first_step_s;
}

}  // namespace perfgate::report
