#pragma once
#include <map>
#include <string>

namespace perfgate::util {

// This process's environment as a map (what a launched workload inherits).
std::map<std::string, std::string> current_environment();

}  // namespace perfgate::util
