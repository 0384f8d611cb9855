#include "harness/util/install_paths.hpp"

#include <cstdlib>
#include <filesystem>

namespace perfgate::util {
namespace fs = std::filesystem;

std::string self_executable() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("perfgate") : p.string();
}

namespace {

fs::path exe_dir() {
  fs::path exe(self_executable());
  return exe.has_parent_path() ? exe.parent_path() : fs::current_path();
}

}  // namespace

std::string libexec_dir() {
  if (const char* v = std::getenv("PERFGATE_LIBEXEC"); v && *v) return v;
  const fs::path dir = exe_dir();
  std::error_code ec;
  if (fs::exists(dir / "perfgate-sim", ec)) return dir.string();
  return (dir.parent_path() / "libexec" / "perfgate").lexically_normal().string();
}

std::string data_dir() {
  if (const char* v = std::getenv("PERFGATE_DATA"); v && *v) return v;
  const fs::path share = (exe_dir().parent_path() / "share" / "perfgate").lexically_normal();
  std::error_code ec;
  return fs::is_directory(share, ec) ? share.string() : std::string();
}

}  // namespace perfgate::util
