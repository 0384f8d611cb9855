#pragma once
// Baseline selection for compare and gate: which earlier runs a candidate is
// judged against, and whether their machines are comparable.
//
// Selectors: a run id, `latest`, `latest:TAG`, or comma-separated keys
// `tag:T`, `last:N` (default 3 with a tag), `commit:SHA` (prefix), `suite:S`.
// Keyed selectors pool the trials of every run they match, from the
// candidate's suite (unless `suite:` says otherwise), completed runs only,
// older than the candidate (a `commit:` selector may also match newer runs).

#include <string>
#include <vector>

#include "harness/store/store.hpp"
#include "harness/util/error.hpp"

namespace perfgate::analysis {

struct BaselineSelector {
  std::string run;             // plain run selector ("42", "latest:nightly"); empty for keyed
  std::string tag, commit, suite;
  int last = 0;                // 0: the default
};

Expected<BaselineSelector> parse_baseline_selector(const std::string& text);

struct Baseline {
  std::vector<store::RunData> runs;   // newest first
  std::vector<std::string> warnings;  // e.g. runs skipped for another fingerprint
  bool forced = false;                // a fingerprint mismatch was overridden
};

// Runs of the selector, checked against the candidate's fingerprint. Runs of
// another machine are refused with the differing fields (keyed selectors
// skip them and say so) unless `force`.
Expected<Baseline> select_baseline(store::Store& st, const store::RunRecord& cand, const std::string& selector,
                                   bool force);

}  // namespace perfgate::analysis
