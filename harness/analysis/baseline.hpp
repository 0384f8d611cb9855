#pragma once
// Baseline selection for compare and gate: which earlier runs a candidate is
// judged against, and whether their machines are comparable.
//
// Selectors: a run id, `latest`, `latest:TAG`, or comma-separated keys
// `tag:T`, `last:N` (default 3 with a tag), `commit:SHA` (prefix), `suite:S`,
// `include:all`. Keyed selectors pool the trials of every run they match,
// from the candidate's suite (unless `suite:` says otherwise), completed runs
// only, older than the candidate (a `commit:` selector may also match newer
// runs), and leave out runs whose own newest gate said regression,
// underpowered or inconclusive (a bad night must not become tomorrow's
// baseline) unless `include:all` asks for them.

#include <string>
#include <vector>

#include "harness/store/store.hpp"
#include "harness/util/error.hpp"

namespace perfgate::analysis {

struct BaselineSelector {
  std::string run;  // plain run selector ("42", "latest:nightly"); empty for keyed
  std::string tag, commit, suite;
  int last = 0;              // 0: the default
  bool include_all = false;  // include:all keeps runs whose own gate found something
};

Expected<BaselineSelector> parse_baseline_selector(const std::string& text);

struct Baseline {
  std::vector<store::RunData> runs;   // newest first
  std::vector<std::string> warnings;  // e.g. runs skipped for another fingerprint
  bool forced = false;                // a fingerprint mismatch was overridden
  // Runs the selector matched but left out, with why (their own gate).
  std::vector<std::pair<long long, std::string>> left_out;
};

// Runs of the selector, checked against the candidate's machine: a run
// counts when its trials ran on a node class the candidate's did (for local
// runs, the same machine fingerprint; analysis/node_class.hpp). Runs of
// another machine are refused with the differing fields (keyed selectors
// skip them and say so) unless `force`.
Expected<Baseline> select_baseline(store::Store& st, const store::RunRecord& cand, const std::string& selector,
                                   bool force);

// Older completed runs of the candidate's suite on its machine, not in the
// baseline and not flagged by their own gate, newest first, so that the
// baseline and these hold at most `max_runs` runs together: the run-to-run
// spread of a configuration is read from them (docs/statistics.md).
Expected<std::vector<store::RunData>> select_history(store::Store& st, const store::RunRecord& cand,
                                                     const Baseline& baseline, int max_runs);

// Why a run is not a baseline: its own newest gate said regression,
// underpowered or inconclusive ("" when it is fine or was never gated).
Expected<std::string> flagged_by_own_gate(store::Store& st, long long run_id);

}  // namespace perfgate::analysis
