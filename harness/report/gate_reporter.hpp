#pragma once
// Reports of `perfgate compare` and `perfgate gate`: terminal table (colour
// only when asked: a TTY without NO_COLOR), Markdown for CI summaries, JUnit
// XML (one testcase per configuration x metric), JSON with every number.

#include <string>
#include <vector>

#include "harness/analysis/gate.hpp"
#include "harness/model/verdict.hpp"
#include "harness/store/store.hpp"

namespace perfgate::report {

struct GateReport {
  std::string command = "gate";               // "gate" or "compare"
  store::RunRecord candidate;
  std::vector<store::RunRecord> baseline_runs;
  std::string baseline_selector;
  model::GatePolicy policy;
  std::vector<model::Comparison> comparisons; // most severe first
  analysis::VerdictCounts counts;
  bool adaptive = false;
  int rounds = 0, trials_added = 0;
  std::vector<std::string> warnings;
  std::string outcome;                        // regression | pass | inconclusive | error
  long long gate_id = 0;                      // as stored; 0 when not stored
  std::string dashboard_url;                  // Markdown links to the dashboard's views when set
};

// "regression" when any comparison regressed or the candidate failed where
// the baseline ran, "inconclusive" when none did but some could not be
// decided (or are missing), else "pass".
std::string gate_outcome(const analysis::VerdictCounts& n);
// The one-line verdict: "REGRESSION: 1 regression, 0 failed, ... (run 12 against runs 9, 10, 11)".
std::string gate_headline(const GateReport& r);

std::string gate_table(const GateReport& r, bool colour);
std::string gate_markdown(const GateReport& r);
std::string gate_junit(const GateReport& r);
std::string gate_json(const GateReport& r);

// XML text and attribute escaping (also strips characters XML 1.0 forbids).
std::string xml_escape(std::string_view s);

}  // namespace perfgate::report
