// CPU cost of one sample of each sampler kind, to back the claim that
// sampling at 1 Hz costs well under 1 % of one core (10 ms of CPU per second).
//
// "CPU" below is this process's CPU time per sample (all threads: the
// launcher's polling, the /proc scan, parsing). Samplers that run a tool
// also pay for the tool's own process; that is reported as the counter
// child_cpu_ms (from RUSAGE_CHILDREN), and here it is the cost of the fakes
// in tests/integration/fakes (/bin/sh + awk or cat), not of the real
// npu-smi / nvidia-smi, whose cost is the driver's and must be measured on
// the node. The pure parsers are measured alone too.

#include <benchmark/benchmark.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "harness/sampling/sampler.hpp"
#include "tests/unit/support/scoped_env.hpp"

namespace {

namespace fs = std::filesystem;
using namespace perfgate;

const std::string k_source_dir = PERFGATE_SOURCE_DIR;
const std::string k_data_dir = k_source_dir + "/tests/data/sampling/";
const std::string k_fakes_dir = k_source_dir + "/tests/integration/fakes";

std::string read_data(const std::string& name) {
  std::ifstream in(k_data_dir + name, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

using perfgate::test::ScopedEnv;

double children_cpu_s() {
  rusage ru{};
  ::getrusage(RUSAGE_CHILDREN, &ru);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
  return tv(ru.ru_utime) + tv(ru.ru_stime);
}

sampling::SamplerSpec spec_of(const std::string& kind) {
  sampling::SamplerSpec spec;
  spec.kind = kind;
  return spec;
}

// Samples `sampler` once per iteration; the tool's CPU goes into child_cpu_ms.
void run_sampler(benchmark::State& state, sampling::Sampler& sampler, int pid) {
  double child0 = children_cpu_s();
  for (auto _ : state) {
    auto r = sampler.sample(pid);
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(r->data());
  }
  state.counters["child_cpu_ms"] =
      benchmark::Counter((children_cpu_s() - child0) * 1e3 / static_cast<double>(state.iterations()));
}

int host_processes() {
  int n = 0;
  for (const auto& e : fs::directory_iterator("/proc"))
    if (std::isdigit(static_cast<unsigned char>(e.path().filename().string()[0]))) ++n;
  return n;
}

// Sleeping children of this process, so the sampled tree has range(0) more
// members (a trainer with its dataloader workers). Killed at the end.
class Children {
 public:
  explicit Children(int n) {
    for (int i = 0; i < n; ++i) {
      pid_t pid = ::fork();
      if (pid == 0) {
        ::execl("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr));
        ::_exit(127);
      }
      if (pid > 0) m_pids.push_back(pid);
    }
  }
  ~Children() {
    for (auto pid : m_pids) ::kill(pid, SIGKILL);
    for (auto pid : m_pids) ::waitpid(pid, nullptr, 0);
  }
  Children(const Children&) = delete;
  Children& operator=(const Children&) = delete;

 private:
  std::vector<pid_t> m_pids;
};

// A sample as the session takes them all trial long: the tree's members
// and new pids are read, processes already seen outside the tree are not.
void BM_ProcSample(benchmark::State& state) {
  Children children(static_cast<int>(state.range(0)));
  auto sampler = sampling::make_sampler(spec_of("proc"));
  if (!sampler) return state.SkipWithError(sampler.error().message.c_str());
  (void)(*sampler)->sample(static_cast<int>(::getpid()));  // the first, full scan
  run_sampler(state, **sampler, static_cast<int>(::getpid()));
  state.counters["host_processes"] = host_processes();
}
BENCHMARK(BM_ProcSample)->Arg(0)->Arg(16)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime();

// The first sample of a trial: every process on the host is read once.
void BM_ProcSampleFirst(benchmark::State& state) {
  for (auto _ : state) {
    auto sampler = sampling::make_sampler(spec_of("proc"));
    auto r = (*sampler)->sample(static_cast<int>(::getpid()));
    if (!r) {
      state.SkipWithError(r.error().message.c_str());
      break;
    }
    benchmark::DoNotOptimize(r->data());
  }
  // CPU / host_processes is the cost per process: what a first sample costs on a bigger host.
  state.counters["host_processes"] = host_processes();
}
BENCHMARK(BM_ProcSampleFirst)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime();

void BM_NpuSmiSample8Cards(benchmark::State& state) {
  ScopedEnv path("PATH", k_fakes_dir + ":" + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin"));
  ScopedEnv info("PERFGATE_FAKE_NPU_SMI_INFO", "npu_smi_info_910B3_8card.txt");
  ScopedEnv counter("PERFGATE_FAKE_NPU_SMI_COUNTER",
                    (fs::temp_directory_path() / "perfgate-bench-npu-smi.count").string());
  auto sampler = sampling::make_sampler(spec_of("npu-smi"));
  if (!sampler) return state.SkipWithError(sampler.error().message.c_str());
  run_sampler(state, **sampler, static_cast<int>(::getpid()));
}
BENCHMARK(BM_NpuSmiSample8Cards)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime();

void BM_NvidiaSmiSample(benchmark::State& state) {
  ScopedEnv path("PATH", k_fakes_dir + ":" + (std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin"));
  ScopedEnv fixed("PERFGATE_FAKE_NVIDIA_SMI_FIXED", "1");
  auto sampler = sampling::make_sampler(spec_of("nvidia-smi"));
  if (!sampler) return state.SkipWithError(sampler.error().message.c_str());
  run_sampler(state, **sampler, static_cast<int>(::getpid()));
}
BENCHMARK(BM_NvidiaSmiSample)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime();

void BM_CommandSample(benchmark::State& state) {
  auto spec = spec_of("command");
  spec.command = {"cat", "/proc/loadavg"};
  spec.regex = R"(^(?<load1>[0-9.]+) (?<load5>[0-9.]+))";
  auto sampler = sampling::make_sampler(spec);
  if (!sampler) return state.SkipWithError(sampler.error().message.c_str());
  run_sampler(state, **sampler, static_cast<int>(::getpid()));
}
BENCHMARK(BM_CommandSample)->Unit(benchmark::kMicrosecond)->MeasureProcessCPUTime();

void BM_ParseNpuSmiInfo8Cards(benchmark::State& state) {
  auto text = read_data("npu_smi_info_910B3_8card.txt");
  for (auto _ : state) benchmark::DoNotOptimize(sampling::parse_npu_smi_info(text));
}
BENCHMARK(BM_ParseNpuSmiInfo8Cards)->Unit(benchmark::kMicrosecond);

void BM_ParseNvidiaSmiCsv(benchmark::State& state) {
  auto text = read_data("nvidia_smi_noheader_nounits_2gpu.txt");
  for (auto _ : state) benchmark::DoNotOptimize(sampling::parse_nvidia_smi_csv(text));
}
BENCHMARK(BM_ParseNvidiaSmiCsv)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
