#include "harness/exec/process_launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <limits>
#include <thread>

#include <fmt/format.h>
// Boost.Process 1.74 offers vfork (posix::use_vfork, below) only where it
// believes the C library still declares it (POSIX before 2008); glibc does.
#ifndef BOOST_POSIX_HAS_VFORK
#define BOOST_POSIX_HAS_VFORK 1
#endif
#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <boost/process/posix.hpp>

#include "harness/exec/log_sink.hpp"
#include "harness/exec/proc_tree.hpp"
#include "harness/util/environment.hpp"
#include "harness/util/interrupt.hpp"
#include "harness/util/line_splitter.hpp"
#include "harness/util/strings.hpp"

namespace bp = boost::process;

namespace perfgate::exec {

std::string_view to_string(Outcome o) {
  switch (o) {
    case Outcome::Exited:
      return "exited";
    case Outcome::Signaled:
      return "signaled";
    case Outcome::TimedOut:
      return "timed_out";
    case Outcome::Interrupted:
      return "interrupted";
    case Outcome::FailedToStart:
      return "failed_to_start";
    case Outcome::Stopped:
      return "stopped";
  }
  return "?";
}

namespace {

// Usage samples every 50 ms in a trial's first second (every 0.5 s after),
// the first at the first wake-up (an output line) and no later than 50 ms.
// A workload smaller than perfgate that ends before any sample has no peak
// RSS measurement (Session::run).
constexpr double k_first_usage_sample_s = 0.05;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double tv_s(const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6; }

// pidfd_open(2) makes the child's exit a pollable event (Linux >= 5.3); on
// older kernels we fall back to polling waitpid on the tick.
int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

struct Stream {
  int fd = -1;
  LogSink* sink = nullptr;
  bool is_stdout = false;
};

class Session {
 public:
  Session(const LaunchSpec& spec, TrialObserver& obs, LaunchResult& res)
      : m_spec(spec),
        m_obs(obs),
        m_res(res),
        m_out(spec.stdout_path, spec.log_limit_bytes),
        m_err(spec.stderr_path, spec.log_limit_bytes) {}

  void run();

 private:
  bool start();
  // Reads what is available; returns false at EOF.
  bool drain(Stream& s);
  void sample_usage();
  void signal_group(int sig);
  bool reap(bool block);
  void sample_usage_if_due();
  void tick(bool final);
  // Ends the group: SIGTERM, wait up to grace for the main process, then SIGKILL.
  void stop_group(double grace_s);

