#include "harness/runner/fleet.hpp"

#include <unistd.h>
#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/runner/executor.hpp"
#include "harness/runner/fingerprint.hpp"
#include "harness/runner/slots.hpp"
#include "harness/suite/loader.hpp"
#include "harness/util/environment.hpp"
#include "harness/util/install_paths.hpp"
#include "harness/util/interrupt.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/time.hpp"
#include "harness/util/units.hpp"

namespace perfgate::runner {
namespace fs = std::filesystem;

Expected<model::Suite> load_suite_of_run(const store::RunRecord& run) {
  suite::LoadOptions lo;
  auto plan = nlohmann::json::parse(run.plan_json, nullptr, false);
  if (plan.is_object() && plan.contains("load") && plan["load"].is_object()) {
    const auto& load = plan["load"];
    for (const auto& p : load.value("profiles", nlohmann::json::array())) lo.profiles.push_back(p.get<std::string>());
    for (const auto& s : load.value("sets", nlohmann::json::array())) {
      auto o = suite::parse_override(s.get<std::string>());
      if (!o) return o.error();
      lo.overrides.push_back(*o);
    }
    // The slots it ran on (--slots), so its trials run as the run's own did.
    if (auto sl = load.value("slots", std::string()); !sl.empty()) {
      auto spec = suite::parse_slots_option(sl);
      if (!spec) return spec.error();
      lo.slots = *spec;
    }
  }
  auto s = suite::load_suite(run.suite_path, lo);
  if (!s)
    return Error::input(
        fmt::format("run {}: its suite {} does not load here: {}", run.id, run.suite_path, s.error().message));
  return std::move(*s);
}

Expected<model::Plan> plan_of_run(const model::Suite& suite, const store::RunRecord& run) {
  auto j = nlohmann::json::parse(run.plan_json, nullptr, false);
  if (!j.is_object() || !j.contains("cases") || !j.contains("trials"))
    return Error::harness(fmt::format("run {} has no stored plan", run.id));
  model::Plan plan;
  plan.seed = j.value("seed", std::uint64_t{0});
  plan.order = j.value("order", std::string("interleaved"));
  for (const auto& c : j["cases"]) {
    const std::string name = c.value("workload", std::string());
    auto w = std::find_if(suite.workloads.begin(), suite.workloads.end(),
                          [&](const model::Workload& x) { return x.name == name; });
    if (w == suite.workloads.end())
      return Error::input(fmt::format("run {}: workload '{}' is no longer in {}", run.id, name, run.suite_path));
    model::Case k;
    k.workload_index = static_cast<std::size_t>(w - suite.workloads.begin());
    k.workload = name;
    k.params = model::params_from_json(c["params"].dump());
    k.params_json = model::params_json(k.params);
    k.label = k.params.empty() ? name : name + " " + model::params_label(k.params);
    plan.cases.push_back(std::move(k));
  }
  int seq = 0;
  for (const auto& t : j["trials"]) {
    if (!t.is_array() || t.size() != 2)
      return Error::harness(fmt::format("run {}: its stored plan is damaged", run.id));
    const auto ci = t[0].get<std::size_t>();
    if (ci >= plan.cases.size()) return Error::harness(fmt::format("run {}: its stored plan is damaged", run.id));
    plan.trials.push_back({ci, t[1].get<int>(), seq++});
  }
  return plan;
}

Expected<std::vector<int>> parse_gres_indexes(std::string_view text, std::string_view name) {
  // "GRES=npu:2(IDX:3-4)" or, with a type, "GRES=npu:910b:2(IDX:0,2-3)"; several
  // resources are separated by commas outside the parentheses.
  std::set<int> out;
  const std::string key = std::string(name) + ":";
  for (std::size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
    if (at > 0 && std::string_view(" \t\n,=").find(text[at - 1]) == std::string_view::npos) continue;
    const std::size_t end = text.find_first_of(" \t\n", at);
    const std::string_view word = text.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at);
    const std::size_t open = word.find("(IDX:");
    if (open == std::string_view::npos) continue;
    // Everything up to "(IDX:" is name[:type]:count, with no other resource inside.
    if (word.substr(0, open).find(',') != std::string_view::npos) continue;
    const std::size_t close = word.find(')', open);
    if (close == std::string_view::npos) continue;
    const std::string_view idx = word.substr(open + 5, close - open - 5);
    auto ids = parse_device_list(idx);
    if (!ids) return Error::harness(fmt::format("scontrol shows {} devices '{}': {}", name, idx, ids.error().message));
    out.insert(ids->begin(), ids->end());
  }
  return std::vector<int>(out.begin(), out.end());
}

