#pragma once
// Launching one trial: the seam between the runner and the operating system.
// ProcessLauncher (Boost.Process) is the real one; FakeLauncher drives tests.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace perfgate::exec {

struct LaunchSpec {
  std::vector<std::string> argv;           // argv[0] is looked up on PATH when it has no '/'
  bool shell = false;                      // argv[0] is a command line for /bin/sh -c
  std::map<std::string, std::string> env;  // the complete environment of the process
  std::string cwd;
  std::string stdout_path;  // log files; written up to log_limit_bytes each
  std::string stderr_path;
  std::uint64_t log_limit_bytes = 16ull << 20;
  double timeout_s = 1200;       // wall clock, from the start
  double kill_grace_s = 5;       // between SIGTERM and SIGKILL
  double tick_interval_s = 0.1;  // how often on_tick runs while the process lives
  // Peak RSS / CPU of the tree and the leftover scan read /proc, costing
  // about 10 us per process on the host; helpers run every second by
  // samplers (npu-smi) skip it and just kill their group at the end.
  bool track_usage = true;
  // CPUs the process (and what it starts) may run on, through
  // sched_setaffinity before exec; empty: wherever perfgate may.
  std::vector<int> cpus;
};

// Receives what the process produces while it runs, on the launcher's thread.
class TrialObserver {
 public:
  virtual ~TrialObserver() = default;
  // One complete stdout line (at most 1 MiB; longer lines are cut and flagged).
  virtual void on_stdout_line(std::string_view line, bool oversized, double t_s) = 0;
  // The same for stderr; most observers only read stdout.
  virtual void on_stderr_line(std::string_view line, bool oversized, double t_s) {
    (void)line, (void)oversized, (void)t_s;
  }
  // Once, right after the process started: samplers watch this pid's tree.
  virtual void on_start(int pid) { (void)pid; }
  // Periodically while the process runs and once after it ends (final = true).
  virtual void on_tick(double t_s, bool final) = 0;
  // Checked after every tick: non-empty ends the trial now (TERM, then KILL
  // after the grace period), with this as the reason.
  virtual std::string stop_request() { return {}; }
};

// Stopped: the observer asked for the end (a soak trial that hangs); the reason is in `error`.
enum class Outcome { Exited, Signaled, TimedOut, Interrupted, FailedToStart, Stopped };
std::string_view to_string(Outcome o);

struct LaunchResult {
  Outcome outcome = Outcome::FailedToStart;
  int exit_code = -1;  // when Exited
  int signal = 0;      // when Signaled (or the signal that ended a timed-out / interrupted one)
  std::string error;   // why it failed to start, or a note on how it was ended
  double wall_s = 0;
  double cpu_s = 0;        // user + system of the process tree
  double peak_rss_mb = 0;  // largest sum of RSS over the process tree that was observed
  // Non-empty when peak_rss_mb (then 0) is no measurement, and why: a workload
  // smaller than perfgate that ended before the first memory sample.
  std::string peak_rss_unmeasured;
  std::uint64_t stdout_bytes = 0, stderr_bytes = 0;
  bool stdout_truncated = false, stderr_truncated = false;
  int leftover_processes = 0;  // processes of the group still alive after the main one ended (killed)
  std::string stderr_tail;     // last lines of stderr, for the failure message
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual LaunchResult launch(const LaunchSpec& spec, TrialObserver& observer) = 0;
};

}  // namespace perfgate::exec
