#pragma once
// Samplers watch a running trial from the outside: the process tree in
// /proc, the accelerators through npu-smi / nvidia-smi, or any command whose
// output a suite-declared regex can read. Each sampler runs on its own thread
// (see SamplingSession) at the suite's sample_interval.
//
// A missing binary or output that cannot be read is a warning, never a
// failed trial: sample() returns an Error with a message, the session notes
// it once per trial and keeps the series empty.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "harness/model/metric.hpp"
#include "harness/model/suite.hpp"
#include "harness/util/error.hpp"

namespace perfgate::sampling {

// One value of one series at one instant: "host.rss_mb" = 812.5.
struct Reading {
  std::string metric;
  double value = 0;
};

class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual std::string_view name() const = 0;
  // One sample. `root_pid` is the trial's process (the leader of its group);
  // 0 before the trial's process exists.
  virtual Expected<std::vector<Reading>> sample(int root_pid) = 0;
  // Sampled once more right before the trial starts and right after it ends
  // (the host probe: the machine's state on both sides of the trial).
  virtual bool brackets_trial() const { return false; }
  // What samples that did not fail left out (a command's lines over 1 MiB,
  // cut and not matched), so that nothing is skipped without a word; empty
  // when nothing was. Safe to call while the sampler runs.
  virtual std::string note() const { return {}; }
};

// What a suite asks for (`samplers: [proc, npu-smi]`, or a mapping for
// `command`); the suite loader fills it (model/suite.hpp).
using SamplerSpec = model::SamplerSpec;
//
// A `command` sampler's regex is RE2 syntax (util/user_regex) with named
// groups written (?<name>...) or (?P<name>...), the names kept by group number. Group names and numbers map to metrics
// through metric_names: a key is a group name or a 1-based group number (the
// suite's `metrics: [a, b]` arrives as {"1": a, "2": b}); an explicit entry
// wins, by name before number; a named group without an entry feeds the
// metric of its own name; other groups feed nothing. Named back-references
// are not supported (use \1). The regex is searched in each line of the
// command's output; each metric takes the first line where its group
// matched a number. Lines where nothing parses as a number give no reading;
// no reading at all is an Error quoting the first line.

// Kinds a suite may name.
const std::vector<std::string>& sampler_kinds();

// Builds a sampler; an unknown kind or a regex that does not compile is an input error.
Expected<std::unique_ptr<Sampler>> make_sampler(const SamplerSpec& spec);

// Unit and direction of the series samplers produce ("device.0.hbm_used_mb" -> MB, lower).
model::MetricInfo sampler_metric_info(std::string_view metric);

// The readings of the trial's own devices: device.<id>.* and
// device.<id>_<chip>.* with <id> in `devices`, and everything not about a
// device. No devices: everything (a trial that owns no slot watches all).
std::vector<Reading> only_devices(std::vector<Reading> readings, const std::vector<int>& devices);

// ---- Parsers, pure functions over captured output (fixture-tested) ----

// `npu-smi info`: per NPU/chip: device.<i>.power_w, .temp_c, .aicore_pct,
// .hbm_used_mb, .hbm_total_mb (910-class), .memory_used_mb, .memory_total_mb,
// .health_ok (1 when Health is OK). <i> numbers chips in table order (NPU
// with one chip: its NPU id; several chips: "<npu>_<chip>"). Tables without
// HBM (310-class), "NA" cells and five-digit "59985/ 65536" cells are handled.
std::vector<Reading> parse_npu_smi_info(std::string_view text);
// The same table's NPU models, one per NPU row ("910B2C"), and the tool's
// version: what the machine fingerprint stores. One parser for both.
struct NpuSmiInventory {
  std::vector<std::string> models;
  std::string tool_version;
};
NpuSmiInventory npu_smi_inventory(std::string_view text);

// `nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits`: one line
// per GPU, device.<i>.<field> with the fields named in k_nvidia_fields order.
// "[Not Supported]" and "[N/A]" are missing values.
std::vector<Reading> parse_nvidia_smi_csv(std::string_view text);
// The query fields and the metric suffix each feeds.
const std::vector<std::pair<std::string, std::string>>& nvidia_fields();

// The processes an accelerator tool lists as holding devices: `npu-smi info`'s
// process table (NPU, chip, pid) and `nvidia-smi
// --query-compute-apps=pid,gpu_bus_id --format=csv,noheader`.
struct DeviceProcess {
  std::string device;  // "0" / "0_1" (npu-smi), the bus id (nvidia-smi)
  int pid = 0;
};
std::vector<DeviceProcess> parse_npu_smi_processes(std::string_view text);
std::vector<DeviceProcess> parse_nvidia_smi_apps(std::string_view text);

// `/proc/stat`'s first line as CPU ticks: busy (user, nice, system, irq,
// softirq), idle (idle, iowait) and steal; nullopt when it cannot be read.
struct CpuTicks {
  unsigned long long busy = 0, idle = 0, steal = 0;
};
std::optional<CpuTicks> parse_proc_stat_cpu(std::string_view text);
// `/proc/loadavg`: the 1-minute load average.
std::optional<double> parse_loadavg_1m(std::string_view text);
// `/proc/pressure/cpu`: the "some" line's total= (microseconds some task waited).
std::optional<unsigned long long> parse_cpu_pressure_total_us(std::string_view text);
// `/proc/<pid>/task/<tid>/schedstat`: nanoseconds runnable but waiting for a CPU.
std::optional<unsigned long long> parse_schedstat_wait_ns(std::string_view text);

// `/proc` of a process tree rooted at `root_pid`: host.rss_mb, host.cpu_pct
// (since the previous call on the same object), host.threads.
class ProcTreeSampler;

}  // namespace perfgate::sampling
