#pragma once
// A scripted exec::Launcher for runner tests: instead of starting a process
// it appends scripted metric lines to the file named by PERFGATE_METRICS,
// hands scripted stdout and stderr lines to the observer, ticks a fake clock, and
// returns a scripted LaunchResult. Every LaunchSpec it receives is kept.

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "harness/exec/launcher.hpp"

namespace perfgate::test {

struct Script {
  Script() {
    result.outcome = exec::Outcome::Exited;
    result.exit_code = 0;
  }
  std::vector<std::string> stdout_lines;   // each followed by a tick
  std::vector<std::string> stderr_lines;   // each followed by a tick, after the stdout lines
  std::vector<std::string> metrics_lines;  // appended to $PERFGATE_METRICS, each followed by a tick
  double tick_s = 0.25;                    // fake time between lines
  exec::LaunchResult result;
  std::function<void()> during;  // runs while the fake process "lives"

  // Convenience: an exit code and the last lines of stderr.
  Script& exits(int code, std::string stderr_tail = {}) {
    result.outcome = exec::Outcome::Exited;
    result.exit_code = code;
    result.stderr_tail = std::move(stderr_tail);
    return *this;
  }
};

class FakeLauncher final : public exec::Launcher {
 public:
  // Chooses the script of each launch from its spec and 0-based call index.
  std::function<Script(const exec::LaunchSpec&, int)> script;
  std::vector<exec::LaunchSpec> specs;

  exec::LaunchResult launch(const exec::LaunchSpec& spec, exec::TrialObserver& obs) override {
    int call = static_cast<int>(specs.size());
    specs.push_back(spec);
    Script s = script ? script(spec, call) : Script{};
    double t = 0;
    for (const auto& line : s.stdout_lines) {
      t += s.tick_s;
      obs.on_stdout_line(line, false, t);
      obs.on_tick(t, false);
    }
    for (const auto& line : s.stderr_lines) {
      t += s.tick_s;
      obs.on_stderr_line(line, false, t);
      obs.on_tick(t, false);
    }
    std::FILE* f = nullptr;
    if (auto it = spec.env.find("PERFGATE_METRICS"); it != spec.env.end()) f = std::fopen(it->second.c_str(), "ab");
    for (const auto& line : s.metrics_lines) {
      if (f) {
        std::fputs(line.c_str(), f);
        std::fputc('\n', f);
        std::fflush(f);
      }
      t += s.tick_s;
      obs.on_tick(t, false);
    }
    if (f) std::fclose(f);
    if (s.during) s.during();
    obs.on_tick(t, true);
    exec::LaunchResult r = s.result;
    if (r.wall_s == 0) r.wall_s = t;
    return r;
  }
};

}  // namespace perfgate::test
