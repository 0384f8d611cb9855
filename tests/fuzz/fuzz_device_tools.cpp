// What the device and host samplers and the machine fingerprint read:
// npu-smi (table, key-value blocks, processes), nvidia-smi (CSV, apps),
// /proc (stat, a process's stat and status, loadavg, CPU pressure,
// schedstat), all over the same text; and the fingerprint of a machine whose
// files and tools answer with sections of it.
#include "harness/exec/proc_tree.hpp"
#include "harness/runner/fingerprint.hpp"
#include "harness/sampling/sampler.hpp"
#include "tests/fuzz/fuzz_input.hpp"

namespace {

// The k-th file, tool or name the fingerprint asks for gets the k-th section
// of the input (sections end at form feeds; round-robin past the last), so
// the fuzzer varies each answer on its own and the fingerprint reads each
// byte about once, not once per file (which made it two thirds of the
// target's time).
class TextMachine final : public perfgate::runner::MachineProbe {
 public:
  explicit TextMachine(std::string_view text) {
    while (true) {
      auto ff = text.find('\f');
      m_sections.push_back(std::string(text.substr(0, ff)));
      if (ff == std::string_view::npos) break;
      text.remove_prefix(ff + 1);
    }
  }
  std::string read_file(const std::string&) const override { return next(); }
  std::optional<std::string> run_tool(const std::vector<std::string>&, double) const override {
    auto out = next();
    if (out == "\x01") return std::nullopt;  // a tool that is missing or failed
    return out;
  }
  std::string hostname() const override { return next(); }
  std::string kernel_release() const override { return "6.1.0"; }
  std::string arch() const override { return "x86_64"; }
  unsigned cores() const override { return 8; }

 private:
  std::string next() const { return m_sections[m_next++ % m_sections.size()]; }
  std::vector<std::string> m_sections;
  mutable std::size_t m_next = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace perfgate;
  const std::string text = fuzz::text_of(data, size);
  (void)sampling::parse_npu_smi_info(text);
  (void)sampling::npu_smi_inventory(text);
  (void)sampling::parse_npu_smi_processes(text);
  (void)sampling::parse_nvidia_smi_csv(text);
  (void)sampling::parse_nvidia_smi_apps(text);
  (void)sampling::parse_proc_stat_cpu(text);
  (void)sampling::parse_loadavg_1m(text);
  (void)sampling::parse_cpu_pressure_total_us(text);
  (void)sampling::parse_schedstat_wait_ns(text);
  (void)exec::parse_proc_stat(text, 1);
  (void)exec::parse_vm_hwm_mb(text);
  const TextMachine machine(text);
  runner::FingerprintOptions opts;
  opts.python = "python3";
  opts.machine = &machine;
  (void)runner::machine_fingerprint(opts);
  return 0;
}