Expected<SlurmDevices> slurm_devices(const std::map<std::string, std::string>& env, const ToolFn& tool) {
  SlurmDevices d;
  auto get = [&](const char* k) -> std::string {
    auto it = env.find(k);
    return it == env.end() ? "" : it->second;
  };
  // --gres=gpu:K: Slurm exports the job's (or step's) GPUs itself.
  if (!get("SLURM_JOB_GPUS").empty() || !get("SLURM_STEP_GPUS").empty()) {
    const std::string cvd = get("CUDA_VISIBLE_DEVICES");
    auto ids = parse_device_list(cvd);
    if (!ids) return Error::harness(fmt::format("CUDA_VISIBLE_DEVICES '{}' from Slurm: {}", cvd, ids.error().message));
    d.kind = "cuda";
    d.devices = *ids;
    d.source = "CUDA_VISIBLE_DEVICES=" + cvd;
    return d;
  }
  // A generic npu resource (what Ascend sites configure): Slurm exports no
  // variable; the indexes show only in scontrol's detailed job record.
  const std::string job = get("SLURM_JOB_ID");
  if (job.empty()) return d;
  auto r = tool({"scontrol", "-d", "show", "job", job});
  if (!r.ok())
    return Error::harness(fmt::format("cannot read job {}'s devices with scontrol -d show job: {}", job,
                                      r.error.empty() ? util::trim(r.err) : r.error));
  // The job id of an array's master record lists every task's record; keep
  // this task's own ("JobId=<id> ArrayJobId=...").
  std::string record = r.out;
  {
    const std::string head = "JobId=" + job + " ";
    std::size_t at = r.out.find(head);
    while (at != std::string::npos && at > 0 && !std::isspace(static_cast<unsigned char>(r.out[at - 1])))
      at = r.out.find(head, at + 1);
    if (at != std::string::npos) {
      std::size_t end = r.out.find("\nJobId=", at + head.size());
      record = r.out.substr(at, end == std::string::npos ? std::string::npos : end - at);
    }
  }
  auto npu = parse_gres_indexes(record, "npu");
  if (!npu) return npu.error();
  if (npu->empty()) return d;
  d.kind = "npu";
  d.devices = *npu;
  d.source = "scontrol GRES npu IDX " + util::join_ints(*npu);
  return d;
}

Expected<std::vector<model::Slot>> worker_slots(const model::Suite& suite, const SlurmDevices& d) {
  if (d.devices.empty()) {
    if (suite.slots) return make_slots(*suite.slots);
    return std::vector<model::Slot>{};
  }
  model::SlotsSpec spec;
  spec.kind = d.kind;
  spec.devices = d.devices;
  spec.per_trial = static_cast<int>(d.devices.size());
  if (suite.slots && suite.slots->kind == d.kind)
    spec.per_trial = std::min<int>(suite.slots->per_trial, spec.per_trial);
  return make_slots(spec);
}

Expected<bool> finish_queued_run(store::Store& st, long long run_id) {
  auto c = st.queue_counts(run_id);
  if (!c) return c.error();
  if (c->open() > 0) return false;
  auto data = st.load_run(run_id);
  if (!data) return data.error();
  if (data->run.status != model::RunStatus::Running) return true;
  bool any_ok = std::any_of(data->trials.begin(), data->trials.end(),
                            [](const model::TrialRecord& t) { return t.status == model::TrialStatus::Ok; });
  auto status = c->cancelled > 0 ? model::RunStatus::Interrupted
                : any_ok         ? model::RunStatus::Completed
                                 : model::RunStatus::Failed;
  if (auto s = st.finish_run(run_id, status, util::unix_now_s()); !s) return s.error();
  return true;
}

