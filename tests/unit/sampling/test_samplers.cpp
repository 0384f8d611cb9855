#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/sampling/sampler.hpp"
#include "tests/unit/support/paths.hpp"
#include "tests/unit/support/readings.hpp"
#include "tests/unit/support/scoped_env.hpp"
#include "tests/unit/support/temp_dir.hpp"

namespace s = perfgate::sampling;
namespace test = perfgate::test;
namespace fs = std::filesystem;

using perfgate::test::value;

namespace {

std::string data_path(const std::string& name) { return perfgate::test::data_dir() + "/sampling/" + name; }
std::string fakes_dir() { return perfgate::test::source_dir() + "/tests/integration/fakes"; }

using perfgate::test::ScopedEnv;

std::string path_with(const std::string& dir) {
  const char* old = std::getenv("PATH");
  return dir + ":" + (old ? old : "/usr/bin:/bin");
}

void write_script(const fs::path& p, const std::string& body) {
  test::write_file(p, "#!/bin/sh\n" + body);
  fs::permissions(p, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
}

std::unique_ptr<s::Sampler> make(const s::SamplerSpec& spec) {
  auto made = s::make_sampler(spec);
  INFO((made ? std::string() : made.error().message));
  REQUIRE(made);
  return std::move(*made);
}

s::SamplerSpec spec_of(const std::string& kind, std::vector<std::string> command = {}, const std::string& regex = "",
                       std::map<std::string, std::string> metric_names = {}, const std::string& name = "") {
  s::SamplerSpec spec;
  spec.kind = kind;
  spec.command = std::move(command);
  spec.regex = regex;
  spec.metric_names = std::move(metric_names);
  spec.name = name;
  return spec;
}

std::unique_ptr<s::Sampler> make(const std::string& kind) { return make(spec_of(kind)); }

// A child process leading its own group, killed with its group at the end.
class Child {
 public:
  explicit Child(const std::vector<const char*>& argv) {
    m_pid = ::fork();
    REQUIRE(m_pid >= 0);
    if (m_pid == 0) {
      ::setpgid(0, 0);
      std::vector<char*> args;
      for (auto a : argv) args.push_back(const_cast<char*>(a));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    ::setpgid(m_pid, m_pid);  // also from here, so the group exists before the test reads it
  }
  ~Child() {
    ::kill(-m_pid, SIGKILL);
    ::kill(m_pid, SIGKILL);
    int status = 0;
    ::waitpid(m_pid, &status, 0);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  int pid() const { return m_pid; }

 private:
  pid_t m_pid = -1;
};

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// A process's CPU seconds (user + system) as /proc/PID/stat says, read by the
// test itself; and the steady clock in seconds.
double cpu_s_of(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto fields = stat.substr(stat.rfind(')') + 2);  // after "pid (comm) "
  std::istringstream rest(fields);
  std::string skip;
  for (int i = 3; i < 14; ++i) rest >> skip;  // state .. cmajflt: fields 3-13
  long long utime = 0, stime = 0;
  rest >> utime >> stime;
  return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}
double steady_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

TEST_CASE("sampler kinds and unknown kinds", "[sampling]") {
  CHECK(s::sampler_kinds() == std::vector<std::string>{"proc", "npu-smi", "nvidia-smi", "command", "host"});
  for (const auto& k : {"proc", "npu-smi", "nvidia-smi"}) {
    auto made = s::make_sampler(spec_of(k));
    REQUIRE(made);
    CHECK((*made)->name() == k);
  }
  auto bad = s::make_sampler(spec_of("npu_smi"));
  REQUIRE_FALSE(bad);
  CHECK(bad.error().kind == perfgate::ErrorKind::Input);
  CHECK_THAT(bad.error().message, Catch::Contains("unknown sampler 'npu_smi'") && Catch::Contains("npu-smi"));
}

TEST_CASE("proc sampler: a sleeping child has memory and a thread; CPU from the second sample", "[sampling]") {
  Child child({"/bin/sleep", "30"});
  // Between fork and exec the child may have no resident pages of its own yet.
  sleep_ms(100);
  auto sampler = make("proc");
  auto first = sampler->sample(child.pid());
  REQUIRE(first);
  REQUIRE(value(*first, "host.rss_mb"));
  CHECK(*value(*first, "host.rss_mb") > 0);
  CHECK(value(*first, "host.threads") >= 1);
  CHECK_FALSE(value(*first, "host.cpu_pct"));  // no interval yet
  sleep_ms(50);
  auto second = sampler->sample(child.pid());
  REQUIRE(second);
  REQUIRE(value(*second, "host.cpu_pct"));
  CHECK(*value(*second, "host.cpu_pct") >= 0);
  CHECK(*value(*second, "host.cpu_pct") < 50);  // sleep(1) does not spin
}

TEST_CASE("proc sampler: a busy child shows CPU use", "[sampling]") {
  // The share of a CPU the child got is whatever the machine's load left it
  // (100 % on an idle core, 17 % beside eight busy loops on two): the sampler
  // must report that share, so the test measures it too, side by side, from
  // the child's own CPU time over the same interval.
  Child child({"/bin/sh", "-c", "while :; do :; done"});
  auto sampler = make("proc");
  const double cpu0 = cpu_s_of(child.pid()), t0 = steady_s();
  REQUIRE(sampler->sample(child.pid()));
  const double t0_after = steady_s();
  sleep_ms(400);
  const double t1 = steady_s();
  auto r = sampler->sample(child.pid());
  const double cpu1 = cpu_s_of(child.pid()), t1_after = steady_s();
  REQUIRE(r);
  REQUIRE(value(*r, "host.cpu_pct"));
  const double pct = *value(*r, "host.cpu_pct");
  // The sampler's interval lies within [t0, t1_after] and holds [t0_after, t1];
  // CPU time comes in clock ticks (10 ms), one of which may fall either side
  // of each read.
  const double tick_s = 1.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double lowest = 100.0 * std::max(0.0, cpu1 - cpu0 - 4 * tick_s) / (t1_after - t0);
  const double highest = 100.0 * (cpu1 - cpu0 + 4 * tick_s) / (t1 - t0_after);
  INFO("child CPU " << cpu1 - cpu0 << " s over " << t1 - t0_after << "-" << t1_after - t0 << " s");
  CHECK(cpu1 - cpu0 > 0);  // it ran
  CHECK(pct >= lowest);
  CHECK(pct <= highest);
  CHECK(pct <= 100.0 * (1 + 2 * tick_s / (t1 - t0_after)));  // one thread: at most one CPU, give or take a tick
}

TEST_CASE("proc sampler: the whole tree counts, children born after the first sample too", "[sampling]") {
  Child child({"/bin/sh", "-c", "/bin/sleep 0.3; /bin/sleep 30 & /bin/sleep 30 & wait"});
  auto sampler = make("proc");
  auto first = sampler->sample(child.pid());
  REQUIRE(first);
  CHECK(value(*first, "host.threads") <= 2);  // sh and the short sleep at most
  double threads = 0, rss_mb = 0;
  for (int i = 0; i < 300 && threads != 3; ++i) {
    auto r = sampler->sample(child.pid());
    REQUIRE(r);
    threads = value(*r, "host.threads").value_or(0);
    rss_mb = value(*r, "host.rss_mb").value_or(0);
    sleep_ms(10);
  }
  CHECK(threads == 3);  // sh and two sleeps, one thread each
  CHECK(rss_mb > 0);
}

TEST_CASE("proc sampler: a process that is gone gives no readings, a bad pid an error", "[sampling]") {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(0);
  int status = 0;
  ::waitpid(pid, &status, 0);
  auto sampler = make("proc");
  auto r = sampler->sample(pid);
  REQUIRE(r);
  CHECK(r->empty());
  auto bad = sampler->sample(0);
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message, Catch::Contains("0 is not a process id"));
}

TEST_CASE("proc sampler: a tree that exited and awaits its reaper has no memory readings, only its CPU", "[sampling]") {
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(0);
  // Not reaped yet: a zombie, as a trial is between its exit and the launcher's waitpid.
  for (int i = 0; i < 200; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    if (line.find(") Z ") != std::string::npos) break;
    sleep_ms(5);
  }
  auto sampler = make("proc");
  auto r = sampler->sample(pid);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(r);
  CHECK_FALSE(value(*r, "host.rss_mb"));
  CHECK_FALSE(value(*r, "host.threads"));
}

TEST_CASE("host sampler: what loads the machine, and device processes that are not the trial's", "[sampling]") {
  // Stand-ins print a process table naming the trial's own pid and others;
  // they use shell builtins only, so PATH can hold nothing else (a real
  // npu-smi or nvidia-smi must not answer here).
  Child child({"/bin/sleep", "30"});
  sleep_ms(100);
  test::TempDir tmp("host");
  const fs::path tools = tmp / "tools", none = tmp / "none";
  fs::create_directories(tools);
  fs::create_directories(none);
  const std::string me = std::to_string(child.pid());
  // A tool that prints a file, with builtins only.
  auto prints = [](const fs::path& tool, const fs::path& file, const std::string& text) {
    test::write_file(file, text);
    write_script(tool, "while IFS= read -r l; do printf '%s\\n' \"$l\"; done < " + file.string() + "\n");
  };
  const std::string header =
      "| NPU     Chip              | Process id    | Process name             | Process memory(MB) |\n";
  prints(tools / "npu-smi", tmp / "npu.txt",
         header + "| 0       0                 | " + me + "        | python3                  | 17400 |\n" +
             "| 1       0                 | 124528        | python3                  | 17400 |\n");
  // One sample of the trial's tree by a fresh host sampler, with only `dir` on PATH.
  auto sample_with = [&](const fs::path& dir) {
    ScopedEnv path("PATH", dir.string());
    auto r = make("host")->sample(child.pid());
    REQUIRE(r);
    return *r;
  };

  SECTION("neither tool on PATH: no device reading, the rest is there") {
    auto r = sample_with(none);
    CHECK_FALSE(value(r, "host.device_foreign_procs"));
    REQUIRE(value(r, "host.probe_ms"));
    CHECK(*value(r, "host.probe_ms") > 0);
    REQUIRE(value(r, "host.load1"));
    CHECK(*value(r, "host.load1") >= 0);
    REQUIRE(value(r, "host.wakeup_late_ms"));
    CHECK(*value(r, "host.wakeup_late_ms") >= 0);
  }
  SECTION("npu-smi lists the trial's process and one other") {
    ScopedEnv path("PATH", tools.string());
    auto sampler = make("host");
    auto r = sampler->sample(child.pid());
    REQUIRE(r);
    CHECK(value(*r, "host.device_foreign_procs") == 1);
    // Before the trial (no tree yet) every listed process is another's.
    auto before = sampler->sample(0);
    REQUIRE(before);
    CHECK(value(*before, "host.device_foreign_procs") == 2);
  }
  SECTION("npu-smi and nvidia-smi both answer: their lists add up") {
    prints(tools / "nvidia-smi", tmp / "gpu.txt",
           me + ", 00000000:17:00.0\n31337, 00000000:65:00.0\n31338, 00000000:65:00.0\n");
    CHECK(value(sample_with(tools), "host.device_foreign_procs") == 3);
  }
  SECTION("a tool that fails gives no reading (not 0: the devices may be busy), nor an error") {
    write_script(tools / "npu-smi", "echo 'dcmi module initialize failed' >&2\nexit 1\n");
    auto r = sample_with(tools);
    CHECK_FALSE(value(r, "host.device_foreign_procs"));
    CHECK(value(r, "host.probe_ms"));
  }
  SECTION("nvidia-smi with no compute process prints nothing: 0 others") {
    fs::remove(tools / "npu-smi");
    write_script(tools / "nvidia-smi", "exit 0\n");
    CHECK(value(sample_with(tools), "host.device_foreign_procs") == 0);
  }
}

TEST_CASE("npu-smi sampler reads the fake npu-smi", "[sampling]") {
  test::TempDir tmp("npusmi");
  ScopedEnv path("PATH", path_with(fakes_dir()));
  ScopedEnv counter("PERFGATE_FAKE_NPU_SMI_COUNTER", (tmp / "count").string());
  auto sampler = make("npu-smi");

  SECTION("fixed output: the readings of the table") {
    ScopedEnv fixed("PERFGATE_FAKE_NPU_SMI_FIXED", "1");
    auto r = sampler->sample(::getpid());
    REQUIRE(r);
    auto expected = s::parse_npu_smi_info(test::read_file(data_path("npu_smi_info_910B2C_with_procs.txt")));
    REQUIRE(r->size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
      CHECK((*r)[i].metric == expected[i].metric);
      CHECK((*r)[i].value == expected[i].value);
    }
  }
  SECTION("eight cards, HBM use changing from call to call") {
    ScopedEnv info("PERFGATE_FAKE_NPU_SMI_INFO", "npu_smi_info_910B3_8card.txt");
    auto a = sampler->sample(::getpid());
    auto b = sampler->sample(::getpid());
    REQUIRE(a);
    REQUIRE(b);
    REQUIRE(value(*a, "device.7.hbm_used_mb"));
    REQUIRE(value(*b, "device.7.hbm_used_mb"));
    CHECK(value(*a, "device.7.hbm_used_mb") != value(*b, "device.7.hbm_used_mb"));
    CHECK(*value(*b, "device.7.hbm_used_mb") >= 58765);
    CHECK(value(*a, "device.7.power_w") == 352.5);
  }
}

TEST_CASE("npu-smi sampler: missing binary, failure, unreadable output", "[sampling]") {
  test::TempDir tmp("npusmi");
  auto sampler = make("npu-smi");
  SECTION("not on PATH") {
    ScopedEnv path("PATH", tmp.str());
    auto r = sampler->sample(::getpid());
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("npu-smi not found on PATH"));
  }
  SECTION("exits with an error") {
    write_script(tmp / "npu-smi", "echo 'dcmi module initialize failed. ret is -8005' >&2\nexit 1\n");
    ScopedEnv path("PATH", path_with(tmp.str()));
    auto r = sampler->sample(::getpid());
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("`npu-smi info` failed"));
  }
  SECTION("prints something that is not a device table") {
    write_script(tmp / "npu-smi", "echo\necho 'dcmi module initialize failed. ret is -8005'\necho second line\n");
    ScopedEnv path("PATH", path_with(tmp.str()));
    auto r = sampler->sample(::getpid());
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("`npu-smi info`") &&
                                      Catch::Contains("first line: 'dcmi module initialize failed. ret is -8005'"));
  }
  SECTION("prints forever") {
    // A table row without end, as a wedged driver tool might: the sample keeps
    // at most 1 MiB, ends at the tool's 5 s timeout, and says so.
    write_script(tmp / "npu-smi", "exec yes '| 0     910B3     | OK  | 93.7  45  0 / 0 |'\n");
    ScopedEnv path("PATH", path_with(tmp.str()));
    const auto started = std::chrono::steady_clock::now();
    auto r = sampler->sample(::getpid());
    const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("`npu-smi info` failed") && Catch::Contains("within 5 s"));
    CHECK(took_s < 30);  // bounded by the timeout (and its kill), not by the output
  }
}

