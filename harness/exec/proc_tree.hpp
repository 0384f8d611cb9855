#pragma once
// Processes read from /proc (Linux): the one scanner and /proc/<pid>/stat
// reader of perfgate, used by the launcher (a trial's process group) and the
// proc sampler (a trial's process tree).

#include <sys/types.h>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace perfgate::exec {

// The fields of /proc/<pid>/stat perfgate reads (proc(5) numbering).
struct ProcStat {
  int pid = 0;
  int ppid = 0;                   // 4
  int pgrp = 0;                   // 5
  char state = '?';               // 3
  long long own_cpu_ticks = 0;    // 14-15: utime + stime
  long long child_cpu_ticks = 0;  // 16-17: cutime + cstime (reaped children)
  long long threads = 0;          // 20
  long long rss_pages = 0;        // 24
};

// /proc/<pid>/stat relative to an open /proc; nullopt when the process exited
// (or the line is cut short).
std::optional<ProcStat> read_proc_stat(int proc_fd, int pid);
// The same over a stat line's text (the first k_proc_stat_max_bytes of it):
// nullopt when the fields are not all there.
inline constexpr std::size_t k_proc_stat_max_bytes = 1024;
std::optional<ProcStat> parse_proc_stat(std::string_view text, int pid);

// The start of a small /proc file (at most max_bytes): nullopt when it
// cannot be opened (a kernel without it, a process that exited).
std::optional<std::string> read_proc_file(const std::string& path, std::size_t max_bytes = 4096);

// Calls visit(proc_fd, pid) for every process in /proc; false (errno set)
// when /proc cannot be read.
bool scan_proc(const std::function<void(int proc_fd, int pid)>& visit);

struct GroupUsage {
  int processes = 0;
  double rss_mb = 0;  // sum of resident set sizes
  double cpu_s = 0;   // sum of user + system time of the live members
};

// Scans /proc for members of process group `pgid`.
GroupUsage sample_group(pid_t pgid);

// VmHWM of /proc/<pid>/status (0: this process): the peak resident size of
// the program the process runs now, in MB; a process that exec'd counts
// from its exec. nullopt when it exited or the line is missing.
std::optional<double> peak_rss_mb_of(pid_t pid);
// The same over a status file's text.
std::optional<double> parse_vm_hwm_mb(std::string_view status);

// How far apart two readings of one process's RSS may be without any page
// changing hands, in MB. The kernel keeps RSS counters per CPU (Linux 6.2+;
// per thread before) and folds a CPU's share into the total only past a
// batch of max(32, 2 x online CPUs) pages, so a reading made from the
// totals (what exec copies into ru_maxrss) and one made from the exact sum
// (what /proc/PID/status shows) differ by up to that batch for each counter
// (anonymous, file, shared memory) on each CPU the process ran on. Seen on
// a 2-CPU VM under load: an exec copy of perfgate 11.0 MB read above
// perfgate's own VmHWM, so a 9.9 MB workload was charged 11.0 MB.
double rss_counter_slack_mb();

}  // namespace perfgate::exec