Expected<WorkerOutcome> run_worker(store::Store& st, exec::Launcher& launcher, long long run_id,
                                   const WorkerOptions& opts) {
  auto say = [&](const std::string& line) {
    if (opts.run.progress) *opts.run.progress << line << std::endl;
  };
  auto data = st.load_run(run_id);
  if (!data) return data.error();
  WorkerOutcome out;
  if (data->run.status != model::RunStatus::Running) {
    say(fmt::format("worker {}: run {} is {}; nothing to do", opts.name, run_id, model::to_string(data->run.status)));
    return out;
  }
  auto suite = load_suite_of_run(data->run);
  if (!suite) return suite.error();
  auto plan = plan_of_run(*suite, data->run);
  if (!plan) return plan.error();

  auto devices = slurm_devices(util::current_environment(),
                               [](const std::vector<std::string>& argv) { return exec::run_tool(argv, 30); });
  if (!devices) return devices.error();
  auto slots = worker_slots(*suite, *devices);
  if (!slots) return slots.error();

  // This node's fingerprint, stored once, named by each trial it runs: the
  // gate compares like nodes with like.
  FingerprintOptions fo;
  auto fp = machine_fingerprint(fo);
  if (auto s = st.save_node_fingerprint(fp.hash, fp.json); !s) return s.error();

  say(fmt::format("worker {}: run {} on {}, {} slot(s){}", opts.name, run_id, hostname(),
                  std::max<std::size_t>(1, slots->size()), devices->source.empty() ? "" : " from " + devices->source));

  // Leases are renewed from a thread of their own (a trial can take hours),
  // stopped and joined when the worker returns.
  std::jthread heartbeat([&](std::stop_token stop) {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    const auto period = std::chrono::duration<double>(std::max(0.2, opts.lease_s / 4));
    while (!cv.wait_for(lock, stop, period, [] { return false; }) && !stop.stop_requested())
      if (auto r = st.renew_leases(opts.name, opts.lease_s); !r)
        say(fmt::format("worker {}: could not renew its leases: {}", opts.name, r.error().message));
  });

  QueueSource src;
  src.poll_s = opts.poll_s;
  src.claim = [&]() -> Expected<std::optional<std::size_t>> {
    auto c = st.claim_trial(run_id, opts.name, opts.lease_s, static_cast<long long>(plan->trials.size()));
    if (!c) return c.error();
    if (!c->has_value()) return std::optional<std::size_t>{};
    ++out.trials_run;  // the executor calls claim under its own lock
    return std::optional<std::size_t>((*c)->plan_index);
  };
  src.may_come = [&]() -> Expected<bool> {
    // Only trials of this worker's plan: ones added later have workers of their own.
    auto c = st.queue_counts(run_id, static_cast<long long>(plan->trials.size()));
    if (!c) return c.error();
    return c->open() > 0;
  };
  ExecutorOptions eo;
  eo.lock_dir = opts.run.lock_dir;
  // A device Slurm gave this worker but a process outside Slurm holds: said
  // in the worker's log, as a local run says it (slots wait side by side).
  std::mutex say_mu;
  eo.on_wait = [&](const model::Slot& slot, int device, const std::string& path) {
    std::lock_guard lock(say_mu);
    say(fmt::format("worker {}: slot {} waiting for {} {}, held by another process ({})", opts.name, slot.index,
                    slot.kind, device, path));
  };
  QueueExecutor executor(*slots, eo, src);

  RunOptions ro = opts.run;
  if (data->run.kind == model::RunKind::Soak) {  // a soak's trials run as its submitter said
    ro.soak.enabled = true;
    ro.soak.duration_s = data->run.soak_duration_s;
    ro.soak.window_s = data->run.soak_window_s;
    ro.soak.hang_after_s = data->run.soak_hang_after_s;
  }
  ro.executor = &executor;
  ro.slots = *slots;
  ro.node_fingerprint = fp.hash;
  ro.claim_worker = opts.name;
  auto ran = extend_run(*suite, *plan, st, launcher, run_id, ro);
  if (!ran) return ran.error();
  out.ok = ran->trials_ok;
  out.failed = ran->trials_failed;
  out.interrupted = ran->status == model::RunStatus::Interrupted || util::interrupt_count() > 0;
  if (!out.interrupted) {
    auto finished = finish_queued_run(st, run_id);
    if (!finished) return finished.error();
    out.finished_run = *finished;
  }
  return out;
}