  const LaunchSpec& m_spec;
  TrialObserver& m_obs;
  LaunchResult& m_res;
  LogSink m_out, m_err;
  util::LineSplitter m_lines;      // stdout
  util::LineSplitter m_err_lines;  // stderr: log presets read it (Python's logging writes there)
  pid_t m_pid = -1;
  int m_pidfd = -1;
  bool m_reaped = false;
  int m_status = 0;
  double m_t0 = 0;
  double m_next_tick = 0;
  double m_next_usage = 0;
  double m_polled_cpu_s = 0;
  double m_harness_peak_rss_mb = 0;  // perfgate's VmHWM when the trial started (see reap)
  double m_kernel_peak_rss_mb = 0;   // wait4's ru_maxrss, whether or not it counted
  // A sample read the workload's memory while it lived, or the kernel's peak counted (reap).
  bool m_rss_sampled = false;
  Stream m_streams[2];
};

bool Session::start() {
  std::error_code ec;
  // Close-on-exec from the start: a process another thread starts meanwhile
  // (trials side by side on a node's slots) must not inherit this trial's
  // write ends, or its output would not end when the trial does. The child
  // gets them as stdout and stderr through dup2, which clears the flag.
  int out_fds[2], err_fds[2];
  if (::pipe2(out_fds, O_CLOEXEC) != 0) {
    m_res.error = fmt::format("cannot create a pipe for the workload's output: {}", std::strerror(errno));
    return false;
  }
  if (::pipe2(err_fds, O_CLOEXEC) != 0) {
    m_res.error = fmt::format("cannot create a pipe for the workload's output: {}", std::strerror(errno));
    ::close(out_fds[0]);
    ::close(out_fds[1]);
    return false;
  }
  bp::pipe out_pipe(out_fds[0], out_fds[1]), err_pipe(err_fds[0], err_fds[1]);
  std::vector<std::string> args;
  boost::filesystem::path exe;
  if (m_spec.shell) {
    exe = "/bin/sh";
    args = {"-c", m_spec.argv.at(0)};
  } else {
    const std::string& a0 = m_spec.argv.at(0);
    if (a0.find('/') == std::string::npos) {
      auto found = util::find_on_path(a0);
      if (found) exe = *found;
      if (!found) {
        m_res.error = fmt::format("command '{}' not found on PATH", a0);
        return false;
      }
    } else {
      exe = a0;
      if (exe.is_relative()) exe = boost::filesystem::path(m_spec.cwd) / exe;
      if (::access(exe.c_str(), F_OK) != 0) {
        m_res.error = fmt::format("command '{}' does not exist (looked at {})", a0, exe.string());
        return false;
      }
      if (::access(exe.c_str(), X_OK) != 0) {
        m_res.error = fmt::format("command '{}' is not executable", exe.string());
        return false;
      }
    }
    args.assign(m_spec.argv.begin() + 1, m_spec.argv.end());
  }
  // Not the throwing form: a suite's cwd may be longer than a file name may be.
  boost::system::error_code cwd_error;
  if (!boost::filesystem::is_directory(m_spec.cwd, cwd_error)) {
    m_res.error = cwd_error ? fmt::format("working directory '{}' cannot be used: {}", m_spec.cwd, cwd_error.message())
                            : fmt::format("working directory '{}' does not exist", m_spec.cwd);
    return false;
  }
  bp::environment env;
  env.clear();
  // Longest names first: Boost.Process 1.74 compares a new name against every
  // entry so far for the name's length, reading past an entry shorter than it
  // (a heap-buffer-overflow under ASan); an entry "NAME=VALUE" of a name at
  // least as long as the new one is always long enough.
  std::vector<std::pair<std::string, std::string>> vars(m_spec.env.begin(), m_spec.env.end());
  std::stable_sort(vars.begin(), vars.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  for (const auto& [k, v] : vars) env[k] = v;

  bp::group group;
  const pid_t harness_pid = ::getpid();
  m_t0 = now_s();
  const std::string cwd = m_spec.cwd;
  // Built before fork: the child may only make system calls.
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int c : m_spec.cpus)
    if (c >= 0 && c < CPU_SETSIZE) CPU_SET(c, &cpus);
  const bool pin = !m_spec.cpus.empty();
  // vfork: the child borrows perfgate's memory until it execs, and perfgate
  // waits until it has: no copy of perfgate exists for a usage sample to
  // mistake for the workload (see reap() for the rest of that story). The
  // child makes system calls only; its error messages fit std::string's
  // inline buffer (15 characters), as Boost's own do, so nothing allocates
  // in the shared memory.
  bp::child child(exe, bp::args(args), env, bp::std_in<bp::null, bp::std_out> out_pipe, bp::std_err > err_pipe, group,
                  bp::posix::use_vfork,
                  // The harness ignores SIGPIPE; an ignored signal survives exec, so restore it.
                  bp::extend::on_exec_setup([harness_pid, &cwd, &cpus, pin](auto& exec) {
                    // Boost's start_dir ignores a failed chdir; report it as a failed start instead.
                    if (::chdir(cwd.c_str()) != 0) {
                      // Reaches the parent through Boost's shared error slot; the child must not go on to exec.
                      exec.set_error(std::error_code(errno, std::system_category()), "chdir");
                      ::_exit(127);
                    }
                    ::signal(SIGPIPE, SIG_DFL);
                    if (pin && ::sched_setaffinity(0, sizeof cpus, &cpus) != 0) {
                      exec.set_error(std::error_code(errno, std::system_category()), "cpu affinity");
                      ::_exit(127);
                    }
                    // If perfgate itself is killed (SIGKILL leaves it no chance to
                    // clean up), the workload goes with it instead of running on unobserved.
                    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
                    if (::getppid() != harness_pid) ::_exit(127);
                  }),
                  ec);
  if (ec || !child.valid()) {
    m_res.error = fmt::format("could not start '{}': {}", exe.string(), ec.message());
    return false;
  }
  m_pid = child.id();
  if (auto hwm = peak_rss_mb_of(0)) m_harness_peak_rss_mb = *hwm;
  m_obs.on_start(m_pid);
  // We reap and signal the process ourselves (wait4 gives its resource use);
  // the Boost objects must not act on it when they go out of scope.
  child.detach();
  group.detach();
  m_pidfd = open_pidfd(m_pid);
  m_streams[0] = {out_pipe.native_source(), &m_out, true};
  m_streams[1] = {err_pipe.native_source(), &m_err, false};
  out_pipe.assign_source(-1);  // we own the read ends now
  err_pipe.assign_source(-1);
  for (auto& s : m_streams) ::fcntl(s.fd, F_SETFL, ::fcntl(s.fd, F_GETFL) | O_NONBLOCK | FD_CLOEXEC);
  for (auto& s : m_streams) ::fcntl(s.fd, F_SETFD, FD_CLOEXEC);
  return true;
}

bool Session::drain(Stream& s) {
  if (s.fd < 0) return false;
  char buf[64 << 10];
  for (int rounds = 0; rounds < 16; ++rounds) {  // bounded so one flooding stream cannot starve the loop
    auto n = ::read(s.fd, buf, sizeof buf);
    if (n > 0) {
      std::string_view chunk(buf, static_cast<std::size_t>(n));
      s.sink->write(chunk);
      double t = now_s() - m_t0;
      if (s.is_stdout)
        m_lines.feed(chunk, [&](std::string_view line, bool oversized) { m_obs.on_stdout_line(line, oversized, t); });
      else
        m_err_lines.feed(chunk,
                         [&](std::string_view line, bool oversized) { m_obs.on_stderr_line(line, oversized, t); });
      continue;
    }
    if (n == 0) {
      ::close(s.fd);
      s.fd = -1;
      if (s.is_stdout)
        m_lines.finish(
            [&](std::string_view line, bool oversized) { m_obs.on_stdout_line(line, oversized, now_s() - m_t0); });
      else
        m_err_lines.finish(
            [&](std::string_view line, bool oversized) { m_obs.on_stderr_line(line, oversized, now_s() - m_t0); });
      return false;
    }
    if (errno == EINTR) continue;
    return true;  // EAGAIN: nothing more for now
  }
  return true;
}

void Session::sample_usage() {
  if (m_pid <= 0) return;
  auto u = sample_group(m_pid);
  m_res.peak_rss_mb = std::max(m_res.peak_rss_mb, u.rss_mb);
  // The main program's own high-water mark since its exec: its peak even
  // between two samples.
  auto hwm = peak_rss_mb_of(m_pid);
  if (hwm) m_res.peak_rss_mb = std::max(m_res.peak_rss_mb, *hwm);
  // A process caught between releasing its memory and becoming a zombie reads 0: no measurement.
  if (u.rss_mb > 0 || (hwm && *hwm > 0)) m_rss_sampled = true;
  m_polled_cpu_s = std::max(m_polled_cpu_s, u.cpu_s);
}

void Session::signal_group(int sig) {
  if (m_pid > 0) ::kill(-m_pid, sig);
}

bool Session::reap(bool block) {
  if (m_reaped) return true;
  rusage ru{};
  int status = 0;
  pid_t r = 0;
  do {
    r = ::wait4(m_pid, &status, block ? 0 : WNOHANG, &ru);
  } while (r < 0 && errno == EINTR);
  if (r != m_pid) return false;
  m_reaped = true;
  m_status = status;
  m_res.wall_s = now_s() - m_t0;
  // ru covers the main process and every descendant it waited for.
  m_res.cpu_s = std::max(tv_s(ru.ru_utime) + tv_s(ru.ru_stime), m_polled_cpu_s);
  // ru_maxrss is the largest of the process's memory before and after its
  // exec, and before exec it was perfgate (a vfork child has perfgate's
  // memory; a fork child a copy of it): /bin/true, 1 MB of its own, was
  // reported at 3.7-4.7 MB beside a plain perfgate and 72-75 MB beside an
  // instrumented one. So it counts only when it exceeds perfgate's own peak
  // at the start by more than the kernel's counters can disagree (CI saw a
  // 9.9 MB workload charged with an 11.0 MB perfgate's copy when the margin
  // was 0); otherwise the samples above (the group's sum and the main
  // program's high-water mark) are the measure.
  const double ru_peak_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;
  m_kernel_peak_rss_mb = ru_peak_mb;
  if (ru_peak_mb > m_harness_peak_rss_mb + rss_counter_slack_mb()) {
    m_res.peak_rss_mb = std::max(m_res.peak_rss_mb, ru_peak_mb);
    m_rss_sampled = true;
  }
  return true;
}

void Session::sample_usage_if_due() {
  const double t = now_s();
  if (m_spec.track_usage && t >= m_next_usage && !m_reaped) {
    sample_usage();
    // Dense at first so short trials get a reading, then every half second.
    m_next_usage = t + (t - m_t0 < 1.0 ? k_first_usage_sample_s : 0.5);
  }
}

void Session::tick(bool final) {
  double t = now_s();
  if (final || t >= m_next_tick) {
    m_obs.on_tick(t - m_t0, final);
    m_next_tick = t + m_spec.tick_interval_s;
  }
}

void Session::stop_group(double grace_s) {
  signal_group(SIGTERM);
  double deadline = now_s() + grace_s;
  while (!m_reaped && now_s() < deadline) {
    pollfd fds[3];
    int nfds = 0;
    for (auto& s : m_streams)
      if (s.fd >= 0) fds[nfds++] = {s.fd, POLLIN, 0};
    if (m_pidfd >= 0) fds[nfds++] = {m_pidfd, POLLIN, 0};
    int wait_ms = m_pidfd >= 0 ? 50 : 10;
    ::poll(fds, static_cast<nfds_t>(nfds), wait_ms);
    for (auto& s : m_streams) drain(s);
    reap(false);
    // After a second Ctrl-C nobody wants to wait for a graceful end.
    if (util::interrupt_count() > 1) break;
  }
  if (!m_reaped) {
    signal_group(SIGKILL);
    reap(true);
  }
}

void Session::run() {
  if (!start()) {
    m_res.outcome = Outcome::FailedToStart;
    return;
  }
  m_next_tick = m_t0 + m_spec.tick_interval_s;
  // The first sample at the first wake-up (the workload's first output,
  // often all a short one prints before it ends), and no later than 50 ms in
  // for a silent one: it used to wait for output or the next tick.
  m_next_usage = m_spec.track_usage ? m_t0 : std::numeric_limits<double>::infinity();
  const double first_usage_by = m_t0 + k_first_usage_sample_s;
  const double deadline = m_t0 + m_spec.timeout_s;
  const int wake_fd = util::interrupt_wake_fd();
  enum class End { None, Exit, Timeout, Interrupt, Stopped } end = End::None;

  while (end == End::None) {
    double t = now_s();
    double next = std::min({m_next_tick, std::max(m_next_usage, first_usage_by), deadline});
    int wait_ms = std::clamp(static_cast<int>((next - t) * 1000.0) + 1, 0, 1000);
    if (m_pidfd < 0) wait_ms = std::min(wait_ms, 5);
    pollfd fds[4];
    int nfds = 0;
    for (auto& s : m_streams)
      if (s.fd >= 0) fds[nfds++] = {s.fd, POLLIN, 0};
    const int pidfd_at = m_pidfd >= 0 ? nfds : -1;
    if (m_pidfd >= 0) fds[nfds++] = {m_pidfd, POLLIN, 0};
    if (wake_fd >= 0) fds[nfds++] = {wake_fd, POLLIN, 0};
    ::poll(fds, static_cast<nfds_t>(nfds), wait_ms);
    for (auto& s : m_streams) drain(s);
    // Before the reap: a workload that printed its last line and is ending
    // may still be sampled alive. Not once it has exited (its pidfd says
    // so): a zombie holds no memory, and the /proc scan would only add its
    // time (0.6 ms per trial here) to the trial's wall time.
    if (pidfd_at < 0 || !(fds[pidfd_at].revents & POLLIN)) sample_usage_if_due();
    if (reap(false))
      end = End::Exit;
    else if (util::interrupt_count() > 0)
      end = End::Interrupt;
    else if (now_s() >= deadline)
      end = End::Timeout;
    tick(false);
    if (end == End::None) {
      if (std::string why = m_obs.stop_request(); !why.empty()) {
        end = End::Stopped;
        m_res.error = why + "; process group terminated";
      }
    }
  }

  if (end == End::Timeout || end == End::Interrupt) {
    m_res.error = end == End::Timeout
                      ? fmt::format("timed out after {:.1f} s; process group terminated", m_spec.timeout_s)
                      : "interrupted; process group terminated";
    stop_group(util::interrupt_count() > 1 ? 0.0 : m_spec.kill_grace_s);
  }
  if (end == End::Stopped) stop_group(m_spec.kill_grace_s);
  // Whatever is left of the group (daemonised helpers, TERM-ignoring children) goes too.
  if (!m_spec.track_usage) signal_group(SIGKILL);
  auto left = m_spec.track_usage ? sample_group(m_pid) : GroupUsage{};
  if (left.rss_mb > 0) {  // what the workload left running counts towards its peak
    m_res.peak_rss_mb = std::max(m_res.peak_rss_mb, left.rss_mb);
    m_rss_sampled = true;
  }
  if (left.processes > 0) {
    m_res.leftover_processes = left.processes;
    signal_group(SIGTERM);
    double until = now_s() + std::min(1.0, m_spec.kill_grace_s);
    while (sample_group(m_pid).processes > 0 && now_s() < until) ::usleep(10000);
    signal_group(SIGKILL);
  }
  // Drain what the pipes still hold; a process outside the group may keep them open, so bound the wait.
  double drain_until = now_s() + 1.0;
  while ((m_streams[0].fd >= 0 || m_streams[1].fd >= 0) && now_s() < drain_until) {
    pollfd fds[2];
    int nfds = 0;
    for (auto& s : m_streams)
      if (s.fd >= 0) fds[nfds++] = {s.fd, POLLIN, 0};
    ::poll(fds, static_cast<nfds_t>(nfds), 50);
    for (auto& s : m_streams) drain(s);
  }
  for (auto& s : m_streams)
    if (s.fd >= 0) {
      ::close(s.fd);
      s.fd = -1;
    }
  if (m_pidfd >= 0) ::close(m_pidfd);

  if (WIFEXITED(m_status)) {
    m_res.outcome = Outcome::Exited;
    m_res.exit_code = WEXITSTATUS(m_status);
  } else if (WIFSIGNALED(m_status)) {
    m_res.outcome = Outcome::Signaled;
    m_res.signal = WTERMSIG(m_status);
  }
  if (end == End::Timeout) m_res.outcome = Outcome::TimedOut;
  if (end == End::Interrupt) m_res.outcome = Outcome::Interrupted;
  // A signal that reached the workload and perfgate together (Slurm's
  // scancel signals every process of the job) may end the workload before
  // perfgate's own handling does: stopped with perfgate, not a failure.
  // slurmstepd signals the job's processes one by one, so on a loaded node
  // perfgate's own signal can arrive after the workload's end was seen: a
  // workload ended by a stop signal waits up to 2 s for it (a workload
  // killed that way on its own costs those 2 s once).
  if (end == End::Exit && m_res.outcome == Outcome::Signaled && util::interrupt_count() == 0 &&
      (m_res.signal == SIGTERM || m_res.signal == SIGINT || m_res.signal == SIGHUP)) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (util::interrupt_count() == 0 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (m_res.outcome == Outcome::Signaled && util::interrupt_count() > 0) {
    m_res.outcome = Outcome::Interrupted;
    m_res.error = fmt::format("interrupted (the workload got signal {} with perfgate)", m_res.signal);
  }
  if (end == End::Stopped) m_res.outcome = Outcome::Stopped;

  m_out.close();
  m_err.close();
  m_res.stdout_bytes = m_out.total_bytes();
  m_res.stderr_bytes = m_err.total_bytes();
  m_res.stdout_truncated = m_out.truncated();
  m_res.stderr_truncated = m_err.truncated();
  m_res.stderr_tail = util::sanitize_utf8(m_err.last_lines(10));
  // No sample saw the workload alive and the kernel's peak cannot be told
  // apart from perfgate's own: a 0 here would be read as a measurement (and a
  // 0 MB baseline leaves the gate no percentage to judge by), so say so.
  if (m_spec.track_usage && !m_rss_sampled && m_reaped) {
    m_res.peak_rss_mb = 0;
    m_res.peak_rss_unmeasured = fmt::format(
        "peak RSS not measured: ended after {:.0f} ms, before any memory sample (the first comes with its first "
        "output, or at {:.0f} ms); the kernel's figure ({:.1f} MB) includes perfgate's own {:.1f} MB, held before "
        "exec",
        m_res.wall_s * 1e3, k_first_usage_sample_s * 1e3, m_kernel_peak_rss_mb, m_harness_peak_rss_mb);
  }
  tick(true);
}

}  // namespace

LaunchResult ProcessLauncher::launch(const LaunchSpec& spec, TrialObserver& observer) {
  LaunchResult res;
  Session s(spec, observer, res);
  s.run();
  return res;
}

}  // namespace perfgate::exec
