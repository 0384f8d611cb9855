#include "harness/runner/runner.hpp"

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <ostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/exec/capture.hpp"
#include "harness/metrics/output_parser.hpp"
#include "harness/runner/collector.hpp"
#include "harness/runner/executor.hpp"
#include "harness/runner/fingerprint.hpp"
#include "harness/runner/slots.hpp"
#include "harness/runner/trial_spec.hpp"
#include "harness/sampling/sampler.hpp"
#include "harness/sampling/session.hpp"
#include "harness/suite/placeholders.hpp"
#include "harness/util/environment.hpp"
#include "harness/util/interrupt.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/time.hpp"
#include "harness/util/units.hpp"

namespace perfgate::runner {
namespace fs = std::filesystem;

namespace {

// Runtime knobs that change performance and belong with the numbers.
const std::vector<std::string> k_recorded_env = {
    "TASK_QUEUE_ENABLE",         "CPU_AFFINITY_CONF",    "PYTORCH_NPU_ALLOC_CONF", "HCCL_BUFFSIZE",
    "HCCL_CONNECT_TIMEOUT",      "HCCL_EXEC_TIMEOUT",    "HCCL_OP_EXPANSION_MODE", "ASCEND_LAUNCH_BLOCKING",
    "ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS",        "MKL_NUM_THREADS",
    "PYTORCH_CUDA_ALLOC_CONF"};

std::string describe_failure(const exec::LaunchResult& r) {
  std::string why;
  switch (r.outcome) {
    case exec::Outcome::Exited:
      why = fmt::format("exited with code {}", r.exit_code);
      break;
    case exec::Outcome::Signaled:
      why = fmt::format("killed by signal {} ({})", r.signal, strsignal(r.signal));
      break;
    case exec::Outcome::TimedOut:
    case exec::Outcome::Interrupted:
    case exec::Outcome::FailedToStart:
    case exec::Outcome::Stopped:
      why = r.error;
      break;
  }
  if (!r.stderr_tail.empty()) why += "; last lines of stderr:\n" + r.stderr_tail;
  return why;
}

struct GitInfo {
  std::string commit, branch;
};

const MachineProbe& machine_of(const RunOptions& opts) { return opts.machine ? *opts.machine : real_machine(); }

GitInfo git_info(const MachineProbe& m, const std::string& dir) {
  GitInfo g;
  if (auto out = m.run_tool({"git", "-C", dir, "rev-parse", "HEAD"}, 5)) g.commit = std::string(util::trim(*out));
  if (auto out = m.run_tool({"git", "-C", dir, "rev-parse", "--abbrev-ref", "HEAD"}, 5))
    g.branch = std::string(util::trim(*out));
  return g;
}

// Where the code under test lives, for {worktree}: the git checkout the
// suite is in, else the suite's folder.
std::string default_worktree(const MachineProbe& m, const std::string& suite_dir) {
  if (auto out = m.run_tool({"git", "-C", suite_dir, "rev-parse", "--show-toplevel"}, 5)) {
    std::string top(util::trim(*out));
    if (!top.empty()) return top;
  }
  return suite_dir;
}

// The headline number of a trial for the progress line.
std::string headline(const model::TrialRecord& t, const std::string& primary) {
  for (const auto& m : t.summaries)
    if (m.metric == primary) return fmt::format("{} {}", primary, util::format_value(m.value));
  return "";
}

// How the trials of a run ended: Ctrl-C, or what made the run stop early
// (the results database, a device lock file).
struct TrialsEnd {
  bool interrupted = false;
  Status failure = Ok{};
  std::string what_failed;  // "the results database failed"
};

// What the trials of one run share while an executor runs them, perhaps
// several at once: counts, messages and the store's first failure.
struct TrialShared {
  std::mutex mu;  // guards everything below and the progress stream
  std::vector<bool> primary_recorded;
  Status store_failure = Ok{};
  int finished = 0;
  int started = 0;
  std::size_t slots = 1;                        // trials side by side
  std::map<std::size_t, double> running_until;  // trial index -> when its duration ends (unix s)
};

// Where a trial ran, for its progress line: "" for no slot, " on npu 3".
std::string slot_label(const model::Slot& slot) {
  if (slot.devices.empty()) return "";
  return fmt::format(" on {} {}", slot.kind, util::join_ints(slot.devices));
}

// Runs the plan's trials into an existing run, counting into `out`.
Expected<TrialsEnd> execute_trials(const model::Suite& suite, const model::Plan& plan, store::Store& st,
                                   exec::Launcher& launcher, const RunOptions& opts, long long run_id,
                                   const fs::path& run_dir, RunOutcome& out) {
  std::vector<long long> config_ids(plan.cases.size(), 0);
  for (std::size_t i = 0; i < plan.cases.size(); ++i) {
    auto id = st.config_id(plan.cases[i].workload, plan.cases[i].params_json);
    if (!id) return id.error();
    config_ids[i] = *id;
  }
  // {worktree} and {commit}: a bisect names the commit's worktree; otherwise
  // the checkout the suite lives in, at its HEAD.
  const std::string worktree = opts.worktree.empty() ? default_worktree(machine_of(opts), suite.dir) : opts.worktree;
  const std::string commit = !opts.commit.empty() ? opts.commit : git_info(machine_of(opts), worktree).commit;
  TrialShared shared;
  shared.primary_recorded.assign(plan.cases.size(), false);
  auto say = [&](const std::string& line) {  // call with shared.mu held
    if (opts.progress) *opts.progress << line << std::endl;
  };
  const bool soak = opts.soak.enabled;
  const auto base_env = util::current_environment();
  const std::string host = machine_of(opts).hostname();

  auto run_trial = [&](std::size_t index, const model::Slot& slot) -> TrialEnd {
    const model::PlannedTrial& pt = plan.trials[index];
    const model::Case& c = plan.cases[pt.case_index];
    const model::Workload& w = suite.workloads[c.workload_index];
    TrialContext ctx;
    ctx.run_id = run_id;
    ctx.run_dir = run_dir.string();
    ctx.soak = soak;
    ctx.soak_duration_s = opts.soak.duration_s;
    ctx.base_env = base_env;
    ctx.slot = slot;
    ctx.worktree = worktree;
    ctx.commit = commit;
    ctx.started_at_unix_s = util::unix_now_s();
    const TrialSpec ts = build_trial_spec(suite, plan, index, ctx);
    const double duration_s = ts.duration_s;
    {
      std::lock_guard lock(shared.mu);
      ++shared.started;
      shared.running_until[index] = ts.deadline_unix_s;
    }
    struct Leave {
      TrialShared& sh;
      std::size_t i;
      ~Leave() {
        std::lock_guard lock(sh.mu);
        sh.running_until.erase(i);
      }
    } leave{shared, index};
    std::error_code ec;
    fs::create_directories(ts.trial_dir, ec);
    {
      std::FILE* f = std::fopen(ts.metrics_path.c_str(), "wb");
      if (f) std::fclose(f);
    }
    if (ts.error.empty()) {
      // The resolved command beside the logs: placeholders, slot devices and
      // PERFGATE_* filled in, as it ran. Best effort, like the logs.
      std::error_code cwd_ec;
      const auto here = fs::current_path(cwd_ec).string();
      if (std::FILE* f = std::fopen((fs::path(ts.trial_dir) / "command.sh").c_str(), "wb")) {
        const auto text = rerun_script(ts.launch, base_env, here);
        std::fwrite(text.data(), 1, text.size(), f);
        std::fclose(f);
      }
    }

    model::TrialRecord trial;
    trial.run_id = run_id;
    trial.config_id = config_ids[pt.case_index];
    trial.repeat = pt.repeat;
    trial.seq = pt.seq;
    trial.started_at = ctx.started_at_unix_s;
    trial.log_dir = ts.trial_dir;
    trial.host = host;
    trial.slot = slot.devices.empty() ? -1 : slot.index;  // several slots always hold devices
    trial.device_kind = slot.devices.empty() ? "" : slot.kind;
    trial.devices = slot.devices;
    trial.node_fingerprint = opts.node_fingerprint;
    auto store_failed = [&](Status s) {
      std::lock_guard lock(shared.mu);
      if (shared.store_failure) shared.store_failure = std::move(s);
      return TrialEnd::StoreFailed;
    };
    auto trial_id =
        opts.claim_worker.empty() ? st.begin_trial(trial) : st.begin_claimed_trial(trial, index, opts.claim_worker);
    if (!trial_id) return store_failed(trial_id.error());
    trial.id = *trial_id;

    const exec::LaunchSpec& spec = ts.launch;
    std::string subst_error = ts.error;
    TrialCollector collector(st, trial.id, ts.metrics_path, w.warmup);
    if (!w.metrics.primary.empty())
      collector.set_primary(w.metrics.primary);
    else
      collector.set_primary_preference(metrics::primary_preference(w.metrics.parser));
    // A log preset, gbench or regex reads the workload's own output.
    std::string parser_error;
    if (ts.metrics.parser != "jsonl" && subst_error.empty())
      if (auto attached = collector.attach_output_parser(ts.metrics); !attached)
        parser_error = attached.error().message;
    if (soak) {
      collector.set_hang_after(opts.soak.hang_after_s);
      if (opts.soak.on_progress) {
        std::string label = c.label + slot_label(slot);
        collector.set_progress(opts.soak.window_s, [&, label](const TrialCollector::Progress& p) {
          std::lock_guard lock(shared.mu);
          // The running trials' ends, then the trials not started yet in
          // waves over the slots, each as long as this one.
          const double now = util::unix_now_s();
          double eta = 0;
          for (const auto& [i, until] : shared.running_until) eta = std::max(eta, until - now);
          const std::size_t waiting = plan.trials.size() - static_cast<std::size_t>(shared.started);
          eta += static_cast<double>((waiting + shared.slots - 1) / shared.slots) * duration_s;
          opts.soak.on_progress(label, duration_s, p, std::max(0.0, eta));
        });
      }
    }
    // Samplers the workload asks for; one that cannot be built is a note, not a failure.
    std::vector<std::unique_ptr<sampling::Sampler>> samplers;
    std::vector<std::string> sampler_notes;
    for (const auto& want : ts.samplers) {
      auto sm = sampling::make_sampler(want);
      if (sm)
        samplers.push_back(std::move(*sm));
      else
        sampler_notes.push_back(fmt::format("sampler {}: {}", want.kind, sm.error().message));
    }
    sampling::SamplingSession session(std::move(samplers), w.sample_interval_s);
    if (!session.empty()) collector.attach_sampling(&session);
    exec::LaunchResult lr;
    if (!subst_error.empty() || !parser_error.empty()) {
      lr.outcome = exec::Outcome::FailedToStart;
      // Placeholders are validated at load; a parser fails here on a bad value
      // it got from a placeholder (a batch_size that is not a number).
      lr.error = !subst_error.empty() ? subst_error : parser_error;
    } else {
      session.before_start();
      lr = launcher.launch(spec, collector);
    }
    if (lr.outcome == exec::Outcome::FailedToStart) collector.on_tick(0, true);
    auto res = collector.finish();

    trial.wall_s = lr.wall_s;
    trial.cpu_s = lr.cpu_s;
    trial.peak_rss_mb = lr.peak_rss_mb;
    trial.exit_code = lr.exit_code;
    trial.signal = lr.signal;
    trial.steps = res.steps;
    trial.malformed_lines = collector.malformed_count();
    trial.steady_class = res.steady_class;
    trial.steady_start = res.steady_start;
    trial.compile_steps = res.compile_steps;
    trial.last_step_s = res.last_step_arrival_s;
    switch (lr.outcome) {
      case exec::Outcome::Exited:
        trial.status = lr.exit_code == 0 ? model::TrialStatus::Ok : model::TrialStatus::Failed;
        break;
      case exec::Outcome::Signaled:
      case exec::Outcome::FailedToStart:
        trial.status = model::TrialStatus::Failed;
        break;
      case exec::Outcome::TimedOut:
        // A soak trial that is still running at the end of its duration did what it should.
        trial.status = soak ? model::TrialStatus::Ok : model::TrialStatus::TimedOut;
        break;
      case exec::Outcome::Stopped:
        trial.status = model::TrialStatus::Failed;
        break;
      case exec::Outcome::Interrupted:
        trial.status = model::TrialStatus::Interrupted;
        break;
    }
    if (trial.status != model::TrialStatus::Ok) trial.error = describe_failure(lr);
    std::vector<std::string> notes = res.notes;
    for (auto& n : sampler_notes) notes.push_back(std::move(n));
    if (lr.stdout_truncated)
      notes.push_back(fmt::format("stdout was {} and was cut to {} in the log", util::format_bytes(lr.stdout_bytes),
                                  util::format_bytes(w.log_limit_bytes)));
    if (lr.stderr_truncated)
      notes.push_back(fmt::format("stderr was {} and was cut to {} in the log", util::format_bytes(lr.stderr_bytes),
                                  util::format_bytes(w.log_limit_bytes)));
    if (lr.leftover_processes > 0)
      notes.push_back(fmt::format("{} process(es) of the workload outlived it and were killed", lr.leftover_processes));
    if (!lr.peak_rss_unmeasured.empty()) notes.push_back(lr.peak_rss_unmeasured);
    // The workload's own metrics: a sampler's series (host, devices) in the summaries are not its report.
    if (trial.status == model::TrialStatus::Ok && res.steps == 0 && res.measured.empty() && res.facts.empty())
      notes.push_back(w.metrics.parser == "jsonl"
                          ? "reported no metrics: write JSON lines to $PERFGATE_METRICS or print 'PERFGATE {...}' lines"
                          : fmt::format("reported no metrics: nothing in its output was read by parser {}{}",
                                        w.metrics.parser, w.metrics.file.empty() ? "" : " from " + w.metrics.file));
    trial.notes = util::sanitize_utf8(util::join(notes, "; "));  // samplers may quote garbage output

    if (lr.outcome != exec::Outcome::FailedToStart) {
      auto add_scalar = [&](std::string_view name, std::string_view unit, double v) {
        long long id = collector.harness_metric_id(name, unit);
        if (id < 0) return;
        model::MetricSummary m;
        m.metric = std::string(name);
        m.n_total = m.n_steady = 1;
        m.mean = m.median = m.p90 = m.p99 = m.min = m.max = m.value = v;
        m.is_scalar = true;
        res.summaries.push_back(m);
        res.summary_metric_ids.push_back(id);
      };
      add_scalar(model::harness_metric::wall_time_s, "s", lr.wall_s);
      add_scalar(model::harness_metric::cpu_time_s, "s", lr.cpu_s);
      if (lr.peak_rss_unmeasured.empty()) add_scalar(model::harness_metric::peak_rss_mb, "MB", lr.peak_rss_mb);
      if (res.first_step_arrival_s >= 0)
        add_scalar(model::harness_metric::time_to_first_step_s, "s", res.first_step_arrival_s);
      // warmup: auto: how many leading steps were compile steps, as a number of the trial.
      if (!res.steady_class.empty())
        add_scalar(model::harness_metric::compile_steps, "", static_cast<double>(res.compile_steps));
    }
    // The configuration's primary metric: the suite's when the trial reported
    // it, else the parser's default among what it reported.
    std::string primary = w.metrics.primary;
    if (!primary.empty() && std::find(res.measured.begin(), res.measured.end(), primary) == res.measured.end() &&
        !res.measured.empty()) {
      std::string fallback = metrics::default_primary(w.metrics.parser, res.measured);
      notes.push_back(fmt::format("primary metric '{}' was not reported{}; {} stands in", primary,
                                  util::did_you_mean(primary, res.measured), fallback));
      auto msg = fmt::format("{}: workload {}: metrics.primary '{}' names no metric it reported{}",
                             (w.metrics.loc.line > 0 ? w.metrics.loc : w.loc).str(), w.name, primary,
                             util::did_you_mean(primary, res.measured));
      {
        std::lock_guard lock(shared.mu);
        if (std::find(out.suite_errors.begin(), out.suite_errors.end(), msg) == out.suite_errors.end())
          out.suite_errors.push_back(std::move(msg));
      }
      trial.notes = util::sanitize_utf8(util::join(notes, "; "));
      primary = fallback;
    } else if (primary.empty()) {
      primary = metrics::default_primary(w.metrics.parser, res.measured);
    }
    if (trial.status == model::TrialStatus::Ok && !primary.empty()) {
      bool first = false;
      {
        std::lock_guard lock(shared.mu);
        first = !shared.primary_recorded[pt.case_index];
        shared.primary_recorded[pt.case_index] = true;
      }
      if (first)
        if (auto s = st.set_primary_metrics(run_id, {{config_ids[pt.case_index], primary}}); !s) return store_failed(s);
    }
    if (auto s = record_trial(st, collector, trial, res); !s) return store_failed(s);

    {
      std::lock_guard lock(shared.mu);
      ++shared.finished;
      std::string where = fmt::format("[{}/{}] {} (repeat {}){}", shared.finished, plan.trials.size(), c.label,
                                      pt.repeat + 1, slot_label(slot));
      if (trial.status == model::TrialStatus::Ok) {
        ++out.trials_ok;
        std::string extra = trial.notes.empty() ? "" : "  note: " + trial.notes;
        say(fmt::format("{}  ok  {}  {}{}", where, util::format_duration(lr.wall_s), headline(trial, primary), extra));
      } else {
        ++out.trials_failed;
        say(fmt::format("{}  {}  {}", where, model::to_string(trial.status), trial.error));
      }
    }
    return lr.outcome == exec::Outcome::Interrupted ? TrialEnd::Interrupted : TrialEnd::Done;
  };

  ExecutorOptions eo;
  eo.lock_dir = opts.lock_dir;
  eo.on_wait = [&](const model::Slot& slot, int device, const std::string& path) {
    std::lock_guard lock(shared.mu);
    say(fmt::format("slot {}: waiting for {} {}, held by another process ({})", slot.index, slot.kind, device, path));
  };
  // The slots given, else the suite's (or its profiles'): an adaptive gate
  // adding trials to a run reloads the suite and runs them as the run did.
  std::vector<model::Slot> slots = opts.slots;
  if (slots.empty() && suite.slots)
    if (auto made = make_slots(*suite.slots)) slots = std::move(*made);
  shared.slots = std::max<std::size_t>(1, slots.size());
  std::unique_ptr<Executor> local;
  Executor* executor = opts.executor;
  if (!executor) {
    local = make_local_executor(std::move(slots), std::move(eo));
    executor = local.get();
  }
  std::vector<std::size_t> indexes(plan.trials.size());
  for (std::size_t i = 0; i < indexes.size(); ++i) indexes[i] = i;
  Executed ex = executor->execute(plan, indexes, run_trial);
  TrialsEnd end;
  end.interrupted = ex.interrupted;
  if (!shared.store_failure) {
    end.failure = shared.store_failure;
    end.what_failed = "the results database failed";
  } else if (!ex.lock_failure) {
    end.failure = ex.lock_failure;
    end.what_failed = "a device could not be locked";
  } else if (!ex.queue_failure) {
    end.failure = ex.queue_failure;
    end.what_failed = "the fleet queue could not be read";
  }
  return end;
}

}  // namespace

std::string plan_json(const model::Plan& plan, const RunOptions& opts) {
  nlohmann::json j;
  j["load"] = {{"profiles", opts.profiles}, {"sets", opts.sets}, {"slots", opts.slots_option}};
  if (opts.fleet)
    j["load"]["fleet"] = {{"nodes", opts.fleet->nodes},
                          {"partition", opts.fleet->partition},
                          {"sbatch_args", opts.fleet->sbatch_args},
                          {"retries", opts.fleet->retries},
                          {"lease_s", opts.fleet->lease_s}};
  j["seed"] = plan.seed;
  j["order"] = plan.order;
  j["cases"] = nlohmann::json::array();
  for (const auto& c : plan.cases)
    j["cases"].push_back({{"workload", c.workload}, {"params", nlohmann::json::parse(c.params_json)}});
  j["trials"] = nlohmann::json::array();
  for (const auto& t : plan.trials) j["trials"].push_back({t.case_index, t.repeat});
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string recorded_env_json(const model::Suite& suite) {
  nlohmann::json j = nlohmann::json::object();
  auto env = util::current_environment();
  for (const auto& k : k_recorded_env)
    if (auto it = env.find(k); it != env.end()) j[k] = util::redact_env_value(k, it->second);
  for (const auto& w : suite.workloads)
    for (const auto& [k, v] : w.env) j[k] = util::redact_env_value(k, v);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Status record_trial(store::Store& store, const TrialCollector& collector, model::TrialRecord& trial,
                    TrialCollector::Result& res) {
  trial.summaries = std::move(res.summaries);
  if (!collector.store_status()) return collector.store_status();
  return store.finish_trial(trial, res.summary_metric_ids);
}

store::RunRecord new_run_record(std::string suite_name, std::string suite_path, std::string description,
                                std::uint64_t seed, const RunOptions& opts, const FingerprintOptions& fo,
                                const std::string& git_dir) {
  FingerprintOptions with_machine = fo;
  with_machine.machine = &machine_of(opts);
  auto fp = machine_fingerprint(with_machine);
  store::RunRecord rec;
  rec.suite = std::move(suite_name);
  // Absolute, so an adaptive gate started elsewhere can reload the suite.
  rec.suite_path = std::move(suite_path);
  rec.description = std::move(description);
  rec.started_at = util::unix_now_s();
  rec.status = model::RunStatus::Running;
  rec.host = machine_of(opts).hostname();
  rec.pid = ::getpid();
  rec.fingerprint_json = fp.json;
  rec.fingerprint_hash = fp.hash;
  rec.tags = opts.tags;
  rec.seed = seed;
  rec.kind = opts.kind;
  if (opts.soak.enabled) {
    rec.kind = model::RunKind::Soak;
    rec.soak_duration_s = opts.soak.duration_s;
    rec.soak_window_s = opts.soak.window_s;
    rec.soak_hang_after_s = opts.soak.hang_after_s;
  }
  rec.argv = opts.command_line;
  rec.perfgate_version = PERFGATE_VERSION;
  rec.git_commit = opts.commit;
  rec.git_branch = opts.branch;
  if (rec.git_commit.empty() || rec.git_branch.empty()) {
    auto g = git_info(machine_of(opts), git_dir);
    if (rec.git_commit.empty()) rec.git_commit = g.commit;
    if (rec.git_branch.empty()) rec.git_branch = g.branch;
  }
  return rec;
}

Expected<RecordedRun> record_run(const model::Suite& suite, const model::Plan& plan, store::Store& st,
                                 const RunOptions& opts) {
  auto say = [&](const std::string& line) {
    if (opts.progress) *opts.progress << line << std::endl;
  };
  // A perfgate killed earlier on this host left its runs "running"; close them.
  if (auto closed = st.close_abandoned_runs(machine_of(opts).hostname()); !closed)
    return closed.error();
  else if (*closed > 0)
    say(fmt::format("note: marked {} abandoned run(s) of this host as interrupted", *closed));

  FingerprintOptions fo;
  for (const auto& w : suite.workloads) {
    if (!opts.probe_python || w.shell || w.command.empty()) continue;
    fs::path exe(w.command[0]);
    if (!exe.filename().string().starts_with("python")) continue;
    // The interpreter the workload runs, so the torch version recorded is the one measured.
    fo.python = exe.has_parent_path() && exe.is_relative() ? (fs::path(w.cwd) / exe).string() : exe.string();
    break;
  }
  auto rec = new_run_record(suite.name, fs::absolute(suite.path).lexically_normal().string(), suite.description,
                            plan.seed, opts, fo, suite.dir);
  rec.env_json = recorded_env_json(suite);
  auto run_id = st.begin_run(rec);
  if (!run_id) return run_id.error();
  // Under the database's id: two databases sharing an artifacts folder keep
  // apart, though their run numbers coincide.
  auto store_id = st.store_id();
  if (!store_id) return store_id.error();
  fs::path run_dir =
      fs::absolute(fs::path(opts.artifacts_root) / "runs" / *store_id / std::to_string(*run_id)).lexically_normal();
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  if (ec) return Error::harness(fmt::format("cannot create {}: {}", run_dir.string(), ec.message()));
  if (auto s = st.update_run_plan(*run_id, plan_json(plan, opts), run_dir.string()); !s) return s.error();
  return RecordedRun{*run_id, run_dir.string()};
}

Expected<RunOutcome> run_plan(const model::Suite& suite, const model::Plan& plan, store::Store& st,
                              exec::Launcher& launcher, const RunOptions& opts) {
  auto say = [&](const std::string& line) {
    if (opts.progress) *opts.progress << line << std::endl;
  };
  auto recorded = record_run(suite, plan, st, opts);
  if (!recorded) return recorded.error();
  const auto run_id = &recorded->run_id;
  const fs::path run_dir = recorded->run_dir;

  RunOutcome out;
  out.run_id = *run_id;
  out.trials_total = static_cast<int>(plan.trials.size());
  say(fmt::format("run {}: suite {}, {} configuration(s) x repeats = {} trial(s), seed {}", *run_id, suite.name,
                  plan.cases.size(), plan.trials.size(), plan.seed));

  auto executed = execute_trials(suite, plan, st, launcher, opts, *run_id, run_dir, out);
  if (!executed) return executed.error();
  bool interrupted = executed->interrupted;
  Status store_failure = executed->failure;

  out.trials_not_run = out.trials_total - out.trials_ok - out.trials_failed;
  if (!store_failure) {
    // Try to leave the run in a truthful state; the store may be what failed.
    (void)st.finish_run(*run_id, model::RunStatus::Interrupted, util::unix_now_s());
    return Error::harness(
        fmt::format("run {}: stopped because {}: {}", *run_id, executed->what_failed, store_failure.error().message));
  }
  if (interrupted)
    out.status = model::RunStatus::Interrupted;
  else if (out.trials_ok == 0)
    out.status = model::RunStatus::Failed;
  else
    out.status = model::RunStatus::Completed;
  if (auto s = st.finish_run(*run_id, out.status, util::unix_now_s()); !s) return s.error();
  return out;
}

Expected<RunOutcome> extend_run(const model::Suite& suite, const model::Plan& extra, store::Store& st,
                                exec::Launcher& launcher, long long run_id, const RunOptions& opts) {
  auto data = st.load_run(run_id);
  if (!data) return data.error();
  if (data->run.artifacts_dir.empty()) return Error::harness(fmt::format("run {} has no artifacts directory", run_id));
  fs::path run_dir = data->run.artifacts_dir;
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  if (ec) return Error::harness(fmt::format("cannot create {}: {}", run_dir.string(), ec.message()));
  RunOutcome out;
  out.run_id = run_id;
  out.status = data->run.status;
  out.trials_total = static_cast<int>(extra.trials.size());
  auto executed = execute_trials(suite, extra, st, launcher, opts, run_id, run_dir, out);
  if (!executed) return executed.error();
  out.trials_not_run = out.trials_total - out.trials_ok - out.trials_failed;
  if (!executed->failure)
    return Error::harness(fmt::format("run {}: stopped adding trials because {}: {}", run_id, executed->what_failed,
                                      executed->failure.error().message));
  if (executed->interrupted) out.status = model::RunStatus::Interrupted;
  return out;
}

}  // namespace perfgate::runner
