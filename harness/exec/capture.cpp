#include "harness/exec/capture.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include <fmt/format.h>

#include "harness/exec/process_launcher.hpp"
#include "harness/util/environment.hpp"

namespace perfgate::exec {
namespace {

class EachLine final : public TrialObserver {
 public:
  explicit EachLine(const OutputLineFn& fn) : m_fn(fn) {}
  void on_stdout_line(std::string_view line, bool cut, double) override { m_fn(line, cut); }
  void on_tick(double, bool) override {}

 private:
  const OutputLineFn& m_fn;
};

}  // namespace

bool for_each_output_line(const std::vector<std::string>& argv, double timeout_s, const OutputLineFn& on_line,
                          const std::string& cwd) {
  LaunchSpec spec;
  spec.argv = argv;
  spec.cwd = std::filesystem::absolute(cwd).string();
  spec.env = util::current_environment();
  spec.timeout_s = timeout_s;
  spec.kill_grace_s = 0.5;
  spec.log_limit_bytes = 0;
  spec.tick_interval_s = 1;
  spec.track_usage = false;  // a short helper: its /proc scans would cost more than it does
  EachLine each(on_line);
  ProcessLauncher launcher;
  auto r = launcher.launch(spec, each);
  return r.outcome == Outcome::Exited && r.exit_code == 0;
}

std::optional<std::string> capture_output(const std::vector<std::string>& argv, double timeout_s,
                                          const std::string& cwd, std::size_t max_bytes) {
  std::string out;
  bool full = false;  // once a line does not fit, later ones are left out too: no gaps
  const OutputLineFn keep = [&](std::string_view line, bool) {
    if (full || out.size() + line.size() + 1 > max_bytes) {
      full = true;
      return;
    }
    out.append(line);
    out += '\n';
  };
  if (!for_each_output_line(argv, timeout_s, keep, cwd)) return std::nullopt;
  return out;
}

ToolResult run_tool(const std::vector<std::string>& argv, double timeout_s) {
  ToolResult r;
  if (argv.empty()) {
    r.error = "no command";
    return r;
  }
  // The one PATH lookup (util::find_on_path), then execv: the launcher and
  // the samplers find programs the same way.
  const auto exe = util::find_on_path(argv.front());
  if (!exe) {
    r.error = argv.front().find('/') == std::string::npos ? fmt::format("{}: command not found on PATH", argv.front())
                                                          : fmt::format("{}: not an executable file", argv.front());
    return r;
  }
  int out_pipe[2], err_pipe[2], exec_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0 || ::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    // Its own process group: a Ctrl-C at the terminal goes to perfgate's
    // group, and must not kill the scancel that perfgate runs because of it.
    ::setpgid(0, 0);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGTERM, SIG_DFL);
    ::execv(exe->c_str(), args.data());
    int e = errno;
    (void)!::write(exec_pipe[1], &e, sizeof e);  // tells the parent why exec failed
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(exec_pipe[1]);
  if (pid < 0) {
    r.error = std::string("fork: ") + std::strerror(errno);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    ::close(exec_pipe[0]);
    return r;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* bufs[2] = {&r.out, &r.err};
  int open_fds = 2;
  bool timed_out = false;
  while (open_fds > 0) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 200)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[4096];
      ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        if (bufs[i]->size() < (1u << 20)) bufs[i]->append(buf, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) ::close(f.fd);
  // The output can end before the command does (it closed both streams and
  // went on, or poll failed): its exit is awaited up to the same deadline.
  int status = 0;
  for (;;) {
    if (timed_out) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    const pid_t got = ::waitpid(pid, &status, WNOHANG);
    if (got == pid || (got < 0 && errno != EINTR)) break;
    if (std::chrono::steady_clock::now() >= deadline)
      timed_out = true;
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  int exec_errno = 0;
  const bool exec_failed = ::read(exec_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  ::close(exec_pipe[0]);
  if (exec_failed) {
    r.error = fmt::format("{}: {}", argv[0], std::strerror(exec_errno));
    return r;
  }
  if (timed_out) {
    r.error = fmt::format("{} did not answer within {:.0f} s", argv[0], timeout_s);
    return r;
  }
  if (WIFEXITED(status)) {
    r.ran = true;
    r.exit_code = WEXITSTATUS(status);
  } else {
    r.error = fmt::format("{} was killed by signal {}", argv[0], WTERMSIG(status));
  }
  return r;
}

}  // namespace perfgate::exec