TEST_CASE("nvidia-smi sampler reads the fake nvidia-smi", "[sampling]") {
  test::TempDir tmp("nvsmi");
  auto sampler = make("nvidia-smi");
  SECTION("two GPUs") {
    ScopedEnv path("PATH", path_with(fakes_dir()));
    ScopedEnv gpus("PERFGATE_FAKE_GPUS", "2");
    ScopedEnv counter("PERFGATE_FAKE_NVIDIA_SMI_COUNTER", (tmp / "count").string());
    auto r = sampler->sample(::getpid());
    REQUIRE(r);
    CHECK(value(*r, "device.0.util_pct") == 1);
    CHECK(value(*r, "device.1.util_pct") == 11);
    CHECK(value(*r, "device.0.memory_total_mb") == 97887);
    CHECK(value(*r, "device.0.power_w") == 91.74);
    CHECK(value(*r, "device.1.temp_c") == 36);
    CHECK(value(*r, "device.0.sm_freq_mhz") == 2430);
    REQUIRE(value(*r, "device.0.memory_used_mb"));
    CHECK(*value(*r, "device.0.memory_used_mb") > 1533);
  }
  SECTION("a captured fixture printed by a one-line fake") {
    write_script(tmp / "nvidia-smi", "exec cat '" + data_path("nvidia_smi_noheader_nounits_2gpu.txt") + "'\n");
    ScopedEnv path("PATH", path_with(tmp.str()));
    auto r = sampler->sample(::getpid());
    REQUIRE(r);
    CHECK(value(*r, "device.0.power_w") == 563.2);
    CHECK_FALSE(value(*r, "device.1.power_w"));
  }
  SECTION("not on PATH") {
    ScopedEnv path("PATH", tmp.str());
    auto r = sampler->sample(::getpid());
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("nvidia-smi not found on PATH"));
  }
  SECTION("no GPU in the output") {
    write_script(tmp / "nvidia-smi", "echo 'No devices were found'\n");
    ScopedEnv path("PATH", path_with(tmp.str()));
    auto r = sampler->sample(::getpid());
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message,
               Catch::Contains("`nvidia-smi --query-gpu`") && Catch::Contains("first line: 'No devices were found'"));
  }
}

