#include <catch2/catch.hpp>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/exec/process_launcher.hpp"
#include "harness/util/interrupt.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;
using exec::LaunchSpec;
using exec::Outcome;
namespace fs = std::filesystem;

namespace {

class Recorder final : public exec::TrialObserver {
 public:
  std::vector<std::string> lines;
  std::vector<bool> oversized;
  int ticks = 0;
  int final_ticks = 0;
  bool tick_after_final = false;

  void on_stdout_line(std::string_view line, bool over, double) override {
    lines.emplace_back(line);
    oversized.push_back(over);
  }
  void on_tick(double, bool final) override {
    if (final_ticks > 0) tick_after_final = true;
    ++ticks;
    if (final) ++final_ticks;
  }
};

LaunchSpec spec_in(const test::TempDir& tmp, std::vector<std::string> argv) {
  LaunchSpec s;
  s.argv = std::move(argv);
  s.cwd = tmp.str();
  s.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}};
  s.stdout_path = (tmp / "stdout.log").string();
  s.stderr_path = (tmp / "stderr.log").string();
  s.timeout_s = 60;
  s.kill_grace_s = 1;
  return s;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Live (non-zombie) members of process group `pgid`, read from /proc independently of the harness.
int live_group_members(pid_t pgid) {
  int n = 0;
  DIR* d = ::opendir("/proc");
  if (!d) return -1;
  while (auto* e = ::readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
    std::string stat;
    std::getline(in, stat);
    auto rp = stat.rfind(')');
    if (rp == std::string::npos) continue;
    char state = 0;
    int ppid = 0, pgrp = 0;
    if (std::sscanf(stat.c_str() + rp + 1, " %c %d %d", &state, &ppid, &pgrp) != 3) continue;
    if (pgrp == pgid && state != 'Z' && state != 'X') ++n;
  }
  ::closedir(d);
  return n;
}

// Waits (bounded) for a process group to have no live member; returns the count left.
int wait_group_gone(pid_t pgid, double max_s = 5) {
  auto t0 = std::chrono::steady_clock::now();
  int n = live_group_members(pgid);
  while (n > 0 && seconds_since(t0) < max_s) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    n = live_group_members(pgid);
  }
  return n;
}

struct InterruptGuard {
  InterruptGuard() { util::reset_interrupts(); }
  ~InterruptGuard() { util::reset_interrupts(); }
};

}  // namespace

TEST_CASE("the exit code of a process is reported", "[exec]") {
  test::TempDir tmp("launch");
  Recorder rec;
  exec::ProcessLauncher l;
  auto r = l.launch(spec_in(tmp, {"sh", "-c", "exit 3"}), rec);
  CHECK(r.outcome == Outcome::Exited);
  CHECK(r.exit_code == 3);
  CHECK(r.signal == 0);
  CHECK(r.wall_s > 0);
  CHECK(rec.final_ticks == 1);
  CHECK_FALSE(rec.tick_after_final);

  auto ok = l.launch(spec_in(tmp, {"true"}), rec);
  CHECK(ok.outcome == Outcome::Exited);
  CHECK(ok.exit_code == 0);
}

TEST_CASE("a silent workload's memory is sampled 50 ms in, not at its end", "[exec]") {
  // Silent for a second, and no tick before it ends: the first sample must
  // still come at 50 ms. (It used to wait for an output line or a tick, so a
  // silent trial shorter than the tick interval reported 0 MB.)
  test::TempDir tmp("launch");
  Recorder rec;
  exec::ProcessLauncher l;
  auto spec = spec_in(tmp, {"sleep", "1"});
  spec.tick_interval_s = 30;
  auto r = l.launch(spec, rec);
  CHECK(r.outcome == Outcome::Exited);
  CHECK(r.peak_rss_unmeasured.empty());
  CHECK(r.peak_rss_mb > 0);
}

