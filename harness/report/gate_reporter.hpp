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
  std::string command = "gate";  // "gate" or "compare"
  store::RunRecord candidate;
  std::vector<store::RunRecord> baseline_runs;
  std::string baseline_selector;
  model::GatePolicy policy;
  std::vector<model::Comparison> comparisons;  // most severe first
  std::vector<model::JointTest> joint;         // one per metric compared across configurations
  int family = 0;                              // tests under the false-discovery control
  double alpha_lone = 0;                       // raw p a lone discovery needed
  analysis::VerdictCounts counts;
  int underpowered = 0;  // comparisons that could not have flagged a lone regression
  // Baseline runs the selector matched but the gate left out (their own gate
  // found something), with why; runs read for the run-to-run spread only.
  std::vector<std::pair<long long, std::string>> left_out_runs;
  std::vector<long long> history_runs;
  // Host probe (a fixed piece of work timed beside each trial): its median
  // per run, and what it says next to the flagged comparisons.
  double probe_cand_ms = std::nan(""), probe_base_ms = std::nan("");
  std::vector<std::string> probe_notes;
  bool adaptive = false;
  int rounds = 0, trials_added = 0;
  std::vector<std::string> warnings;
  std::string outcome;        // regression | underpowered | inconclusive | pass | error
  long long gate_id = 0;      // as stored; 0 when not stored
  std::string dashboard_url;  // Markdown links to the dashboard's views when set
};

// "regression" when any comparison regressed or failed (crashes, a risen
// failed fraction), "underpowered" when none did but some comparison could
// not have flagged a lone regression and the policy says fail, "inconclusive"
// when some could not be decided (or are missing), else "pass".
std::string gate_outcome(const analysis::VerdictCounts& n, int underpowered = 0,
                         model::Underpowered action = model::Underpowered::Warn);
// The one-line verdict: "REGRESSION: 1 regression, 0 failed, ... (run 12 against runs 9, 10, 11)".
std::string gate_headline(const GateReport& r);

std::string gate_table(const GateReport& r, bool colour);
std::string gate_markdown(const GateReport& r);
std::string gate_junit(const GateReport& r);
std::string gate_json(const GateReport& r);

// XML text and attribute escaping (also strips characters XML 1.0 forbids).
std::string xml_escape(std::string_view s);

}  // namespace perfgate::report
