#pragma once
// A release checklist (configs/release-checklist.yaml): items, each a kind of
// check with its limit, evaluated against stored runs.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/model/suite.hpp"

namespace perfgate::model {

enum class CheckKind {
  Ratio,         // metric of one configuration over another's, at least / at most
  DataShare,     // data_wait_ms / step_time_ms at most
  Scaling,       // throughput at N ranks / (N x throughput at the fewest) at least
  FirstStep,     // first-step (compile) time at most
  SoakDrift,     // |drift| of a metric in a soak at most (%/h)
  MemoryGrowth,  // memory growth in a soak at most (MB/h)
  Stalls,        // stalls in a soak at most
  Hangs,         // hangs in a soak at most
  NanLoss,       // NaN/Inf loss values at most
  NoRegression,  // a gate against a baseline finds no regression
  AllTrialsOk,   // every trial of the run succeeded
};

std::string_view to_string(CheckKind k);
std::optional<CheckKind> check_kind_from(std::string_view s);
const std::vector<std::string>& check_kind_names();

struct ChecklistItem {
  std::string name;
  CheckKind kind = CheckKind::AllTrialsOk;
  SourceLoc loc;
  std::string run;       // run selector for this item; empty: the checklist's --run
  std::string workload;  // only configurations of this workload
  std::string metric;    // defaults per kind
  std::map<std::string, std::string> numerator, denominator;  // ratio: parameter filters
  std::map<std::string, std::string> where;                   // other kinds: parameter filters
  std::string param = "ranks";                                // scaling: the parameter holding the rank count
  std::optional<double> at_least, at_most;                    // the limit(s)
  std::string baseline;                                       // no_regression: baseline selector
  std::string policy;                                         // no_regression: gate policy path
  bool optional = false;  // not evaluable is allowed (it never passes the checklist otherwise)
};

struct Checklist {
  std::string name;
  std::string description;
  std::string path;
  std::vector<ChecklistItem> items;
};

}  // namespace perfgate::model