TEST_CASE("command sampler: named groups feed metrics", "[sampling]") {
  test::TempDir tmp("cmd");
  write_script(tmp / "probe", "echo 'warming up'\necho 'queue=12 lat=3.5ms'\necho 'queue=99 lat=9ms'\n");
  auto spec = spec_of("command", {(tmp / "probe").string()}, R"(queue=(?<queue_depth>\d+) lat=(?P<lat>[0-9.]+)ms)",
                      {{"lat", "latency_ms"}}, "probe");
  auto sampler = make(spec);
  CHECK(sampler->name() == "probe");
  auto r = sampler->sample(::getpid());
  REQUIRE(r);
  CHECK(r->size() == 2);
  CHECK(value(*r, "queue_depth") == 12);  // the first line that matched
  CHECK(value(*r, "latency_ms") == 3.5);  // renamed by metric_names
}

TEST_CASE("command sampler: plain groups by number, escapes and classes are not groups", "[sampling]") {
  SECTION("metric_names maps group numbers") {
    auto spec = spec_of("command", {"echo", "7 42"}, R"((\d+) (\d+))", {{"2", "second"}});
    auto sampler = make(spec);
    CHECK(sampler->name() == "echo");
    auto r = sampler->sample(::getpid());
    REQUIRE(r);
    CHECK(r->size() == 1);
    CHECK(value(*r, "second") == 42);
  }
  SECTION("the suite's metrics list (by number) names a named group too") {
    auto spec = spec_of("command", {"echo", "a=1 b=2"}, R"(a=(?<a>\d) b=(\d))", {{"1", "first"}, {"2", "second"}});
    auto r = make(spec)->sample(::getpid());
    REQUIRE(r);
    CHECK(r->size() == 2);
    CHECK(value(*r, "first") == 1);
    CHECK(value(*r, "second") == 2);
  }
  SECTION("\\( [(] and (?: do not shift the group numbers") {
    auto spec = spec_of("command", {"echo", "(1) (x2 y3"}, R"(\((?<a>\d)\) [(](?:x)(?<b>\d) (y)(?<c>\d))");
    auto r = make(spec)->sample(::getpid());
    REQUIRE(r);
    CHECK(value(*r, "a") == 1);
    CHECK(value(*r, "b") == 2);
    CHECK(value(*r, "c") == 3);
  }
  SECTION("a group that matched no number is left out") {
    auto spec = spec_of("command", {"echo", "load: 0.52 state: busy"}, R"(load: (?<load>\S+) state: (?<state>\S+))");
    auto r = make(spec)->sample(::getpid());
    REQUIRE(r);
    CHECK(value(*r, "load") == 0.52);
    CHECK_FALSE(value(*r, "state"));
  }
}

