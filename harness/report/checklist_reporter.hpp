#pragma once
// Reports of `perfgate checklist`: a pass / fail / not-evaluable table with
// the measured value, the limit and the evidence; Markdown and JUnit like the gate.

#include <string>

#include "harness/analysis/checklist.hpp"

namespace perfgate::report {

std::string checklist_table(const analysis::ChecklistResult& r, bool strict);
std::string checklist_markdown(const analysis::ChecklistResult& r, bool strict);
std::string checklist_junit(const analysis::ChecklistResult& r, bool strict);
std::string checklist_json(const analysis::ChecklistResult& r, bool strict);

}  // namespace perfgate::report