TEST_CASE("a workload that ends before the first memory sample has no peak RSS, not 0 MB", "[exec]") {
  // `true` ends within a millisecond or two, silent, long before the sample
  // at 50 ms, and its kernel peak is perfgate's (vfork). On a machine loaded enough to
  // keep it alive for 50 ms it is sampled instead; either way a peak of 0 is
  // never offered as a measurement.
  test::TempDir tmp("launch");
  Recorder rec;
  exec::ProcessLauncher l;
  for (int i = 0; i < 3; ++i) {
    auto r = l.launch(spec_in(tmp, {"true"}), rec);
    INFO("peak " << r.peak_rss_mb << " MB; " << r.peak_rss_unmeasured);
    CHECK(r.outcome == Outcome::Exited);
    if (r.peak_rss_unmeasured.empty()) {
      CHECK(r.peak_rss_mb > 0);
    } else {
      CHECK(r.peak_rss_mb == 0);
      CHECK_THAT(r.peak_rss_unmeasured, Catch::Matchers::StartsWith("peak RSS not measured: ended after "));
      CHECK_THAT(r.peak_rss_unmeasured, Catch::Matchers::Contains("before any memory sample"));
    }
  }
  // Without usage tracking (the helpers samplers run) nothing is claimed.
  auto spec = spec_in(tmp, {"true"});
  spec.track_usage = false;
  auto r = l.launch(spec, rec);
  CHECK(r.peak_rss_unmeasured.empty());
}

TEST_CASE("a process killed by a signal is Signaled with that signal", "[exec]") {
  test::TempDir tmp("launch");
  Recorder rec;
  exec::ProcessLauncher l;
  auto r = l.launch(spec_in(tmp, {"sh", "-c", "kill -9 $$"}), rec);
  CHECK(r.outcome == Outcome::Signaled);
  CHECK(r.signal == 9);
  CHECK(rec.final_ticks == 1);
}

TEST_CASE("a missing program fails to start with a message naming it", "[exec]") {
  test::TempDir tmp("launch");
  Recorder rec;
  exec::ProcessLauncher l;
  SECTION("looked up on PATH") {
    auto r = l.launch(spec_in(tmp, {"perfgate-no-such-program-xyz", "--flag"}), rec);
    CHECK(r.outcome == Outcome::FailedToStart);
    CHECK_THAT(r.error, Catch::Contains("perfgate-no-such-program-xyz"));
  }
  SECTION("given as a path") {
    auto r = l.launch(spec_in(tmp, {"./missing-dir/prog"}), rec);
    CHECK(r.outcome == Outcome::FailedToStart);
    CHECK_THAT(r.error, Catch::Contains("missing-dir/prog"));
  }
}

TEST_CASE("a file without execute permission fails to start", "[exec]") {
  test::TempDir tmp("launch");
  auto script = tmp / "job.sh";
  test::write_file(script, "#!/bin/sh\necho hi\n");
  REQUIRE(::chmod(script.c_str(), 0644) == 0);
  Recorder rec;
  exec::ProcessLauncher l;
  auto r = l.launch(spec_in(tmp, {script.string()}), rec);
  CHECK(r.outcome == Outcome::FailedToStart);
  CHECK_THAT(r.error, Catch::Contains("job.sh"));
  CHECK(rec.lines.empty());

  // The same file made executable runs, also by a path relative to cwd.
  REQUIRE(::chmod(script.c_str(), 0755) == 0);
  auto ok = l.launch(spec_in(tmp, {"./job.sh"}), rec);
  CHECK(ok.outcome == Outcome::Exited);
  CHECK(rec.lines == std::vector<std::string>{"hi"});
}

TEST_CASE("a process past its timeout is ended as TimedOut", "[exec]") {
  InterruptGuard guard;
  test::TempDir tmp("launch");
  Recorder rec;
  exec::ProcessLauncher l;
  auto spec = spec_in(tmp, {"sh", "-c", "sleep 30"});
  spec.timeout_s = 0.5;
  spec.kill_grace_s = 2;
  auto t0 = std::chrono::steady_clock::now();
  auto r = l.launch(spec, rec);
  double took = seconds_since(t0);
  CHECK(r.outcome == Outcome::TimedOut);
  CHECK(took < 15);  // far below the 30 s the command asked for
  CHECK(r.signal == SIGTERM);
  CHECK_THAT(r.error, Catch::Contains("timed out"));
  CHECK(rec.final_ticks == 1);
}