TEST_CASE("command sampler over the fake npu-smi's key/value output", "[sampling]") {
  ScopedEnv path("PATH", path_with(fakes_dir()));
  // The first Temperature(C) line is the chip's (46); the MCU's (38) comes later.
  auto spec = spec_of("command", {"npu-smi", "info", "-t", "common", "-i", "3"},
                      R"(^\s*(?:Temperature\(C\)\s*:\s*(?<temp_c>\d+)|NPU ID\s*:\s*(?<npu>\d+)))",
                      {{"temp_c", "device.3.temp_c"}});
  auto r = make(spec)->sample(::getpid());
  REQUIRE(r);
  CHECK(value(*r, "device.3.temp_c") == 46);
  CHECK(value(*r, "npu") == 3);  // the fake answers as the NPU asked for

  // docs/suite-format.md's example: the AI core's current clock.
  auto clock = make(spec_of("command", {"npu-smi", "info", "-t", "common", "-i", "0"},
                            R"(Aicore curFreq\(MHZ\)\s*:\s*(\d+))", {{"1", "device.0.aicore_freq_mhz"}}))
                   ->sample(::getpid());
  REQUIRE(clock);
  CHECK(value(*clock, "device.0.aicore_freq_mhz") == 800);
}

TEST_CASE("command sampler: suite mistakes are input errors", "[sampling]") {
  auto error_of = [](std::vector<std::string> command, const std::string& regex,
                     std::map<std::string, std::string> metric_names = {}) {
    auto made = s::make_sampler(spec_of("command", std::move(command), regex, std::move(metric_names)));
    REQUIRE_FALSE(made);
    CHECK(made.error().kind == perfgate::ErrorKind::Input);
    return made.error().message;
  };
  CHECK_THAT(error_of({}, "(?<a>x)"), Catch::Contains("'command'"));
  CHECK_THAT(error_of({"echo"}, ""), Catch::Contains("'regex' is missing"));
  CHECK_THAT(error_of({"echo"}, "(?<a>[0-9"), Catch::Contains("does not compile"));
  CHECK_THAT(error_of({"echo"}, R"((\d+))"), Catch::Contains("feeds no metric"));
  CHECK_THAT(error_of({"echo"}, R"((?<latency>\d+))", {{"latncy", "x"}}),
             Catch::Contains("'latncy'") && Catch::Contains("did you mean 'latency'"));
  CHECK_THAT(error_of({"echo"}, R"((\d+))", {{"1", "a"}, {"2", "b"}}),
             Catch::Contains("group 2") && Catch::Contains("has 1 group"));
  CHECK_THAT(error_of({"echo"}, R"((?<a>\d)(?<a>\d))"), Catch::Contains("used twice"));
  CHECK_THAT(error_of({"echo"}, R"((?<a>\d)(?P=a))"), Catch::Contains("not supported"));
  CHECK_THAT(error_of({"echo"}, R"((?<1a>\d))"), Catch::Contains("not a valid group name"));

  // With a source location (a suite file), messages start with it.
  auto spec = spec_of("command", {"echo"}, "(");
  spec.loc.file = "suites/x.yaml";
  spec.loc.line = 12;
  spec.loc.column = 9;
  auto made = s::make_sampler(spec);
  REQUIRE_FALSE(made);
  CHECK_THAT(made.error().message, Catch::StartsWith(spec.loc.str() + ": command sampler 'echo'"));
}

