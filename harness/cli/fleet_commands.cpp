// `run/soak --executor slurm`, `perfgate worker` and `perfgate wait`: one
// suite over a fleet through Slurm, the database as the queue
// (runner/fleet.hpp, docs/cluster.md).

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "harness/cli/commands.hpp"
#include "harness/exec/capture.hpp"
#include "harness/exec/process_launcher.hpp"
#include "harness/runner/fingerprint.hpp"
#include "harness/runner/fleet.hpp"
#include "harness/util/environment.hpp"
#include "harness/util/interrupt.hpp"
#include "harness/util/time.hpp"
#include "harness/util/units.hpp"

namespace perfgate::cli {
namespace fs = std::filesystem;

namespace {

exec::ToolResult slurm_tool(const std::vector<std::string>& argv) { return exec::run_tool(argv, 60); }

Expected<double> duration_option(const std::string& text, const char* name) {
  auto d = util::parse_duration_s(text);
  if (!d) return Error::input(fmt::format("{} '{}': {}", name, text, d.error().message));
  return *d;
}

}  // namespace

void fleet_options(CLI::App& sub, State& s) {
  sub.add_option("--executor", s.executor,
                 "local (this node's slots) or slurm (a job array of workers; see docs/cluster.md)")
      ->check(CLI::IsMember({"local", "slurm"}))
      ->capture_default_str();
  sub.add_option("--nodes", s.nodes, "slurm: workers in the job array, one per node")->check(CLI::PositiveNumber);
  sub.add_option("--partition", s.partition, "slurm: the partition to submit to");
  sub.add_option("--sbatch-arg", s.sbatch_args, "slurm: an argument for sbatch as is, e.g. --gres=npu:8 (repeatable)")
      ->allow_extra_args(false);
  sub.add_flag("--no-wait", s.no_wait, "slurm: submit, print the job id and return; `perfgate wait RUN` follows later");
  sub.add_option("--retries", s.retries, "slurm: runs of a trial again after its worker was lost")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub.add_option("--lease", s.lease,
                 "slurm: a worker's hold on a trial, renewed while it runs; a lost worker's "
                 "trial is queued again after it")
      ->capture_default_str();
  sub.add_option("--start-timeout", s.start_timeout, "slurm: give up when no worker started in this time")
      ->capture_default_str();
  sub.add_flag("--shared-sqlite", s.shared_sqlite,
               "slurm with a SQLite --db: the file is on a path every node shares (PostgreSQL is the shared store)");
}

Expected<std::optional<runner::RunOutcome>> run_on_fleet(State& s, const model::Suite& suite, const model::Plan& plan,
                                                         store::Store& st, const runner::RunOptions& ro) {
  const auto backend = store::backend_of(s.globals.db_path);
  if (!backend) return backend.error();
  std::string db_spec = s.globals.db_path;
  if (*backend == store::Backend::Sqlite) {
    if (!s.shared_sqlite)
      return Error::input(fmt::format(
          "--executor slurm with the SQLite file {}: every node's workers write the database, so give "
          "--db postgresql://... (docs/sharing-results.md), or --shared-sqlite if the file is on a path every node "
          "shares",
          s.globals.db_path));
    db_spec = fs::absolute(db_spec).lexically_normal().string();
  }
  auto lease_s = duration_option(s.lease, "--lease");
  if (!lease_s) return lease_s.error();
  auto start_s = duration_option(s.start_timeout, "--start-timeout");
  if (!start_s) return start_s.error();

  runner::RunOptions fleet_ro = ro;
  fleet_ro.fleet = runner::FleetSettings{s.nodes, s.partition, s.sbatch_args, s.retries, *lease_s};
  auto recorded = runner::record_run(suite, plan, st, fleet_ro);
  if (!recorded) return recorded.error();
  runner::SubmitOptions so;
  so.nodes = s.nodes;
  so.partition = s.partition;
  so.sbatch_args = s.sbatch_args;
  so.retries = s.retries;
  so.lease_s = *lease_s;
  so.perfgate_bin = runner::perfgate_binary();
  so.worker_log_dir = (fs::path(recorded->run_dir) / "slurm").string();
  // The workers find the database in the environment sbatch exports (never
  // on their command line), as they find PERFGATE_LOCK_DIR and the rest.
  ::setenv("PERFGATE_DB", db_spec.c_str(), 1);
  auto job = runner::submit_fleet(st, recorded->run_id, plan, so, slurm_tool);
  if (!job) {
    (void)st.cancel_queue(recorded->run_id);
    (void)st.finish_run(recorded->run_id, model::RunStatus::Failed, util::unix_now_s());
    return job.error();
  }
  if (ro.progress)
    *ro.progress << fmt::format("run {}: suite {}, {} trial(s) queued for Slurm job {} ({} worker(s){}), logs in {}",
                                recorded->run_id, suite.name, plan.trials.size(), *job, s.nodes,
                                s.partition.empty() ? "" : ", partition " + s.partition, so.worker_log_dir)
                 << std::endl;
  if (s.no_wait) {
    std::cout << fmt::format("run {} job {}\n", recorded->run_id, *job);
    return std::optional<runner::RunOutcome>{};
  }
  runner::FollowOptions fo;
  fo.progress = ro.progress;
  fo.start_timeout_s = *start_s;
  auto out = runner::follow_fleet(st, recorded->run_id, fo, slurm_tool);
  if (!out) return out.error();
  return std::optional<runner::RunOutcome>(std::move(*out));
}

void setup_worker(CLI::App& sub, State& s) {
  sub.add_option("--run", s.worker_run, "the run whose queued trials to take")->required();
  sub.add_option("--lease", s.lease, "hold on a trial, renewed every quarter of it")->capture_default_str();
}

int do_worker(State& s) {
  auto lease_s = duration_option(s.lease, "--lease");
  if (!lease_s) return fail(lease_s.error());
  auto st = open_store(s);
  if (!st) return fail(st.error());
  auto id = (*st)->resolve_run(s.worker_run);
  if (!id) return fail(id.error());
  util::install_interrupt_handlers();
  runner::WorkerOptions wo;
  const auto env = util::current_environment();
  auto get = [&](const char* k) {
    auto it = env.find(k);
    return it == env.end() ? std::string() : it->second;
  };
  std::string task = get("SLURM_ARRAY_JOB_ID").empty() ? get("SLURM_JOB_ID")
                                                       : get("SLURM_ARRAY_JOB_ID") + "_" + get("SLURM_ARRAY_TASK_ID");
  wo.name = fmt::format("{}:{}{}", runner::hostname(), task.empty() ? "" : task + ":", ::getpid());
  wo.lease_s = *lease_s;
  wo.run.progress = &std::cerr;
  wo.run.command_line = s.globals.command_line;
  exec::ProcessLauncher launcher;
  auto out = runner::run_worker(**st, launcher, *id, wo);
  if (!out) return fail(out.error());
  std::cerr << fmt::format("worker {}: {} trial(s) run, {} ok, {} failed{}\n", wo.name, out->trials_run, out->ok,
                           out->failed, out->finished_run ? fmt::format("; run {} is complete", *id) : "");
  return out->interrupted ? static_cast<int>(ExitCode::HarnessError) : 0;
}

void setup_wait(CLI::App& sub, State& s) {
  sub.add_option("run", s.run_selector, "run id, latest, or latest:TAG")->required();
  sub.add_option("--start-timeout", s.start_timeout, "give up when no worker started in this time")
      ->capture_default_str();
  sub.add_flag("-q,--quiet", s.quiet, "no per-trial progress lines");
}

int do_wait(State& s) {
  auto start_s = duration_option(s.start_timeout, "--start-timeout");
  if (!start_s) return fail(start_s.error());
  auto st = open_existing_store(s);
  if (!st) return fail(st.error());
  auto id = (*st)->resolve_run(s.run_selector);
  if (!id) return fail(id.error());
  auto jobs = (*st)->fleet_jobs(*id);
  if (!jobs) return fail(jobs.error());
  if (jobs->empty())
    return fail(Error::input(fmt::format("run {} was not submitted to Slurm: nothing to wait for", *id)));
  auto data = (*st)->load_run(*id);
  if (!data) return fail(data.error());
  util::install_interrupt_handlers();
  runner::RunOptions ro;
  ro.progress = s.quiet ? nullptr : &std::cerr;
  if (data->run.kind == model::RunKind::Soak) {
    ro.soak.enabled = true;
    ro.soak.duration_s = data->run.soak_duration_s;
    ro.soak.window_s = data->run.soak_window_s;
  }
  runner::FollowOptions fo;
  fo.progress = ro.progress;
  fo.start_timeout_s = *start_s;
  auto out = runner::follow_fleet(**st, *id, fo, slurm_tool);
  if (!out) return fail(out.error());
  return report_run_outcome(s, **st, *out, ro);
}

}  // namespace perfgate::cli
