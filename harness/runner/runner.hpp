#pragma once
// Runs a plan: one process per trial, on the node's slots (one at a time in
// plan order, or side by side on several; runner/executor.hpp), everything
// recorded in the store as it finishes. Stops cleanly on Ctrl-C / SIGTERM
// (every running trial's process group is ended, the run is marked
// interrupted, finished trials stay).

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "harness/exec/launcher.hpp"
#include "harness/model/plan.hpp"
#include "harness/model/slots.hpp"
#include "harness/model/suite.hpp"
#include "harness/model/trial.hpp"
#include "harness/runner/collector.hpp"
#include "harness/runner/fingerprint.hpp"
#include "harness/store/store.hpp"
#include "harness/util/error.hpp"

namespace perfgate::runner {

class Executor;
using TrialProgress = TrialCollector::Progress;

// A soak: every trial runs for `duration_s` (or until the workload exits),
// is stopped cleanly at the end, and fails as a hang when no step record
// arrives for `hang_after_s`.
struct SoakOptions {
  bool enabled = false;
  double duration_s = 0;  // 0: each workload's timeout is its duration
  double hang_after_s = 1800;
  double window_s = 60;  // progress and analysis windows
  // Called at the end of every window with what the running trial reported
  // and when the whole soak should end: its trials run side by side on the
  // node's slots, in waves when there are more trials than slots.
  std::function<void(const std::string& label, double duration_s, const TrialProgress& p, double soak_eta_s)>
      on_progress;
};

// How a fleet run was submitted, stored with its plan so trials added later
// (an adaptive gate) go to Slurm the same way.
struct FleetSettings {
  int nodes = 1;
  std::string partition;
  std::vector<std::string> sbatch_args;
  int retries = 2;
  double lease_s = 60;
};

struct RunOptions {
  std::vector<std::string> tags;
  std::string commit;  // empty: read from git where the suite lives
  // {worktree} in the suite: where the code under test is checked out (a
  // bisect's worktree of the commit); empty: the git checkout the suite is
  // in, else the suite's folder.
  std::string worktree;
  std::string branch;
  std::string artifacts_root;        // logs go to <root>/runs/<run id>/
  std::string command_line;          // how perfgate was invoked, for the record
  bool probe_python = true;          // record torch / torch_npu versions in the fingerprint
  std::ostream* progress = nullptr;  // one line per trial; nullptr for silence
  // How the suite was loaded (--profile, --set), stored with the plan so
  // more trials of the same run can be launched later (adaptive gate).
  std::vector<std::string> profiles;
  std::vector<std::string> sets;
  SoakOptions soak;
  model::RunKind kind = model::RunKind::Run;  // soak options make it a soak
  // The node's slots (suite, profile or --slots through make_slots): one
  // runs the trials one at a time in plan order, more run side by side.
  std::vector<model::Slot> slots;
  std::string slots_option;  // --slots as given, stored with the plan (an adaptive gate reuses it)
  std::string lock_dir;      // device locks; empty: device_lock_dir()
  // A fleet worker's: the executor (runner/executor.hpp, QueueExecutor)
  // instead of the node's local one, the worker's name (each trial's row is
  // made with its claim: Store::begin_claimed_trial), and the node's
  // fingerprint hash stored with every trial.
  Executor* executor = nullptr;
  std::string claim_worker;
  std::string node_fingerprint;
  // A fleet run's Slurm settings (kept in the plan), and the database spec
  // its workers get through PERFGATE_DB when trials are added to it.
  std::optional<FleetSettings> fleet;
  std::string db_spec;
  // The machine read for the fingerprint, the host's name and git; nullptr:
  // the real one. Unit tests give a fake (tests/unit/support/fake_machine.hpp).
  const MachineProbe* machine = nullptr;
};

struct RunOutcome {
  long long run_id = 0;
  model::RunStatus status = model::RunStatus::Running;
  int trials_total = 0;
  int trials_ok = 0;
  int trials_failed = 0;
  int trials_not_run = 0;
  // Mistakes in the suite only a trial could reveal (a `primary` that names no
  // metric the workload reported), with file and line; every trial still ran.
  std::vector<std::string> suite_errors;
};

// A new run in the store with its plan and artifacts folder, nothing run
// yet (what run_plan does first; a fleet run queues its trials next).
struct RecordedRun {
  long long run_id = 0;
  std::string run_dir;
};
Expected<RecordedRun> record_run(const model::Suite& suite, const model::Plan& plan, store::Store& store,
                                 const RunOptions& opts);

Expected<RunOutcome> run_plan(const model::Suite& suite, const model::Plan& plan, store::Store& store,
                              exec::Launcher& launcher, const RunOptions& opts);

// Appends trials to a finished run: `extra` lists cases of the run (matched
// by workload and parameters) and their trials with repeat and seq numbers
// continuing the run's. The run keeps its status; interruption is reported in
// the outcome.
Expected<RunOutcome> extend_run(const model::Suite& suite, const model::Plan& extra, store::Store& store,
                                exec::Launcher& launcher, long long run_id, const RunOptions& opts);

// A new run's record: this machine's fingerprint, options, git commit and
// branch (read from git_dir when the options leave them empty).
store::RunRecord new_run_record(std::string suite_name, std::string suite_path, std::string description,
                                std::uint64_t seed, const RunOptions& opts, const FingerprintOptions& fo,
                                const std::string& git_dir);

// Stores a finished trial with the collector's summaries (moved into it):
// the collector's first store error if one happened while streaming
// samples, else finish_trial's.
Status record_trial(store::Store& store, const TrialCollector& collector, model::TrialRecord& trial,
                    TrialCollector::Result& res);

// The plan as JSON (seed, order, cases, trial order), as stored with the run.
std::string plan_json(const model::Plan& plan, const RunOptions& opts = {});

// `perfgate import`: results produced outside perfgate (Google Benchmark
// JSON, metric-protocol JSON lines) recorded as a new run of one
// configuration, one trial per file, read by the same parsers as a run.
struct ImportRequest {
  std::string format;  // gbench | jsonl
  std::vector<std::string> files;
  std::string suite;
  std::string workload;  // empty: the format's name
  model::Params params;
  std::string cwd;  // git commit and branch are read here unless given
};
Expected<RunOutcome> import_files(const ImportRequest& req, store::Store& store, const RunOptions& opts);

// Environment variables worth recording with every run (Ascend runtime knobs,
// thread counts), read from perfgate's own environment; secrets redacted.
std::string recorded_env_json(const model::Suite& suite);

}  // namespace perfgate::runner
