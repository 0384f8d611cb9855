#pragma once
// A machine for unit tests: files and tool outputs given by the test, every
// tool call recorded, nothing external run. perfgate's real reads go through
// runner::real_machine(), which the integration tests exercise.

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "harness/runner/fingerprint.hpp"

namespace perfgate::test {

class FakeMachine final : public runner::MachineProbe {
 public:
  FakeMachine() {
    files["/proc/cpuinfo"] = "processor\t: 0\nmodel name\t: Fake CPU @ 2.0GHz\n";
    files["/proc/meminfo"] = "MemTotal:       16777216 kB\n";
    files["/etc/os-release"] = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
  }

  std::string read_file(const std::string& path) const override {
    auto it = files.find(path);
    return it == files.end() ? std::string() : it->second;
  }
  // The output given for the tool's argv (joined by spaces); a tool not given
  // is one that is not installed.
  std::optional<std::string> run_tool(const std::vector<std::string>& argv, double) const override {
    std::string key;
    for (const auto& a : argv) key += (key.empty() ? "" : " ") + a;
    std::lock_guard lock(m_mu);
    calls.push_back(key);
    for (const auto& [prefix, out] : tools)
      if (key.starts_with(prefix)) return out;
    return std::nullopt;
  }
  std::string hostname() const override { return host; }
  std::string kernel_release() const override { return "6.1.0-test"; }
  std::string arch() const override { return "x86_64"; }
  unsigned cores() const override { return core_count; }

  std::map<std::string, std::string> files;
  std::map<std::string, std::string> tools;  // argv prefix -> stdout
  std::string host = "unit-node-01";
  unsigned core_count = 8;
  mutable std::vector<std::string> calls;

 private:
  mutable std::mutex m_mu;
};

}  // namespace perfgate::test
