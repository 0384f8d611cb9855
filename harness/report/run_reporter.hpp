#pragma once
// Reporters of `perfgate show` and `perfgate runs`: one per output format,
// all fed the same records.

#include <memory>
#include <string>
#include <vector>

#include "harness/analysis/run_summary.hpp"
#include "harness/store/store.hpp"
#include "harness/util/error.hpp"

namespace perfgate::report {

struct ShowOptions {
  std::vector<std::string> metrics;  // only these (all when empty)
  bool all_metrics = false;          // include per-trial harness numbers (cpu time, ...) in tables
  std::string dashboard_url;         // Markdown: links to the run's dashboard pages
};

class RunReporter {
 public:
  virtual ~RunReporter() = default;
  virtual std::string show(const analysis::RunSummary& run, const ShowOptions& opts) const = 0;
  virtual std::string runs(const std::vector<store::RunListRow>& rows) const = 0;
};

std::unique_ptr<RunReporter> make_table_reporter();
std::unique_ptr<RunReporter> make_markdown_reporter();
std::unique_ptr<RunReporter> make_json_reporter();

// "table" | "markdown" | "json"
Expected<std::unique_ptr<RunReporter>> make_run_reporter(const std::string& format);

// Shared by the text formats: which metric rows a table shows.
bool shown_in_table(const analysis::MetricRow& m, const ShowOptions& opts);

}  // namespace perfgate::report
