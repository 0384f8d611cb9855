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
// One row per (configuration, metric) for `show`, one per run for `runs`;
// parameters and facts as columns, so the file reads straight into pandas.
std::unique_ptr<RunReporter> make_csv_reporter();

// "table" | "markdown" | "md" | "json" | "csv"
Expected<std::unique_ptr<RunReporter>> make_run_reporter(const std::string& format);

// Shared by the text formats: which metric rows a table shows.
bool shown_in_table(const analysis::MetricRow& m, const ShowOptions& opts);
// --metric: names or globs; no --metric selects everything.
bool metric_selected(const std::string& name, const ShowOptions& opts);
// "ranks=1 buckets=4": a configuration's facts (the value of its trials, or
// every value when they differ).
std::string facts_text(const analysis::ConfigSummary& c);
// "warm-up 3, flat 1 (steady from step 12)": warmup auto's classes of a
// configuration's trials; "" for fixed warm-ups.
std::string steady_text(const analysis::ConfigSummary& c, const std::vector<model::TrialRecord>& trials);

}  // namespace perfgate::report
