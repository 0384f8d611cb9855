#include "harness/suite/profiles.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "harness/util/install_paths.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::suite {
namespace fs = std::filesystem;
using yaml::check_map;
using yaml::Ctx;
using yaml::parse_yaml;
using yaml::read_file;

namespace {

const std::vector<std::string> k_profile_keys = {"profile", "description", "slots", "defaults"};

}  // namespace

Expected<std::string> find_profile(const std::string& name, const std::string& suite_dir, const LoadOptions& opts) {
  std::vector<fs::path> tries;
  fs::path as_path(name);
  if (name.find('/') != std::string::npos || as_path.extension() == ".yaml") tries.push_back(as_path);
  std::vector<fs::path> dirs;
  for (const auto& d : opts.profile_search_dirs) dirs.emplace_back(d);
  dirs.push_back(fs::path(suite_dir) / ".." / "configs" / "profiles");
  dirs.push_back(fs::path("configs") / "profiles");
  // An installed perfgate's own profiles, whichever folder the suite is in.
  if (auto share = util::data_dir(); !share.empty()) dirs.push_back(fs::path(share) / "configs" / "profiles");
  for (const auto& d : dirs) tries.push_back(d / (name + ".yaml"));
  // The non-throwing form: a name from a suite can be longer than a file
  // name may be (ENAMETOOLONG), which is "not found" like any other.
  std::error_code ec;
  for (const auto& t : tries)
    if (fs::is_regular_file(t, ec)) return t.lexically_normal().string();
  std::vector<std::string> shown;
  for (const auto& t : tries) shown.push_back(t.lexically_normal().string());
  return Error::input(fmt::format("profile '{}' not found; looked in: {}", name, util::join(shown, ", ")));
}

Expected<Settings> load_profile(const std::string& path, const std::string& base_dir) {
  auto text = read_file(path);
  if (!text) return text.error();
  auto root = parse_yaml(*text, path);
  if (!root) return root.error();
  Ctx c{path, base_dir};
  if (auto st = check_map(c, *root, "a profile", k_profile_keys); !st) return st.error();
  Settings s;
  if ((*root)["defaults"]) {
    if (auto st = check_map(c, (*root)["defaults"], "defaults", k_setting_keys); !st) return st.error();
    if (auto st = read_settings(c, (*root)["defaults"], s); !st) return st.error();
  }
  if ((*root)["slots"]) {
    auto sl = read_slots(c, (*root)["slots"]);
    if (!sl) return sl.error();
    s.slots = *sl;
  }
  return s;
}

}  // namespace perfgate::suite