// -- submitting ---------------------------------------------------------------

namespace {

std::string tool_message(const exec::ToolResult& r) {
  if (!r.error.empty()) return r.error;
  std::string e(util::trim(r.err));
  if (e.empty()) e = std::string(util::trim(r.out));
  return e.empty() ? fmt::format("exit code {}", r.exit_code) : e;
}

}  // namespace

namespace {
Expected<std::string> submit_job(store::Store& st, long long run_id, const SubmitOptions& opts, const ToolFn& tool);
}  // namespace

Expected<std::string> submit_fleet(store::Store& st, long long run_id, const model::Plan& plan,
                                   const SubmitOptions& opts, const ToolFn& tool) {
  std::vector<store::QueueItem> items;
  items.reserve(plan.trials.size());
  for (std::size_t i = 0; i < plan.trials.size(); ++i) items.push_back({i, plan.trials[i].seq});
  if (auto s = st.enqueue_trials(run_id, items, 1 + std::max(0, opts.retries)); !s) return s.error();
  return submit_job(st, run_id, opts, tool);
}

namespace {
Expected<std::string> submit_job(store::Store& st, long long run_id, const SubmitOptions& opts, const ToolFn& tool) {
  // The job script names the run and nothing secret: the database spec
  // reaches the workers through PERFGATE_DB in the environment sbatch
  // exports, not through a command line `scontrol show job` would print.
  std::error_code ec;
  fs::create_directories(opts.worker_log_dir, ec);
  const fs::path script = fs::path(opts.worker_log_dir) / "worker.sh";
  {
    std::ofstream f(script);
    f << "#!/bin/sh\n"
      << "# perfgate fleet worker for run " << run_id << ", submitted by perfgate run --executor slurm\n"
      << "exec " << util::shell_quote(opts.perfgate_bin) << " worker --run " << run_id << " --lease "
      << util::format_value(opts.lease_s) << "s\n";
    if (!f) return Error::harness(fmt::format("cannot write {}", script.string()));
  }
  fs::permissions(script, fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read, ec);

  std::vector<std::string> argv = {"sbatch",
                                   "--parsable",
                                   fmt::format("--array=0-{}", std::max(1, opts.nodes) - 1),
                                   fmt::format("--job-name=perfgate-run-{}", run_id),
                                   "--output=" + (fs::path(opts.worker_log_dir) / "worker-%A_%a.log").string(),
                                   "--export=ALL"};
  if (!opts.partition.empty()) argv.push_back("--partition=" + opts.partition);
  for (const auto& a : opts.sbatch_args) argv.push_back(a);
  argv.push_back(script.string());
  auto r = tool(argv);
  if (!r.ok()) return Error::input(fmt::format("sbatch refused the workers of run {}: {}", run_id, tool_message(r)));
  // --parsable: "jobid" or "jobid;cluster".
  std::string job(util::trim(r.out));
  if (auto semi = job.find(';'); semi != std::string::npos) job.resize(semi);
  if (job.empty()) return Error::harness("sbatch printed no job id");
  if (auto s = st.record_fleet_job(run_id, job); !s) return s.error();
  return job;
}
}  // namespace

namespace {

// The array's tasks as squeue lists them: state and reason per task.
struct JobView {
  bool listed = false;  // squeue knows the job
  int pending = 0, running = 0, other = 0;
  std::string reason;  // of a pending task: "(Resources)", "(PartitionDown)"
};

Expected<JobView> job_view(const std::string& job, const ToolFn& tool) {
  auto r = tool({"squeue", "-h", "-r", "-j", job, "-o", "%T|%r"});
  JobView v;
  if (!r.ok()) {
    // A job squeue no longer knows (ended, MinJobAge passed) is "Invalid job id".
    if (r.ran && r.err.find("Invalid job id") != std::string::npos) return v;
    return Error::harness(fmt::format("squeue cannot show job {}: {}", job, tool_message(r)));
  }
  for (const auto& line : util::split(r.out, '\n')) {
    auto t = util::trim(line);
    if (t.empty()) continue;
    v.listed = true;
    auto bar = t.find('|');
    std::string state(t.substr(0, bar));
    std::string reason = bar == std::string_view::npos ? "" : std::string(t.substr(bar + 1));
    if (state == "PENDING") {
      ++v.pending;
      if (v.reason.empty()) v.reason = reason;
    } else if (state == "RUNNING" || state == "CONFIGURING" || state == "COMPLETING") {
      ++v.running;
    } else {
      ++v.other;
    }
  }
  return v;
}

}  // namespace

