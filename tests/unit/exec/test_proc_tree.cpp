#include "harness/exec/proc_tree.hpp"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

using namespace perfgate::exec;

namespace {

// vfork + exec of /bin/true, as the launcher starts workloads; its
// ru_maxrss (MB) once reaped.
double exec_true_ru_maxrss_mb() {
  pid_t pid = ::vfork();
  if (pid == 0) {
    ::execl("/bin/true", "true", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  REQUIRE(pid > 0);
  int status = 0;
  rusage ru{};
  REQUIRE(::wait4(pid, &status, 0, &ru) == pid);
  REQUIRE(WIFEXITED(status));
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

}  // namespace

TEST_CASE("VmHWM of this process covers memory it touched", "[exec]") {
  const auto before = peak_rss_mb_of(0);
  REQUIRE(before);
  // Earlier test cases in this process may have set a peak far above what is
  // resident now: 48 MB past that peak must raise it.
  const auto status = read_proc_file("/proc/self/status", 8192);
  REQUIRE(status);
  const auto rss_at = status->find("VmRSS:");
  REQUIRE(rss_at != std::string::npos);
  const double rss_mb = std::stod(status->substr(rss_at + 6)) / 1024.0;
  const auto grow_bytes = static_cast<std::size_t>((std::max(*before - rss_mb, 0.0) + 48.0) * 1024 * 1024);
  auto block = std::make_unique<char[]>(grow_bytes);
  std::memset(block.get(), 1, grow_bytes);
  const auto after = peak_rss_mb_of(0);
  REQUIRE(after);
  CHECK(*after >= *before + 40.0);
  CHECK_FALSE(peak_rss_mb_of(999999999));  // no such process
}

TEST_CASE("a program exec'd from a vfork is charged its parent's memory, within the counters' slack", "[exec]") {
  // Why the launcher takes ru_maxrss only past perfgate's own peak plus
  // rss_counter_slack_mb: /bin/true's ru_maxrss is this process's size, and
  // the two readings of that size differ by no more than the slack, while
  // other threads fault and free pages on other CPUs.
  constexpr std::size_t grow_bytes = 64u << 20;
  auto block = std::make_unique<char[]>(grow_bytes);
  std::memset(block.get(), 1, grow_bytes);
  std::atomic<bool> stop{false};
  std::vector<std::thread> churn;
  for (int t = 0; t < 2; ++t)
    churn.emplace_back([&stop] {
      while (!stop.load()) {
        std::vector<char> pages(256u << 10, 1);  // 64 pages faulted in and freed
        ::usleep(200);
      }
    });
  const double slack_mb = rss_counter_slack_mb();
  double worst_excess_mb = -1e9;
  for (int i = 0; i < 40; ++i) {
    const double ru_mb = exec_true_ru_maxrss_mb();
    const auto own_mb = peak_rss_mb_of(0);
    REQUIRE(own_mb);
    CHECK(ru_mb >= 64.0);  // the parent's memory, not /bin/true's ~1 MB
    worst_excess_mb = std::max(worst_excess_mb, ru_mb - *own_mb);
  }
  stop = true;
  for (auto& t : churn) t.join();
  INFO("ru_maxrss above this process's VmHWM by at most " << worst_excess_mb << " MB; slack " << slack_mb << " MB");
  CHECK(worst_excess_mb <= slack_mb);
  // 3 counters x 64 pages x 4 CPUs at the least: 3 MB with 4 KiB pages.
  CHECK(slack_mb >= 3.0 * 64 * 4 * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0) - 1e-9);
}

TEST_CASE("a /proc/<pid>/stat line is read by its fields, whatever the command name holds", "[exec]") {
  // Captured from `cat /proc/self/stat` on Debian 12, the name changed to
  // one holding ") " and spaces, as a process may name itself.
  const std::string line =
      "2771 (a) b (c) R 2766 2700 6108 0 -1 4194304 100 0 0 0 7 3 5 2 20 0 4 0 1825862 3133440 376 "
      "18446744073709551615 94204168679424 94204168699305 140731588886752 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
  auto s = parse_proc_stat(line, 2771);
  REQUIRE(s);
  CHECK(s->pid == 2771);
  CHECK(s->state == 'R');
  CHECK(s->ppid == 2766);
  CHECK(s->pgrp == 2700);
  CHECK(s->own_cpu_ticks == 10);   // utime 7 + stime 3
  CHECK(s->child_cpu_ticks == 7);  // cutime 5 + cstime 2
  CHECK(s->threads == 4);
  CHECK(s->rss_pages == 376);
  // Cut before field 24, no closing parenthesis, nothing: no reading.
  CHECK_FALSE(parse_proc_stat(line.substr(0, line.find(" 376")), 1));
  CHECK_FALSE(parse_proc_stat("2771 (cat R 1 2 3", 1));
  CHECK_FALSE(parse_proc_stat("", 1));
  CHECK_FALSE(parse_proc_stat(std::string(5000, ')'), 1));  // longer than any real line: its start is read
  // Found by the device_tools fuzzer: utime + stime summed past long long
  // (undefined behaviour). A used field out of range or negative is no reading.
  auto with_field = [&](int number, const std::string& value) {
    auto fields = line.substr(line.find(") R ") + 2);
    std::vector<std::string> parts;
    for (std::size_t at = 0, end; at < fields.size(); at = end + 1) {
      end = std::min(fields.find(' ', at), fields.size());
      parts.push_back(fields.substr(at, end - at));
    }
    parts[static_cast<std::size_t>(number - 3)] = value;
    std::string out = line.substr(0, line.find(") R ") + 2);
    for (const auto& p : parts) out += p + " ";
    return out;
  };
  CHECK(parse_proc_stat(with_field(14, "9223372036854775807"), 1) == std::nullopt);
  CHECK(parse_proc_stat(with_field(14, "18446744073709597842"), 1) == std::nullopt);
  CHECK(parse_proc_stat(with_field(16, "4611686018427387903"), 1) == std::nullopt);  // cutime past 2^48
  CHECK(parse_proc_stat(with_field(24, "-5"), 1) == std::nullopt);
  CHECK(parse_proc_stat(with_field(5, "4294967296"), 1) == std::nullopt);  // a pgrp past int
  REQUIRE(parse_proc_stat(with_field(14, "8"), 1));
  CHECK(parse_proc_stat(with_field(14, "8"), 1)->own_cpu_ticks == 11);
}

TEST_CASE("VmHWM is read from a status file's text", "[exec]") {
  CHECK(parse_vm_hwm_mb("Name:\tcat\nVmPeak:\t   5920 kB\nVmHWM:\t    1536 kB\nVmRSS:\t 1500 kB\n") == 1.5);
  CHECK_FALSE(parse_vm_hwm_mb("Name:\tkthreadd\nState:\tS (sleeping)\n"));  // kernel threads have none
  CHECK_FALSE(parse_vm_hwm_mb("VmHWM:\t  kB\n"));
  CHECK_FALSE(parse_vm_hwm_mb(""));
  // This process's own, through the file.
  auto own = peak_rss_mb_of(0);
  REQUIRE(own);
  CHECK(*own > 0);
}
