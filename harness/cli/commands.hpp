#pragma once
// Subcommand handlers. Each has a setup (declares its options on a CLI11
// subcommand, writing into State) and a run (does the work, returns the exit code).

#include <memory>
#include <string>
#include <vector>

#include "harness/model/plan.hpp"
#include "harness/model/suite.hpp"
#include "harness/runner/runner.hpp"
#include "harness/store/store.hpp"
#include "harness/util/error.hpp"

namespace CLI {
class App;
}

namespace perfgate::cli {

struct Globals {
  std::string db_path = "results/perfgate.db";
  std::string db_timeout = "10s";
  // How perfgate was invoked, shell-quoted, credentials in URLs masked: stored with runs.
  std::string command_line;
};

// Options of every subcommand live here; each uses its own part.
struct State {
  Globals globals;
  // run
  std::string suite_path;
  std::vector<std::string> sets, onlys, tags, profiles;
  std::string commit, branch, artifacts_dir;
  long long seed = -1;
  bool dry_run = false;
  bool quiet = false;
  // runs / show
  std::string run_selector;
  std::string format = "table";
  std::vector<std::string> metrics;
  bool all_metrics = false;
  int limit = 20;
  std::string suite_filter;
  // compare / gate / history
  std::string base_selector;
  std::string policy_path;
  std::string markdown_path, junit_path, json_path;
  bool adaptive = false;
  int max_trials = 20;
  std::string underpowered;  // --underpowered: overrides the policy's
  bool no_rerun = false;     // --no-rerun: never launch trials from a gate
  std::string max_failures;  // run --max-failures N|P%
  std::string slots;         // run/soak --slots npu:0-7[/N] or a YAML mapping
  // db copy FROM TO
  std::string copy_from, copy_to;
  CLI::App* db_copy = nullptr;
  std::string sweep_axes;  // sweep --axes A,B
  bool strict = false;
  bool force = false;
  bool no_store = false;
  std::vector<std::string> config_filters;
  bool all_machines = false;
  long long history_seed = 1;
  long long history_bisect = 0;  // history --bisect ID: that bisect's runs in commit order
  int bootstrap = 0;
  // soak / soak-report
  std::string soak_duration;
  std::string soak_window;  // empty: soak: a thirtieth of the duration (at most 60 s); reports: the run's own
  std::string soak_hang_after = "30m";
  std::string checklist_path;
  long long bootstrap_seed = 1;
  // dashboard (and --dashboard-url of show, compare and gate)
  std::string dashboard_out = "results/dashboard";
  std::string dashboard_url;
  int dashboard_runs = 1000;
  // import
  std::string import_format;
  std::vector<std::string> import_files;
  std::string import_suite, import_workload;
  std::vector<std::string> import_configs;
  // run/soak --executor slurm, worker, wait
  std::string executor = "local";
  int nodes = 1;
  std::string partition;
  std::vector<std::string> sbatch_args;
  bool no_wait = false;
  int retries = 2;
  std::string lease = "60s";
  std::string start_timeout = "10m";
  bool shared_sqlite = false;
  std::string worker_run;
  // bisect
  std::string bisect_good, bisect_bad, bisect_build, bisect_repo = ".", bisect_worktrees, from_gate;
  std::string build_timeout = "1h";
  int max_builds = 0, max_culprits = 3, trials_per_run = 5;
  long long max_bisect_trials = 0;
  double bisect_threshold_pct = 0;
};

struct Command {
  const char* name;
  const char* summary;
  void (*setup)(CLI::App& sub, State& state);
  int (*run)(State& state);
};

// Shared by the handlers: print the error, return its exit code.
int fail(const Error& e);
// Where run logs go: --artifacts, else next to a SQLite file, else ./results.
std::string artifacts_root_of(const State& s);
// Writes a report file (--markdown, --json ...).
Status write_file(const std::string& path, const std::string& text);
Expected<std::unique_ptr<store::Store>> open_store(const State& s);
// Refuses to create a database just to report that it has nothing.
Expected<std::unique_ptr<store::Store>> open_existing_store(const State& s);

void setup_run(CLI::App& sub, State& s);
int do_run(State& s);
void setup_runs(CLI::App& sub, State& s);
int do_runs(State& s);
void setup_show(CLI::App& sub, State& s);
int do_show(State& s);
void setup_soak(CLI::App& sub, State& s);
int do_soak(State& s);
void setup_soak_report(CLI::App& sub, State& s);
int do_soak_report(State& s);
void setup_checklist(CLI::App& sub, State& s);
int do_checklist(State& s);
void setup_compare(CLI::App& sub, State& s);
int do_compare(State& s);
void setup_gate(CLI::App& sub, State& s);
int do_gate(State& s);
void setup_history(CLI::App& sub, State& s);
int do_history(State& s);
void setup_sweep(CLI::App& sub, State& s);
int do_sweep(State& s);
void setup_dashboard(CLI::App& sub, State& s);
int do_dashboard(State& s);
void setup_import(CLI::App& sub, State& s);
int do_import(State& s);
void setup_db(CLI::App& sub, State& s);
int do_db(State& s);
void setup_worker(CLI::App& sub, State& s);
int do_worker(State& s);
void setup_wait(CLI::App& sub, State& s);
int do_wait(State& s);
void setup_bisect(CLI::App& sub, State& s);
int do_bisect(State& s);
// --executor slurm and its options, on run and soak.
void fleet_options(CLI::App& sub, State& s);
// Submits a recorded plan to Slurm and follows it (fleet_commands.cpp); the
// outcome as run_plan returns it, or nullopt after --no-wait.
Expected<std::optional<runner::RunOutcome>> run_on_fleet(State& s, const model::Suite& suite, const model::Plan& plan,
                                                         store::Store& st, const runner::RunOptions& ro);
// What a finished run prints and exits with, local or fleet.
int report_run_outcome(State& s, store::Store& st, const runner::RunOutcome& outcome, const runner::RunOptions& ro);

}  // namespace perfgate::cli
