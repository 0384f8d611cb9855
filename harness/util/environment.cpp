#include "harness/util/environment.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <cstdlib>
#include <string_view>

extern char** environ;

namespace perfgate::util {

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string_view::npos) env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

std::optional<std::string> find_on_path(const std::string& name) {
  auto executable = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) return executable(name) ? std::optional(name) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    auto colon = rest.find(':');
    std::string_view dir = rest.substr(0, colon);
    auto candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + name;
    if (executable(candidate)) return candidate;
    if (colon == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(colon + 1);
  }
}

}  // namespace perfgate::util