TEST_CASE("a child that ignores SIGTERM is killed with its whole group", "[exec]") {
  InterruptGuard guard;
  test::TempDir tmp("launch");
  Recorder rec;
  exec::ProcessLauncher l;
  auto spec = spec_in(tmp, {"sh", "-c", "echo $$; trap '' TERM; sleep 30 & sleep 30 & wait"});
  spec.timeout_s = 0.5;
  spec.kill_grace_s = 0.5;
  auto t0 = std::chrono::steady_clock::now();
  auto r = l.launch(spec, rec);
  CHECK(seconds_since(t0) < 15);
  CHECK(r.outcome == Outcome::TimedOut);
  CHECK(r.signal == SIGKILL);
  REQUIRE_FALSE(rec.lines.empty());
  pid_t pgid = std::stoi(rec.lines[0]);
  REQUIRE(pgid > 1);
  CHECK(wait_group_gone(pgid) == 0);
  errno = 0;
  bool any = ::kill(-pgid, 0) == 0;
  // Zombies awaiting a reaper still answer kill(-pgid, 0); live members must not exist.
  if (any)
    CHECK(live_group_members(pgid) == 0);
  else
    CHECK(errno == ESRCH);
}

TEST_CASE("processes left behind by a finished workload are killed", "[exec]") {
  InterruptGuard guard;
  test::TempDir tmp("launch");
  Recorder rec;
  exec::ProcessLauncher l;
  auto spec = spec_in(tmp, {"sh", "-c", "echo $$; trap '' TERM; sleep 30 & exit 0"});
  spec.kill_grace_s = 0.5;
  auto t0 = std::chrono::steady_clock::now();
  auto r = l.launch(spec, rec);
  CHECK(seconds_since(t0) < 15);
  CHECK(r.outcome == Outcome::Exited);
  CHECK(r.exit_code == 0);
  CHECK(r.leftover_processes >= 1);
  REQUIRE_FALSE(rec.lines.empty());
  CHECK(wait_group_gone(std::stoi(rec.lines[0])) == 0);
}

TEST_CASE("an interrupt ends the running process", "[exec]") {
  InterruptGuard guard;
  util::install_interrupt_handlers();
  test::TempDir tmp("launch");
  Recorder rec;
  exec::ProcessLauncher l;
  util::request_interrupt();
  auto spec = spec_in(tmp, {"sh", "-c", "sleep 30"});
  spec.kill_grace_s = 1;
  auto t0 = std::chrono::steady_clock::now();
  auto r = l.launch(spec, rec);
  CHECK(seconds_since(t0) < 15);
  CHECK(r.outcome == Outcome::Interrupted);
}

TEST_CASE("stdout lines reach the observer", "[exec]") {
  test::TempDir tmp("launch");
  Recorder rec;
  exec::ProcessLauncher l;
  auto r = l.launch(spec_in(tmp, {"printf", "a\\nb\\r\\n\\nPERFGATE {\"step\": 1}\\nlast"}), rec);
  CHECK(r.outcome == Outcome::Exited);
  CHECK(rec.lines == std::vector<std::string>{"a", "b", "", "PERFGATE {\"step\": 1}", "last"});
  CHECK(test::read_file(tmp / "stdout.log") == "a\nb\r\n\nPERFGATE {\"step\": 1}\nlast");
  CHECK(r.stdout_bytes == 31);
  CHECK_FALSE(r.stdout_truncated);
}

TEST_CASE("a huge stdout is capped in the log but counted in full", "[exec]") {
  test::TempDir tmp("launch");
  Recorder rec;
  exec::ProcessLauncher l;
  const std::uint64_t total = 5ull << 20;
  auto spec = spec_in(tmp, {"sh", "-c", "yes 0123456789abcdef | head -c " + std::to_string(total)});
  spec.log_limit_bytes = 1ull << 20;
  auto r = l.launch(spec, rec);
  CHECK(r.outcome == Outcome::Exited);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_bytes == total);
  CHECK(r.stdout_truncated);
  CHECK_FALSE(r.stderr_truncated);
  CHECK(rec.lines.size() == total / 17 + 1);  // every line still reached the observer

  std::string expected;
  while (expected.size() < total) expected += "0123456789abcdef\n";
  expected.resize(total);
  auto log = test::read_file(tmp / "stdout.log");
  CHECK(log.size() < (1ull << 20) + (200ull << 10));  // well under 5 MB: head, note and a bounded tail
  CHECK(log.substr(0, 1ull << 20) == expected.substr(0, 1ull << 20));
  auto note = log.find("[perfgate: output truncated at 1.0 MiB");
  REQUIRE(note != std::string::npos);
  CHECK(note == (1ull << 20) + 1);  // right after the head and a newline
  CHECK_THAT(log, Catch::Contains("of 5.0 MiB in all"));
  // After the note: the last bytes of the output.
  auto after = log.substr(log.find("follow]\n", note) + 8);
  REQUIRE_FALSE(after.empty());
  CHECK(after == expected.substr(expected.size() - after.size()));
}

