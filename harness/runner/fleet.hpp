#pragma once
// One suite over a fleet through Slurm (../shared/DESIGN.md, "Execution";
// docs/cluster.md). The database is the queue: the submitting perfgate
// records the run and its trials as pending and submits one job array of
// workers; each worker (`perfgate worker --run RUN`) claims trials with a
// lease, runs them through the same per-trial path as a local run, and
// exits when the queue is empty. Slurm is the engine: perfgate schedules
// nothing itself and reads no state from sacct.

#include <functional>
#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "harness/exec/capture.hpp"
#include "harness/exec/launcher.hpp"
#include "harness/model/plan.hpp"
#include "harness/model/slots.hpp"
#include "harness/model/suite.hpp"
#include "harness/runner/runner.hpp"
#include "harness/store/store.hpp"
#include "harness/util/error.hpp"

namespace perfgate::runner {

// The suite of a stored run, loaded as it ran (its profiles, --set values
// and --slots, kept in the plan).
Expected<model::Suite> load_suite_of_run(const store::RunRecord& run);
// The run's plan as stored: its cases matched to the suite's workloads by
// name and parameters; trials in run order.
Expected<model::Plan> plan_of_run(const model::Suite& suite, const store::RunRecord& run);

// The device indexes of a generic resource in `scontrol -d show job` output:
// "GRES=npu:2(IDX:3-4)" -> {3, 4}; empty when the job holds none of it.
Expected<std::vector<int>> parse_gres_indexes(std::string_view scontrol_text, std::string_view name);

// Where the trials of a worker run on its node: the devices Slurm gave the
// job (CUDA_VISIBLE_DEVICES for --gres=gpu, the npu indexes scontrol shows
// for a generic npu resource), cut into slots of the suite's per_trial (one
// slot of all of them when the suite names no slots); without devices from
// Slurm, the suite's own slots.
struct SlurmDevices {
  std::string kind;  // "cuda", "npu", or "" for none
  std::vector<int> devices;
  std::string source;  // where they came from, for the worker's first line
};
using ToolFn = std::function<exec::ToolResult(const std::vector<std::string>&)>;
Expected<SlurmDevices> slurm_devices(const std::map<std::string, std::string>& env, const ToolFn& tool);
Expected<std::vector<model::Slot>> worker_slots(const model::Suite& suite, const SlurmDevices& d);

struct WorkerOptions {
  std::string name;     // in leases and messages: host:job_task:pid
  double lease_s = 60;  // renewed every lease_s / 4
  double poll_s = 1;    // while others hold the last trials
  RunOptions run;       // progress stream, artifacts, lock folder
};
struct WorkerOutcome {
  int trials_run = 0, ok = 0, failed = 0;
  bool interrupted = false;
  bool finished_run = false;  // this worker found the queue empty and ended the run
};
Expected<WorkerOutcome> run_worker(store::Store& st, exec::Launcher& launcher, long long run_id,
                                   const WorkerOptions& opts);

// Ends a run whose queue holds nothing open: completed, or failed when no
// trial is ok, or interrupted when some were cancelled. Returns false when
// trials are still open.
Expected<bool> finish_queued_run(store::Store& st, long long run_id);

// -- the submitting side ------------------------------------------------------

// The binary the workers run: this one, by its absolute path (an
// installation every node of the partition shares).
std::string perfgate_binary();

// The Slurm settings a fleet run was submitted with; nullopt for a local run.
std::optional<FleetSettings> fleet_settings_of_run(const store::RunRecord& run);

struct SubmitOptions {
  int nodes = 1;  // array tasks, one per node
  std::string partition;
  std::vector<std::string> sbatch_args;
  int retries = 2;  // attempts after a lost one
  double lease_s = 60;
  std::string db_spec;         // passed to workers through PERFGATE_DB, never on their command line
  std::string perfgate_bin;    // this binary, as the workers run it
  std::string worker_log_dir;  // Slurm's -o folder
};
// Queues every trial of the plan for `run_id` and submits the workers; the
// job id. sbatch's own message when it refuses (a bad partition).
Expected<std::string> submit_fleet(store::Store& st, long long run_id, const model::Plan& plan,
                                   const SubmitOptions& opts, const ToolFn& tool);

struct FollowOptions {
  std::ostream* progress = nullptr;  // the per-trial lines of a local run
  // Polling starts every poll_s and backs off, doubling, while nothing
  // changes: the database up to max_poll_s, squeue up to squeue_interval_s
  // whatever happens (slurmctld serves every user of the cluster; a 72-hour
  // soak asked it twice a second).
  double poll_s = 0.5;
  double max_poll_s = 5;
  double squeue_interval_s = 10;
  double start_timeout_s = 600;  // a job still pending after this is an error with Slurm's reason
  // squeue failing (slurmctld busy or restarting: "Socket timed out") for
  // longer than this is an error; until then the run is followed from the
  // database alone and its jobs are taken to be where squeue last saw them.
  double squeue_grace_s = 300;
  std::set<long long> already_reported;  // trials finished before (trials added to a run): not shown again
  int queued_before = 0;                 // queue rows before them: not counted in the totals
};
// Follows a fleet run from the database until its queue is empty (or its
// jobs are gone, or Ctrl-C: the jobs are cancelled, the run interrupted,
// finished trials kept); the counts as a local run returns them.
// Adds trials to a fleet run (an adaptive gate's): appended to its stored
// plan, queued, submitted as a new job array with the run's own settings
// (db_spec reaches the workers as PERFGATE_DB), and followed to the end.
Expected<RunOutcome> extend_fleet_run(store::Store& st, long long run_id, const model::Plan& extra,
                                      const std::string& db_spec, const FollowOptions& opts, const ToolFn& tool);

Expected<RunOutcome> follow_fleet(store::Store& st, long long run_id, const FollowOptions& opts, const ToolFn& tool);

}  // namespace perfgate::runner