std::string perfgate_binary() { return util::self_executable(); }

std::optional<FleetSettings> fleet_settings_of_run(const store::RunRecord& run) {
  auto j = nlohmann::json::parse(run.plan_json, nullptr, false);
  if (!j.is_object() || !j.contains("load") || !j["load"].is_object() || !j["load"].contains("fleet"))
    return std::nullopt;
  const auto& f = j["load"]["fleet"];
  FleetSettings fs;
  fs.nodes = f.value("nodes", 1);
  fs.partition = f.value("partition", std::string());
  fs.sbatch_args = f.value("sbatch_args", std::vector<std::string>{});
  fs.retries = f.value("retries", 2);
  fs.lease_s = f.value("lease_s", 60.0);
  return fs;
}

Expected<RunOutcome> extend_fleet_run(store::Store& st, long long run_id, const model::Plan& extra,
                                      const std::string& db_spec, const FollowOptions& opts, const ToolFn& tool) {
  auto data = st.load_run(run_id);
  if (!data) return data.error();
  auto settings = fleet_settings_of_run(data->run);
  if (!settings) return Error::harness(fmt::format("run {} was not submitted to Slurm", run_id));
  auto before = st.queue_counts(run_id);
  if (!before) return before.error();
  // The stored plan grows by the extra cases and trials, so every worker
  // reads the same plan back (plan_of_run).
  auto j = nlohmann::json::parse(data->run.plan_json, nullptr, false);
  if (!j.is_object() || !j.contains("cases") || !j.contains("trials"))
    return Error::harness(fmt::format("run {} has no stored plan", run_id));
  std::vector<store::QueueItem> items;
  for (const auto& t : extra.trials) {
    const auto& c = extra.cases.at(t.case_index);
    std::size_t ci = j["cases"].size();
    for (std::size_t k = 0; k < j["cases"].size(); ++k)
      if (j["cases"][k].value("workload", std::string()) == c.workload &&
          model::params_json(model::params_from_json(j["cases"][k]["params"].dump())) == c.params_json)
        ci = k;
    if (ci == j["cases"].size())
      j["cases"].push_back({{"workload", c.workload}, {"params", nlohmann::json::parse(c.params_json)}});
    items.push_back({j["trials"].size(), t.seq});
    j["trials"].push_back({ci, t.repeat});
  }
  if (auto s = st.update_run_plan(run_id, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                                  data->run.artifacts_dir);
      !s)
    return s.error();
  if (auto s = st.enqueue_trials(run_id, items, 1 + std::max(0, settings->retries)); !s) return s.error();
  // Running again while its new trials are out; the last worker (or the follower) ends it.
  if (auto s = st.finish_run(run_id, model::RunStatus::Running, 0); !s) return s.error();
  SubmitOptions so;
  so.nodes = settings->nodes;
  so.partition = settings->partition;
  so.sbatch_args = settings->sbatch_args;
  so.retries = settings->retries;
  so.lease_s = settings->lease_s;
  so.perfgate_bin = perfgate_binary();
  so.worker_log_dir = (fs::path(data->run.artifacts_dir) / "slurm").string();
  ::setenv("PERFGATE_DB", db_spec.c_str(), 1);
  auto job = submit_job(st, run_id, so, tool);
  if (!job) {
    // Nothing will claim the new trials: take them back, and the run ends as it was.
    (void)st.cancel_queue(run_id);
    (void)st.finish_run(run_id, data->run.status, data->run.ended_at);
    return job.error();
  }
  if (opts.progress)
    *opts.progress << fmt::format("run {}: {} more trial(s) queued for Slurm job {}", run_id, items.size(), *job)
                   << std::endl;
  FollowOptions fo = opts;
  fo.queued_before = before->total();
  for (const auto& t : data->trials) fo.already_reported.insert(t.id);
  return follow_fleet(st, run_id, fo, tool);
}

