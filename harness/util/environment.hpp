#pragma once
#include <map>
#include <optional>
#include <string>

namespace perfgate::util {

// This process's environment as a map (what a launched workload inherits).
std::map<std::string, std::string> current_environment();

// Where execvp would find `name` on this process's PATH (a name with a '/'
// is itself checked): a regular, executable file; nullopt when there is none.
// The one PATH lookup of perfgate (launcher, samplers).
std::optional<std::string> find_on_path(const std::string& name);

}  // namespace perfgate::util
