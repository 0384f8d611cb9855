#pragma once
// What one trial of a plan will run, decided before anything is launched:
// the process (argv, environment, working directory, logs, timeouts), how
// its output is read (the parser with its placeholders filled in) and which
// samplers watch it. A pure step from suite, plan and run context to a
// TrialSpec, so every executor (serial, slotted, a Slurm worker) runs the
// same trials and the step is tested without launching anything
// (../shared/DESIGN.md, "Execution").

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "harness/exec/launcher.hpp"
#include "harness/model/plan.hpp"
#include "harness/model/slots.hpp"
#include "harness/model/suite.hpp"

namespace perfgate::runner {

// The run a trial belongs to and the moment it starts.
struct TrialContext {
  long long run_id = 0;
  std::string run_dir;           // absolute; each trial gets a folder under it
  double started_at_unix_s = 0;  // the deadline counts from here
  bool soak = false;
  double soak_duration_s = 0;                   // 0: each workload's timeout is its duration
  std::map<std::string, std::string> base_env;  // perfgate's own environment, inherited
  model::Slot slot;                             // where the trial runs; no devices: wherever the workload picks
  std::string worktree;                         // {worktree}: the checkout of the code under test
  std::string commit;                           // {commit}: its git commit ('' outside git)
};

struct TrialSpec {
  std::size_t case_index = 0;
  int repeat = 0;
  int seq = 0;
  model::Slot slot;
  std::string trial_dir;     // <run_dir>/<seq>-<workload>-r<repeat>
  std::string metrics_path;  // the metric-protocol file the workload may write
  double duration_s = 0;     // a soak's duration, else the workload's timeout
  double deadline_unix_s = 0;
  exec::LaunchSpec launch;
  // The workload's metrics section with {placeholders} filled in and the
  // file made absolute (gbench without a file: the JSON perfgate asks for).
  model::MetricsSpec metrics;
  // The samplers the workload asks for, the host probe added when it is on.
  std::vector<model::SamplerSpec> samplers;
  // A placeholder that could not be filled in: the trial fails to start
  // with this reason instead of running something else.
  std::string error;
};

// The spec of plan.trials[index]. Placeholders are validated when the suite
// loads, so `error` is rare (a value that only a run can supply).
TrialSpec build_trial_spec(const model::Suite& suite, const model::Plan& plan, std::size_t index,
                           const TrialContext& ctx);

// The trial's process as a shell line a person can rerun by hand, written
// to the trial's folder as command.sh: the working directory, the variables
// that differ from perfgate's own environment (`base_env`) and the argv,
// each quoted. A variable the database would redact (a secret's name, a URL
// with credentials: util::redact_env_value) is named in a comment, never
// written.
std::string rerun_script(const exec::LaunchSpec& spec, const std::map<std::string, std::string>& base_env,
                         const std::string& cwd_if_unset);

// A name safe in a path: letters, digits, '-', '_', '.', at most 60 characters.
std::string safe_path_name(std::string_view s);

}  // namespace perfgate::runner
