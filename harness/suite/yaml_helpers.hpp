#pragma once
// Helpers shared by the YAML readers of suite/ (suites, profiles, gate
// policies, checklists): every error names file:line:column.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "harness/model/suite.hpp"
#include "harness/util/error.hpp"

namespace perfgate::suite::yaml {

struct Ctx {
  std::string file;
  std::string base_dir;  // resolves relative paths
};

model::SourceLoc loc_of(const Ctx& c, const YAML::Node& n);
Error err_at(const model::SourceLoc& loc, const std::string& msg);
Error err_at(const Ctx& c, const YAML::Node& n, const std::string& msg);
const char* type_name(const YAML::Node& n);
// A mapping whose keys are all known (when `allowed` is not empty) and unique.
Status check_map(const Ctx& c, const YAML::Node& n, const std::string& what, const std::vector<std::string>& allowed);
Expected<std::string> get_string(const Ctx& c, const YAML::Node& n, const std::string& what);
Expected<long long> get_int(const Ctx& c, const YAML::Node& n, const std::string& what, long long min_value);
Expected<bool> get_bool(const Ctx& c, const YAML::Node& n, const std::string& what);
Expected<double> get_duration(const Ctx& c, const YAML::Node& n, const std::string& what);
// A plain number; with `duration_ms`, also a duration ("90s", "2m") in ms.
Expected<double> get_number(const Ctx& c, const YAML::Node& n, const std::string& what, bool duration_ms = false);
// "3%", "0.03" or "3 %" as a fraction; `max_value` bounds the fraction.
Expected<double> get_fraction(const Ctx& c, const YAML::Node& n, const std::string& what, double max_value);
// Nodes a walk may visit through aliases beyond the file's own: a real
// suite shares a few blocks; a YAML bomb needs far more.
inline constexpr std::uint64_t k_max_nodes_through_aliases = 1'000'000;
// Parses `text`; a syntax error, nesting past yaml-cpp's limit, an alias
// inside the node it names, or aliases expanding past the limit above is an
// input error naming the file, line and column.
Expected<YAML::Node> parse_yaml(const std::string& text, const std::string& display_path);
// A YAML file's text (suite, profile, policy, checklist). Past this size it
// is an input error: yaml-cpp's tree of a 10 MB suite peaks at 527 MB, so
// the limit bounds the memory a file can take (tests/bench/suite_load.py).
inline constexpr std::size_t k_max_yaml_file_bytes = std::size_t{16} << 20;
Expected<std::string> read_file(const std::string& path);

}  // namespace perfgate::suite::yaml
