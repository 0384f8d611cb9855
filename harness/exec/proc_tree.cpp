#include "harness/exec/proc_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include <fmt/format.h>

namespace perfgate::exec {

std::optional<ProcStat> read_proc_stat(int proc_fd, int pid) {
  char path[32];
  std::snprintf(path, sizeof path, "%d/stat", pid);
  int fd = ::openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;  // exited between readdir and open
  char buf[k_proc_stat_max_bytes];
  auto n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  if (n <= 0) return std::nullopt;
  return parse_proc_stat(std::string_view(buf, static_cast<std::size_t>(n)), pid);
}

std::optional<ProcStat> parse_proc_stat(std::string_view text, int pid) {
  // strrchr needs a terminated string: the text is copied (at most the
  // bytes a real stat line can have) and read there.
  char buf[k_proc_stat_max_bytes + 1];
  const std::size_t n = std::min(text.size(), k_proc_stat_max_bytes);
  std::memcpy(buf, text.data(), n);
  buf[n] = '\0';
  // The command name sits in parentheses and may itself hold ") ".
  char* p = std::strrchr(buf, ')');
  if (!p || p[1] != ' ') return std::nullopt;
  p += 2;
  ProcStat s;
  s.pid = pid;
  s.state = *p;
  // The fields perfgate reads are counts and ids, never negative; anything
  // else (a garbled line) is no reading rather than a wrapped sum.
  long long field[25] = {};
  int idx = 3;
  for (char* q = p; *q && idx <= 24; ++idx) {
    while (*q == ' ') ++q;
    char* end = q;
    while (*end && *end != ' ' && *end != '\n') ++end;
    if (idx != 3) {
      auto [stop, ec] = std::from_chars(q, end, field[idx]);
      if (ec != std::errc() || stop == q) field[idx] = -1;  // unreadable: refused below if it is one we use
    }
    q = end;
  }
  if (idx <= 24) return std::nullopt;
  // 2^48: 89,000 years of ticks at 100 Hz, an exbibyte of pages; callers
  // add these up over a tree's processes, which stays far from overflow.
  constexpr long long k_int_max = std::numeric_limits<int>::max();
  constexpr long long k_count_max = 1LL << 48;
  for (int used : {4, 5, 14, 15, 16, 17, 20, 24})
    if (field[used] < 0 || field[used] > (used <= 5 ? k_int_max : k_count_max)) return std::nullopt;
  s.ppid = static_cast<int>(field[4]);
  s.pgrp = static_cast<int>(field[5]);
  s.own_cpu_ticks = field[14] + field[15];
  s.child_cpu_ticks = field[16] + field[17];
  s.threads = field[20];
  s.rss_pages = field[24];
  return s;
}

bool scan_proc(const std::function<void(int proc_fd, int pid)>& visit) {
  int proc_fd = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc_fd < 0) return false;
  DIR* dir = ::fdopendir(proc_fd);
  if (!dir) {
    int saved = errno;
    ::close(proc_fd);
    errno = saved;
    return false;
  }
  while (auto* e = ::readdir(dir)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    visit(proc_fd, std::atoi(e->d_name));
  }
  ::closedir(dir);  // closes proc_fd too
  return true;
}

GroupUsage sample_group(pid_t pgid) {
  GroupUsage u;
  static const long page = ::sysconf(_SC_PAGESIZE);
  static const long ticks = ::sysconf(_SC_CLK_TCK);
  scan_proc([&](int proc_fd, int pid) {
    auto st = read_proc_stat(proc_fd, pid);
    if (!st || st->pgrp != pgid || st->state == 'Z') return;  // zombies hold nothing and cannot be killed
    ++u.processes;
    u.rss_mb += static_cast<double>(st->rss_pages) * static_cast<double>(page) / (1024.0 * 1024.0);
    u.cpu_s += static_cast<double>(st->own_cpu_ticks) / static_cast<double>(ticks);
  });
  return u;
}

std::optional<std::string> read_proc_file(const std::string& path, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text(max_bytes, '\0');
  std::size_t have = 0;
  for (ssize_t got; have < max_bytes && (got = ::read(fd, text.data() + have, max_bytes - have)) != 0;) {
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    have += static_cast<std::size_t>(got);
  }
  ::close(fd);
  text.resize(have);
  return text;
}

std::optional<double> peak_rss_mb_of(pid_t pid) {
  // VmHWM sits in the first 2 KB of the file; 8 KB holds all of it.
  auto status = read_proc_file(pid > 0 ? fmt::format("/proc/{}/status", pid) : std::string("/proc/self/status"), 8192);
  if (!status) return std::nullopt;
  return parse_vm_hwm_mb(*status);
}

std::optional<double> parse_vm_hwm_mb(std::string_view status) {
  constexpr std::string_view key = "VmHWM:";
  for (std::size_t at = 0; at < status.size();) {
    auto end = status.find('\n', at);
    if (end == std::string_view::npos) end = status.size();
    auto line = status.substr(at, end - at);
    at = end + 1;
    if (!line.starts_with(key)) continue;
    line.remove_prefix(key.size());
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    unsigned long long kb = 0;
    auto [rest, ec] = std::from_chars(line.data(), line.data() + line.size(), kb);
    if (ec != std::errc() || rest == line.data()) return std::nullopt;
    return static_cast<double>(kb) / 1024.0;
  }
  return std::nullopt;
}

double rss_counter_slack_mb() {
  static const double slack_mb = [] {
    const long online = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    long ran_on = online;  // the CPUs perfgate's threads may run on bound the CPUs holding a share
    if (::sched_getaffinity(0, sizeof allowed, &allowed) == 0) ran_on = std::min<long>(online, CPU_COUNT(&allowed));
    // Per-thread caches (before Linux 6.2) hold up to 64 events each; four threads is what perfgate runs.
    const long batch_pages = std::max(64L, 2 * online);
    const long counters = 3;
    const double pages = static_cast<double>(counters * batch_pages * std::max(ran_on, 4L));
    return pages * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
  }();
  return slack_mb;
}

}  // namespace perfgate::exec