Expected<RunOutcome> follow_fleet(store::Store& st, long long run_id, const FollowOptions& opts, const ToolFn& tool) {
  auto say = [&](const std::string& line) {
    if (opts.progress) *opts.progress << line << std::endl;
  };
  auto jobs = st.fleet_jobs(run_id);
  if (!jobs) return jobs.error();
  RunOutcome out;
  out.run_id = run_id;
  std::set<long long> reported = opts.already_reported;
  const double started = util::unix_now_s();
  bool ever_ran = false;
  double gone_since = 0;
  double squeue_failing_since = 0;
  double db_wait_s = opts.poll_s;                             // backs off while nothing changes
  double squeue_every_s = opts.poll_s, next_squeue_at_s = 0;  // backs off always
  bool running = false, pending = false;                      // where squeue last saw the jobs
  std::string reason;
  std::array<int, 4> last_counts{-1, -1, -1, -1};
  auto wait = [&](double seconds) {
    for (double waited = 0; waited < seconds && util::interrupt_count() == 0; waited += 0.05)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  };
  auto cancel = [&](const std::string& why) {
    // The queue first: a worker that records its trial as interrupted after
    // this leaves it interrupted; after scancel alone it would queue it again.
    (void)st.cancel_queue(run_id);
    for (const auto& j : *jobs) (void)tool({"scancel", j});
    say(fmt::format("run {}: {}; Slurm job {} cancelled", run_id, why, util::join(*jobs, ", ")));
  };
  while (true) {
    // The queue before the trials: a worker records its trial's status in
    // the transaction that ends its claim, so when the counts say nothing is
    // open the trials read after them hold every result. Read the other way
    // round, a trial finishing between the two reads ended the loop
    // unreported (the last "[16/16]" line was missing from a CI run).
    auto counts = st.queue_counts(run_id);
    if (!counts) return counts.error();
    auto data = st.load_run(run_id);
    if (!data) return data.error();
    std::map<long long, std::string> labels;
    for (const auto& c : data->configs)
      labels[c.id] =
          c.workload + (c.params_json == "{}" ? "" : " " + model::params_label(model::params_from_json(c.params_json)));
    out.trials_total = counts->total() - opts.queued_before;
    // The finished trials not shown yet, with the node they ran on.
    std::vector<const model::TrialRecord*> fresh;
    for (const auto& t : data->trials)
      if (t.status != model::TrialStatus::Running && !reported.count(t.id)) fresh.push_back(&t);
    std::sort(fresh.begin(), fresh.end(),
              [](auto* a, auto* b) { return a->started_at + a->wall_s < b->started_at + b->wall_s; });
    for (const auto* t : fresh) {
      reported.insert(t->id);
      std::string where =
          fmt::format("{} (repeat {}) on {}{}", labels[t->config_id], t->repeat + 1, t->host,
                      t->devices.empty() ? "" : fmt::format(" {} {}", t->device_kind, util::join_ints(t->devices)));
      if (t->status == model::TrialStatus::Ok) {
        ++out.trials_ok;
        say(fmt::format("[{}/{}] {}  ok  {}", out.trials_ok + out.trials_failed, out.trials_total, where,
                        util::format_duration(t->wall_s)));
      } else if (t->status == model::TrialStatus::Lost) {
        say(fmt::format("[lost] {}: {}", where, t->error));
      } else if (t->status == model::TrialStatus::Interrupted) {
        say(fmt::format("[-] {}  interrupted", where));
      } else {
        ++out.trials_failed;
        say(fmt::format("[{}/{}] {}  {}  {}", out.trials_ok + out.trials_failed, out.trials_total, where,
                        model::to_string(t->status), t->error));
      }
    }
    if (counts->open() == 0) {
      auto fin = finish_queued_run(st, run_id);
      if (!fin) return fin.error();
      auto again = st.load_run(run_id);
      if (!again) return again.error();
      out.status = again->run.status;
      break;
    }
    if (util::interrupt_count() > 0) {
      cancel("interrupted");
      // The workers record their running trials as interrupted as they
      // stop (cancel_queue has already ended the claims, so the trials'
      // own status is what to wait for), at most 10 s; finish_run marks
      // whatever a worker did not record in time as interrupted.
      for (int i = 0; i < 100; ++i) {
        auto d = st.load_run(run_id);
        if (!d || std::none_of(d->trials.begin(), d->trials.end(),
                               [](const model::TrialRecord& t) { return t.status == model::TrialStatus::Running; }))
          break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
      (void)st.finish_run(run_id, model::RunStatus::Interrupted, util::unix_now_s());
      out.status = model::RunStatus::Interrupted;
      break;
    }
    // Where the job is: never started (pending past the start timeout), or
    // gone while trials are still open.
    // Nothing new since the last look: look less often.
    const std::array<int, 4> now_counts{counts->pending, counts->claimed, counts->done, counts->lost};
    db_wait_s = fresh.empty() && now_counts == last_counts ? std::min(db_wait_s * 2, opts.max_poll_s) : opts.poll_s;
    last_counts = now_counts;
    std::optional<Error> squeue_error;
    if (util::unix_now_s() >= next_squeue_at_s) {
      next_squeue_at_s = util::unix_now_s() + squeue_every_s;
      squeue_every_s = std::min(squeue_every_s * 2, opts.squeue_interval_s);
      bool any_running = false, any_pending = false;
      std::string why;
      for (const auto& j : *jobs) {
        auto v = job_view(j, tool);
        if (!v) {
          squeue_error = v.error();
          break;
        }
        any_running |= v->running > 0;
        any_pending |= v->pending > 0;
        if (why.empty()) why = v->reason;
      }
      if (!squeue_error) {
        running = any_running;
        pending = any_pending;
        reason = why;
      }
    }
    if (squeue_error) {
      // One failed squeue is not the job's end: the workers go on writing
      // to the database whatever slurmctld is doing.
      const double now = util::unix_now_s();
      if (squeue_failing_since == 0) {
        squeue_failing_since = now;
        say(fmt::format("run {}: {}; following the run from the database until squeue answers (at most {})", run_id,
                        squeue_error->message, util::format_duration(opts.squeue_grace_s)));
      }
      if (now - squeue_failing_since > opts.squeue_grace_s)
        return Error::harness(fmt::format(
            "run {}: squeue has failed for {}: {}; the job is left running (follow it again with: perfgate wait {})",
            run_id, util::format_duration(now - squeue_failing_since), squeue_error->message, run_id));
      wait(db_wait_s);
      continue;
    }
    if (squeue_failing_since != 0) {
      say(fmt::format("run {}: squeue answers again after {}", run_id,
                      util::format_duration(util::unix_now_s() - squeue_failing_since)));
      squeue_failing_since = 0;
    }
    ever_ran |= running || counts->done + counts->claimed + counts->lost > opts.queued_before;
    if (!ever_ran && pending && util::unix_now_s() - started > opts.start_timeout_s) {
      cancel(fmt::format("no worker started within {}", util::format_duration(opts.start_timeout_s)));
      (void)st.finish_run(run_id, model::RunStatus::Failed, util::unix_now_s());
      return Error::harness(fmt::format("run {}: Slurm job {} did not start within {}: squeue says {}", run_id,
                                        util::join(*jobs, ", "), util::format_duration(opts.start_timeout_s),
                                        reason.empty() ? "pending" : reason));
    }
    if (!running && !pending) {
      // The job ended with trials open: they wait for a lease to run out
      // with no worker to take them. A grace period covers squeue lagging
      // behind a worker that is just starting or just committed its last trial.
      if (gone_since == 0) gone_since = util::unix_now_s();
      if (util::unix_now_s() - gone_since > 10) {
        (void)st.cancel_queue(run_id);
        (void)st.finish_run(run_id, model::RunStatus::Interrupted, util::unix_now_s());
        return Error::harness(
            fmt::format("run {}: Slurm job {} ended with {} trial(s) not run (workers lost or "
                        "out of time); see the worker logs",
                        run_id, util::join(*jobs, ", "), counts->open()));
      }
    } else {
      gone_since = 0;
    }
    wait(db_wait_s);
  }
  out.trials_not_run = out.trials_total - out.trials_ok - out.trials_failed;
  return out;
}

}  // namespace perfgate::runner