TEST_CASE("environment and working directory are exactly those of the spec", "[exec]") {
  test::TempDir tmp("launch");
  fs::create_directories(tmp / "work dir");
  Recorder rec;
  exec::ProcessLauncher l;
  auto spec = spec_in(tmp, {"sh", "-c", "echo \"$PERFGATE_X\"; echo \"${HOME-unset}\"; pwd; echo \"$SPACED\""});
  spec.cwd = (tmp / "work dir").string();
  spec.env["PERFGATE_X"] = "value with spaces";
  spec.env["SPACED"] = "a=b";
  auto r = l.launch(spec, rec);
  CHECK(r.outcome == Outcome::Exited);
  REQUIRE(rec.lines.size() == 4);
  CHECK(rec.lines[0] == "value with spaces");
  CHECK(rec.lines[1] == "unset");  // nothing leaks from the harness's own environment
  CHECK(fs::equivalent(rec.lines[2], tmp / "work dir"));
  CHECK(rec.lines[3] == "a=b");
}

TEST_CASE("arguments are passed without a shell", "[exec]") {
  test::TempDir tmp("launch");
  Recorder rec;
  exec::ProcessLauncher l;
  auto r = l.launch(spec_in(tmp, {"printf", "%s|", "$HOME", "a b", "*", "'q'"}), rec);
  CHECK(r.outcome == Outcome::Exited);
  CHECK(rec.lines == std::vector<std::string>{"$HOME|a b|*|'q'|"});
}

TEST_CASE("shell: true runs the command line through /bin/sh", "[exec]") {
  test::TempDir tmp("launch");
  Recorder rec;
  exec::ProcessLauncher l;
  auto spec = spec_in(tmp, {"echo one two | tr ' ' '-'"});
  spec.shell = true;
  auto r = l.launch(spec, rec);
  CHECK(r.outcome == Outcome::Exited);
  CHECK(rec.lines == std::vector<std::string>{"one-two"});
}

TEST_CASE("stderr_tail holds the last lines of stderr", "[exec]") {
  test::TempDir tmp("launch");
  Recorder rec;
  exec::ProcessLauncher l;
  auto r = l.launch(spec_in(tmp, {"sh", "-c",
                                  "i=1; while [ $i -le 15 ]; do echo line$i >&2; i=$((i+1)); done; "
                                  "echo out; exit 1"}),
                    rec);
  CHECK(r.outcome == Outcome::Exited);
  CHECK(r.exit_code == 1);
  CHECK(r.stderr_tail == "line6\nline7\nline8\nline9\nline10\nline11\nline12\nline13\nline14\nline15");
  CHECK(rec.lines == std::vector<std::string>{"out"});  // stderr is not stdout
  auto err = test::read_file(tmp / "stderr.log");
  CHECK(err.substr(0, 6) == "line1\n");
  CHECK(r.stderr_bytes == err.size());
}

TEST_CASE("a missing working directory fails to start", "[exec]") {
  test::TempDir tmp("launch");
  Recorder rec;
  exec::ProcessLauncher l;
  auto spec = spec_in(tmp, {"true"});
  spec.cwd = (tmp / "no-such-dir").string();
  auto r = l.launch(spec, rec);
  INFO("outcome " << exec::to_string(r.outcome) << ", exit code " << r.exit_code << ", error '" << r.error << "'");
  // Running `true` in some other directory and calling it a success would be wrong.
  CHECK(r.outcome == Outcome::FailedToStart);
  CHECK_THAT(r.error, Catch::Contains("no-such-dir"));
  SECTION("a working directory longer than a file name may be: the same failure, no exception") {
    spec.cwd = (tmp / std::string(300, 'd')).string();
    r = l.launch(spec, rec);
    CHECK(r.outcome == Outcome::FailedToStart);
    CHECK_THAT(r.error, Catch::Contains("cannot be used: File name too long"));
  }
}
