#pragma once
// Profiles (configs/profiles/*.yaml): found by name or path, read as a
// settings layer below the suite's own (internal to suite/).

#include <string>

#include "harness/suite/loader.hpp"
#include "harness/suite/settings_reader.hpp"
#include "harness/util/error.hpp"

namespace perfgate::suite {

// A profile's file: a path as given, else <name>.yaml in the --profile
// search dirs, beside the suite (../configs/profiles) or where perfgate is
// installed.
Expected<std::string> find_profile(const std::string& name, const std::string& suite_dir, const LoadOptions& opts);
Expected<Settings> load_profile(const std::string& path, const std::string& base_dir);

}  // namespace perfgate::suite
