// Harness overhead per trial: a workload that exits at once (/bin/true),
// launched (a) directly with posix_spawn + waitpid, (b) through the
// ProcessLauncher alone, (c) as full trials of a run: store on local disk,
// log files, metric tailing, summaries. Target: (c) - (a) at most 10 ms median.

#include <benchmark/benchmark.h>

#include <spawn.h>
#include <sys/wait.h>
#include <filesystem>

#include "harness/exec/process_launcher.hpp"
#include "harness/runner/runner.hpp"
#include "harness/store/store.hpp"
#include "harness/suite/loader.hpp"
#include "harness/suite/matrix.hpp"
#include "harness/suite/plan.hpp"
#include "harness/util/environment.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace perfgate;

fs::path scratch_dir() {
  // Under the build tree: local disk, like results/ in real use.
  auto d = fs::current_path() / "bench-scratch";
  fs::create_directories(d);
  return d;
}

void BM_DirectSpawn(benchmark::State& state) {
  char arg0[] = "/bin/true";
  char* argv[] = {arg0, nullptr};
  for (auto _ : state) {
    pid_t pid = 0;
    if (posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, environ) != 0) state.SkipWithError("posix_spawn failed");
    int status = 0;
    waitpid(pid, &status, 0);
    benchmark::DoNotOptimize(status);
  }
}
BENCHMARK(BM_DirectSpawn)->Unit(benchmark::kMillisecond)->UseRealTime();

class NullObserver final : public exec::TrialObserver {
 public:
  void on_stdout_line(std::string_view, bool, double) override {}
  void on_tick(double, bool) override {}
};

void BM_LauncherOnly(benchmark::State& state) {
  auto dir = scratch_dir();
  exec::LaunchSpec spec;
  spec.argv = {"/bin/true"};
  spec.cwd = dir.string();
  spec.stdout_path = (dir / "out.log").string();
  spec.stderr_path = (dir / "err.log").string();
  spec.env = util::current_environment();
  exec::ProcessLauncher launcher;
  NullObserver obs;
  for (auto _ : state) {
    auto r = launcher.launch(spec, obs);
    if (r.outcome != exec::Outcome::Exited) state.SkipWithError("launch failed");
  }
}
BENCHMARK(BM_LauncherOnly)->Unit(benchmark::kMillisecond)->UseRealTime();

// Each iteration is one run of `trials` trials; time is reported per trial.
void BM_RunnerTrial(benchmark::State& state) {
  const int trials = static_cast<int>(state.range(0));
  auto dir = scratch_dir();
  auto db = dir / "overhead.db";
  fs::remove(db);
  auto store = store::open_sqlite_store(db.string());
  if (!store) {
    state.SkipWithError(store.error().message.c_str());
    return;
  }
  std::string yaml = "suite: overhead\ndefaults: {repeats: " + std::to_string(trials) +
                     "}\nworkloads:\n  - name: true\n    command: [/bin/true]\n";
  auto suite = suite::load_suite_text(yaml, "overhead.yaml", dir.string());
  if (!suite) {
    state.SkipWithError(suite.error().message.c_str());
    return;
  }
  auto plan = suite::make_plan(*suite, suite::expand(*suite), 1);
  runner::RunOptions ro;
  ro.artifacts_root = dir.string();
  ro.commit = "bench";
  ro.branch = "bench";
  ro.probe_python = false;
  exec::ProcessLauncher launcher;
  for (auto _ : state) {
    auto out = runner::run_plan(*suite, plan, **store, launcher, ro);
    if (!out || out->trials_ok != trials) state.SkipWithError("run failed");
  }
  state.counters["per_trial_ms"] = benchmark::Counter(
      static_cast<double>(trials), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert,
      benchmark::Counter::kIs1000);
}
BENCHMARK(BM_RunnerTrial)->Arg(20)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
