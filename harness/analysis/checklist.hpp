#pragma once
// Evaluates a release checklist against stored runs: each item passes,
// fails, or is not evaluable (the run does not hold its data), with the
// measured value, the limit and the evidence.

#include <string>
#include <vector>

#include "harness/model/checklist.hpp"
#include "harness/store/store.hpp"
#include "harness/util/error.hpp"

namespace perfgate::analysis {

enum class ItemStatus { Pass, Fail, NotEvaluable };
std::string_view to_string(ItemStatus s);

struct ItemResult {
  model::ChecklistItem item;
  ItemStatus status = ItemStatus::NotEvaluable;
  long long run_id = 0;
  double measured = 0;        // NaN when not evaluable
  std::string measured_text;  // "1.62x", "0.8 %/h", "3 stalls"
  std::string limit_text;     // ">= 1.5x"
  std::string evidence;       // what the value rests on, or what is missing
};

struct ChecklistResult {
  model::Checklist checklist;
  std::vector<ItemResult> items;
  int passed = 0, failed = 0, not_evaluable = 0;
  int required_not_evaluable = 0;  // not evaluable and not marked optional
};

// A checklist passes only when no item failed and every item that is not
// optional was evaluated; with `strict`, optional items must be evaluated too.
bool checklist_failed(const ChecklistResult& r, bool strict);

struct ChecklistOptions {
  std::string run;           // the default run selector (--run)
  std::string baseline;      // --baseline: default for no_regression items without one
  bool force = false;        // compare across machine fingerprints
  double soak_window_s = 0;  // 0: the window each soak ran with
};

// Input errors (an unknown --run) come back as errors; a run or baseline an
// item names but that is missing makes that item not evaluable.
Expected<ChecklistResult> evaluate_checklist(store::Store& st, const model::Checklist& cl, const ChecklistOptions& opt);

}  // namespace perfgate::analysis
