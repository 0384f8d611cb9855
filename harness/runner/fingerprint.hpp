#pragma once
// The machine fingerprint stored with every run: what must match for two
// runs' numbers to be comparable (CPU, memory, accelerators and their
// software stack), plus context that need not match (hostname, kernel).

#include <optional>
#include <string>
#include <vector>

namespace perfgate::runner {

// What a run reads from the machine it runs on (the fingerprint's files and
// tools, git where the suite lives), through one seam: unit tests give a fake
// and run no external tool; perfgate itself and the integration tests read
// the real machine (real_machine()).
class MachineProbe {
 public:
  virtual ~MachineProbe() = default;
  // A file's text; empty when it cannot be read.
  virtual std::string read_file(const std::string& path) const = 0;
  // A tool's stdout when it exits 0 within timeout_s; nullopt otherwise
  // (missing, failed, hung).
  virtual std::optional<std::string> run_tool(const std::vector<std::string>& argv, double timeout_s) const = 0;
  virtual std::string hostname() const = 0;
  virtual std::string kernel_release() const = 0;
  virtual std::string arch() const = 0;
  virtual unsigned cores() const = 0;
};

const MachineProbe& real_machine();

struct Fingerprint {
  std::string json;  // every field, for reports
  std::string hash;  // of the comparable fields only
};

struct FingerprintOptions {
  // A Python interpreter to ask for its torch / torch_npu versions (about a
  // second); the workloads' own, so the versions are the ones that ran. Empty: no probe.
  std::string python;
  const MachineProbe* machine = nullptr;  // nullptr: real_machine()
};

Fingerprint machine_fingerprint(const FingerprintOptions& opts);

// Comparable fields that differ between two fingerprints (JSON as stored),
// as "field: A -> B"; context fields (hostname, kernel, os) are left out.
std::vector<std::string> fingerprint_differences(const std::string& a_json, const std::string& b_json);

// "node-a-017.cluster" -> "node-a": hosts of one pool share a class.
std::string hostname_class(const std::string& hostname);
std::string hostname();

}  // namespace perfgate::runner
