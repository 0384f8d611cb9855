#pragma once
// Node classes: which trials' numbers may be compared with which. A fleet
// run's trials ran on whatever nodes claimed them, and a fleet may mix node
// kinds (910B2C and 910B3 nodes, two CPU generations). A trial's node class
// is the hash of its node's machine fingerprint (a fleet worker stores it
// per trial) or, for a trial that ran where its run was recorded (every
// local run's), the run's own fingerprint hash. The gate compares each
// configuration within one node class: a baseline run counts when it ran on
// a class the candidate ran on, and only its trials on the candidate's
// classes are pooled.

#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/analysis/run_summary.hpp"
#include "harness/store/store.hpp"
#include "harness/util/error.hpp"

namespace perfgate::analysis {

std::string node_class_of(const store::RunRecord& run, const model::TrialRecord& trial);

// The classes a run's trials ran on ({run's own hash} for a run with no trials).
std::set<std::string> node_classes(const store::RunData& data);
Expected<std::set<std::string>> node_classes(store::Store& st, const store::RunRecord& run);

// "pool-a/3f2a1b": the fingerprint's hostname class and the hash's first 6
// digits (the hash alone when the fingerprint is unknown).
std::string node_class_name(const std::string& hash, const std::string& fingerprint_json);

// How a gate splits its runs: the candidate's classes, and whether the
// comparisons are per class (the candidate ran on more than one) or pooled
// over every class (--force).
struct NodeClassView {
  std::set<std::string> classes;             // the candidate's
  std::map<std::string, std::string> names;  // hash -> node_class_name
  bool split = false;                        // more than one class: a comparison per class
  bool pool_all = true;  // every trial counts, one class (--force; and a view made without a candidate)

  // The run summarised as the gate compares it: one summary per class of
  // the candidate's the run has trials on (node_class set to the class's
  // name when split), or one summary of every trial when pool_all.
  std::vector<RunSummary> summarise(const store::RunData& data) const;
  // Trials of the run on classes the candidate did not run on (left out).
  int trials_elsewhere(const store::RunData& data) const;
};

// The view of a candidate; names come from the store's node fingerprints
// (or the run's own fingerprint for its local trials).
Expected<NodeClassView> node_class_view(store::Store& st, const store::RunData& cand, bool force);

}  // namespace perfgate::analysis