TEST_CASE("command sampler: missing program and unmatched output are errors naming them", "[sampling]") {
  SECTION("missing program") {
    auto spec = spec_of("command", {"perfgate-no-such-tool"}, R"((?<a>\d+))", {}, "probe");
    auto r = make(spec)->sample(::getpid());
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("perfgate-no-such-tool not found on PATH"));
  }
  SECTION("output without a match") {
    auto spec = spec_of("command", {"echo", "nothing to see"}, R"(value=(?<a>\d+))");
    auto r = make(spec)->sample(::getpid());
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("`echo nothing to see`") && Catch::Contains("value=(?<a>\\d+)") &&
                                      Catch::Contains("first line: 'nothing to see'"));
  }
  SECTION("lines of any length past any amount of output; a line over 1 MiB is counted, not matched") {
    // 2 MB of other lines first: the whole output was once capped at 1 MiB
    // and later lines, matching or not, were left out without a word.
    test::TempDir tmp("cmd-long");
    write_script(tmp / "probe",
                 "python3 -c \"import sys\n"
                 "for _ in range(2000): print('x' * 1000)\n"
                 "print('y' * 1500000)\n"
                 "print('pad ' * 250000 + 'val=42')\n\"\n");
    auto sampler = make(spec_of("command", {(tmp / "probe").string()}, R"(val=(?<val>\d+))"));
    CHECK(sampler->note().empty());
    auto r = sampler->sample(::getpid());
    REQUIRE(r);
    CHECK(value(*r, "val") == 42);  // on a line of 1,000,006 bytes, after 3.5 MB
    // The 1.5 MB line was skipped although the sample found its metric: the note says so.
    CHECK_THAT(sampler->note(), Catch::Contains("1 line of the output of `" + (tmp / "probe").string() +
                                                "` was "
                                                "longer than 1 MiB, cut and not matched (in 1 sample)"));
    REQUIRE(sampler->sample(::getpid()));
    CHECK_THAT(sampler->note(), Catch::Contains("2 lines of the output of") && Catch::Contains("(in 2 samples)"));

    auto none = make(spec_of("command", {(tmp / "probe").string()}, R"(nothing=(?<n>\d+))"))->sample(::getpid());
    REQUIRE_FALSE(none);
    CHECK_THAT(none.error().message,
               Catch::Contains("(1 of its 2002 lines was longer than 1 MiB, cut and not matched)"));
  }
  SECTION("a program that fails") {
    auto spec = spec_of("command", {"false"}, R"((?<a>\d+))");
    auto r = make(spec)->sample(::getpid());
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("`false` failed"));
  }
}
