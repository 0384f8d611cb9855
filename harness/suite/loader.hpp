#pragma once
// YAML -> model::Suite. The only place that includes yaml-cpp.
//
// Layers, lowest first: profile `defaults` < suite `defaults` < workload keys
// < `--set`. Every error names file:line:column of the offending node and,
// for misspelt keys or placeholders, suggests the closest known name.

#include <optional>
#include <string>
#include <vector>

#include "harness/model/suite.hpp"
#include "harness/util/error.hpp"

namespace perfgate::suite {

struct Override {
  std::string key;                  // "repeats", "bucket_mb", "dataloader.num_workers"
  std::vector<std::string> values;  // "5,25,50" split on commas
};

// Parses one `--set key=v1,v2` argument.
Expected<Override> parse_override(const std::string& text);

struct LoadOptions {
  std::vector<std::string> profiles;             // --profile names or paths, applied in order
  std::vector<Override> overrides;               // --set, applied last
  std::vector<std::string> profile_search_dirs;  // extra dirs holding <name>.yaml profiles
  std::optional<model::SlotsSpec> slots;         // --slots: wins over the suite's and profiles'
};

// `--slots`: "npu:0-7", "npu:0-7/2" (two devices per trial), "cpu:0-15/4",
// or a YAML mapping as in a suite ({kind: npu, devices: [0-7], per_trial: 1}).
Expected<model::SlotsSpec> parse_slots_option(const std::string& text);

Expected<model::Suite> load_suite(const std::string& path, const LoadOptions& opts = {});
// Same, from text; `display_path` names it in messages and `base_dir` resolves cwd.
Expected<model::Suite> load_suite_text(const std::string& text, const std::string& display_path,
                                       const std::string& base_dir, const LoadOptions& opts = {});

// Placeholders every workload may use besides its parameters.
const std::vector<std::string>& builtin_placeholders();

}  // namespace perfgate::suite
