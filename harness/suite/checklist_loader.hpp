#pragma once
// Release checklist YAML (configs/release-checklist.yaml) -> model::Checklist.
// Unknown check kinds, misspelt keys and limits of the wrong type are input
// errors naming the item and its line.

#include <string>

#include "harness/model/checklist.hpp"
#include "harness/util/error.hpp"

namespace perfgate::suite {

Expected<model::Checklist> load_checklist(const std::string& path);
Expected<model::Checklist> load_checklist_text(const std::string& text, const std::string& display_path);

}  // namespace perfgate::suite
