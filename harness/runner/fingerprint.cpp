#include "harness/runner/fingerprint.hpp"

#include <sys/utsname.h>
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/exec/capture.hpp"
#include "harness/sampling/sampler.hpp"
#include "harness/util/strings.hpp"

namespace perfgate::runner {
namespace {

class RealMachine final : public MachineProbe {
 public:
  std::string read_file(const std::string& path) const override {
    std::ifstream in(path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::optional<std::string> run_tool(const std::vector<std::string>& argv, double timeout_s) const override {
    return exec::capture_output(argv, timeout_s);
  }
  std::string hostname() const override {
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
    return buf;
  }
  std::string kernel_release() const override { return uname_info().release; }
  std::string arch() const override { return uname_info().machine; }
  unsigned cores() const override { return std::thread::hardware_concurrency(); }

 private:
  static utsname uname_info() {
    utsname u{};
    ::uname(&u);
    return u;
  }
};

// The value of the first "key : value" line whose key matches, from files like /proc/cpuinfo.
std::string field(const std::string& text, std::string_view key, char sep = ':') {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto pos = line.find(sep);
    if (pos == std::string::npos) continue;
    if (util::trim(std::string_view(line).substr(0, pos)) == key)
      return std::string(util::trim(std::string_view(line).substr(pos + 1)));
  }
  return {};
}

// A fingerprint is stored with every run, and its fields come from files and
// tools perfgate does not control: a value longer than this is cut, so a
// tool printing garbage cannot make every run's row large.
constexpr std::size_t k_max_value_bytes = 256;
// More accelerators than any node holds is output that is not a device list.
constexpr std::size_t k_max_devices = 64;

std::string bounded(std::string_view value) { return std::string(value.substr(0, k_max_value_bytes)); }

}  // namespace

const MachineProbe& real_machine() {
  static const RealMachine machine;
  return machine;
}

std::string hostname() { return real_machine().hostname(); }

std::string hostname_class(const std::string& host) {
  std::string h = host.substr(0, host.find('.'));
  while (!h.empty() && (std::isdigit(static_cast<unsigned char>(h.back())) || h.back() == '-' || h.back() == '_'))
    h.pop_back();
  return h.empty() ? host : h;
}

Fingerprint machine_fingerprint(const FingerprintOptions& opts) {
  const MachineProbe& m = opts.machine ? *opts.machine : real_machine();
  nlohmann::json comparable, context;
  auto cpuinfo = m.read_file("/proc/cpuinfo");
  std::string model = field(cpuinfo, "model name");
  if (model.empty()) model = field(cpuinfo, "CPU part");  // aarch64 (Kunpeng) reports parts, not names
  comparable["cpu_model"] = bounded(model);
  comparable["cpu_cores"] = m.cores();
  comparable["arch"] = m.arch();
  auto kb = std::atof(field(m.read_file("/proc/meminfo"), "MemTotal").c_str());
  comparable["memory_gib"] = std::round(kb / (1024.0 * 1024.0));
  context["os"] = [&m] {
    auto rel = m.read_file("/etc/os-release");
    std::istringstream in(rel);
    std::string line;
    while (std::getline(in, line))
      if (line.starts_with("PRETTY_NAME=")) {
        auto v = line.substr(12);
        if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
        return bounded(v);
      }
    return std::string("unknown");
  }();
  context["kernel"] = bounded(m.kernel_release());
  auto host = bounded(m.hostname());
  context["hostname"] = host;
  comparable["hostname_class"] = hostname_class(host);

  // Ascend: driver and CANN versions from their install files, chips from npu-smi.
  auto drv = m.read_file("/usr/local/Ascend/driver/version.info");
  if (!drv.empty()) comparable["ascend_driver"] = bounded(field(drv, "Version", '='));
  for (const char* p : {"/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/ascend_toolkit_install.info",
                        "/usr/local/Ascend/ascend-toolkit/latest/x86_64-linux/ascend_toolkit_install.info"}) {
    auto info = m.read_file(p);
    if (!info.empty()) {
      comparable["cann"] = bounded(field(info, "version", '='));
      break;
    }
  }
  if (auto out = m.run_tool({"nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"}, 5)) {
    nlohmann::json gpus = nlohmann::json::array();
    std::istringstream in(*out);
    std::string line;
    while (std::getline(in, line) && gpus.size() < k_max_devices)
      if (!util::trim(line).empty()) gpus.push_back(bounded(util::trim(line)));
    comparable["gpus"] = gpus;
  }
  if (auto out = m.run_tool({"npu-smi", "info"}, 10)) {
    auto npus = sampling::npu_smi_inventory(*out);
    if (!npus.models.empty()) {
      nlohmann::json models = nlohmann::json::array();
      for (const auto& model_name : npus.models)
        if (models.size() < k_max_devices) models.push_back(bounded(model_name));
      comparable["npus"] = models;
      comparable["npu_smi_version"] = bounded(npus.tool_version);
    }
  }
  if (!opts.python.empty()) {
    if (auto out =
            m.run_tool({opts.python, "-c",
                        "import importlib.util as u, sys\n"
                        "print('python', sys.version.split()[0])\n"
                        "if u.find_spec('torch'):\n import torch; print('torch', torch.__version__)\n"
                        "if u.find_spec('torch_npu'):\n import torch_npu; print('torch_npu', torch_npu.__version__)\n"},
                       30)) {
      // Only the three lines the probe prints: an import that writes a
      // warning to stdout must not add fields (and so change the hash).
      std::istringstream in(*out);
      std::string line;
      while (std::getline(in, line)) {
        auto words = util::split_whitespace(line);
        if (words.size() == 2 && (words[0] == "python" || words[0] == "torch" || words[0] == "torch_npu"))
          comparable[words[0]] = bounded(words[1]);
      }
    }
  }
  nlohmann::json all = comparable;
  for (auto it = context.begin(); it != context.end(); ++it) all[it.key()] = it.value();
  return {all.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
          util::fnv1a_hex(comparable.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))};
}

std::vector<std::string> fingerprint_differences(const std::string& a_json, const std::string& b_json) {
  auto parse = [](const std::string& text) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    return j.is_object() ? j : nlohmann::json::object();
  };
  auto a = parse(a_json), b = parse(b_json);
  static const std::vector<std::string> k_context = {"hostname", "kernel", "os"};
  std::set<std::string> keys;
  for (auto it = a.begin(); it != a.end(); ++it) keys.insert(it.key());
  for (auto it = b.begin(); it != b.end(); ++it) keys.insert(it.key());
  std::vector<std::string> out;
  for (const auto& k : keys) {
    if (std::find(k_context.begin(), k_context.end(), k) != k_context.end()) continue;
    auto show = [&](const nlohmann::json& j) {
      if (!j.contains(k)) return std::string("(absent)");
      const auto& v = j[k];
      return v.is_string() ? v.get<std::string>() : v.dump();
    };
    if (!a.contains(k) || !b.contains(k) || a[k] != b[k])
      out.push_back(fmt::format("{}: {} -> {}", k, show(a), show(b)));
  }
  return out;
}

}  // namespace perfgate::runner
