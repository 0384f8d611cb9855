// What the device and host samplers read: npu-smi (table, key-value blocks,
// processes), nvidia-smi (CSV, apps) and /proc/stat, all over the same text.
#include "harness/sampling/sampler.hpp"
#include "tests/fuzz/fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace perfgate;
  const std::string text = fuzz::text_of(data, size);
  (void)sampling::parse_npu_smi_info(text);
  (void)sampling::npu_smi_inventory(text);
  (void)sampling::parse_npu_smi_keyvalues(text, static_cast<int>(size % 8));
  (void)sampling::parse_npu_smi_processes(text);
  (void)sampling::parse_nvidia_smi_csv(text);
  (void)sampling::parse_nvidia_smi_apps(text);
  (void)sampling::parse_proc_stat_cpu(text);
  return 0;
}
