#pragma once
// The results store. Every analysis reads from it, so anything can be
// re-analysed later. SQLite is the embedded default; PostgreSQL is the
// shared one a team's nodes write at once (../shared/DESIGN.md, "Storage
// backends"). Both hold the same schema.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "harness/model/metric.hpp"
#include "harness/model/trial.hpp"
#include "harness/model/verdict.hpp"
#include "harness/util/error.hpp"

namespace perfgate::store {

struct RunRecord {
  long long id = 0;
  std::string suite;
  std::string suite_path;
  std::string description;
  double started_at = 0;  // unix seconds
  double ended_at = 0;    // 0 while running
  model::RunStatus status = model::RunStatus::Running;
  std::string host;
  long long pid = 0;  // of the perfgate that ran it, to find abandoned runs
  std::string fingerprint_json;
  std::string fingerprint_hash;
  std::string git_commit;
  std::string git_branch;
  std::vector<std::string> tags;
  std::uint64_t seed = 0;
  std::string argv;       // the perfgate command line
  std::string env_json;   // recorded environment (secrets redacted)
  std::string plan_json;  // cases and order, to reproduce the run
  std::string artifacts_dir;
  std::string perfgate_version;
  model::RunKind kind = model::RunKind::Run;
  // Soaks: the options the run was made with (what soak-report, checklist
  // and the dashboard analyse with unless told otherwise); 0 for other runs.
  double soak_duration_s = 0;
  double soak_window_s = 0;
  double soak_hang_after_s = 0;
};

struct RunListRow {
  RunRecord run;
  int trials_ok = 0;
  int trials_failed = 0;
  int trials_total = 0;
};

struct ConfigRecord {
  long long id = 0;
  std::string workload;
  std::string params_json;
};

struct SampleRow {
  long long metric_id;
  long long step;
  double t_s;
  double value;
};

struct RunData {
  RunRecord run;
  std::vector<ConfigRecord> configs;
  std::map<long long, std::string> primary_metrics;  // config id -> the configuration's primary metric in this run
  std::vector<model::TrialRecord> trials;            // with summaries, in run order
  std::vector<model::MetricInfo> metrics;            // every metric the trials mention
};

// Which runs a baseline selector means. Empty fields match anything.
struct RunQuery {
  std::string suite;
  std::string tag;
  std::string commit_prefix;   // git commit, or its first characters
  long long before_id = 0;     // only runs older than this one (0: any)
  long long exclude_id = 0;    // never this run (the candidate)
  bool completed_only = true;  // skip running, interrupted and failed runs
  // Runs of kind bisect measure old commits now, one configuration each:
  // not a baseline, nor a point of a history in time. Only bisect reads them.
  bool bisect_runs = false;
  int limit = 0;  // newest first; 0: all
};

// A gate's outcome as recorded, for reports and dashboards.
struct GateRecord {
  long long id = 0;
  long long run_id = 0;  // the candidate
  double created_at = 0;
  std::string baseline;  // the selector as given
  std::vector<long long> baseline_runs;
  std::string policy;   // path, '' for the built-in policy
  std::string outcome;  // regression | pass | inconclusive | error
  int trials_added = 0;
  bool forced = false;
  std::vector<model::Comparison> comparisons;
};

// The fleet queue (../shared/DESIGN.md, "Execution"): the trials of a run
// that workers on other nodes claim one at a time.
struct QueueItem {
  std::size_t plan_index = 0;  // into the run's plan trials
  int seq = 0;                 // run order: claims take the lowest first
};
struct Claim {
  long long queue_id = 0;
  std::size_t plan_index = 0;
  int attempt = 1;  // 1 for the first
};
inline constexpr long long k_all_trials = 1LL << 62;
struct QueueCounts {
  int pending = 0, claimed = 0, done = 0, lost = 0, cancelled = 0;
  int total() const { return pending + claimed + done + lost + cancelled; }
  int open() const { return pending + claimed; }  // not finished one way or another
};

// A build of `perfgate bisect`, cached by tree hash and build command.
struct BuildRecord {
  std::string key, tree, build_command, git_commit;
  std::string status;  // ok | failed
  int attempts = 0;
  std::string worktree, log_path, error;
  double duration_s = 0, updated_at = 0;
};

// A bisect's outcome as recorded.
struct BisectRecord {
  long long id = 0;
  double created_at = 0;
  std::string suite, workload, params_json, metric, good, bad;
  std::string outcome;      // culprit | range | no-regression | interrupted
  std::string report_json;  // the JSON report
};

class Store {
 public:
  virtual ~Store() = default;

  // The database's identity (12 hex digits, made when it was created or
  // upgraded): run folders are kept under it.
  virtual Expected<std::string> store_id() = 0;
  virtual Expected<long long> begin_run(const RunRecord& run) = 0;
  virtual Status update_run_plan(long long run_id, const std::string& plan_json, const std::string& artifacts_dir) = 0;
  // Each configuration's primary metric in this run (config id, metric).
  virtual Status set_primary_metrics(long long run_id,
                                     const std::vector<std::pair<long long, std::string>>& primary) = 0;
  virtual Status finish_run(long long run_id, model::RunStatus status, double ended_at) = 0;
  // Removes a run and everything recorded under it (trials, raw samples,
  // summaries, tags, its gates and their verdicts, its queue and jobs) in
  // one transaction: how `perfgate db copy` replaces a run an earlier copy
  // left half-written. Gates of other runs that named it as a baseline keep
  // their verdicts.
  virtual Status delete_run(long long run_id) = 0;
  virtual Expected<long long> config_id(const std::string& workload, const std::string& params_json) = 0;
  // Registers a metric (or updates its unit / direction) and returns its id.
  virtual Expected<long long> metric_id(const model::MetricInfo& info) = 0;
  // Inserts the trial as running, before it starts.
  virtual Expected<long long> begin_trial(const model::TrialRecord& trial) = 0;
  // Raw step samples, in one transaction per call (callers batch).
  virtual Status append_samples(long long trial_id, std::span<const SampleRow> rows) = 0;
  // Final state and summaries of a trial, in one transaction. A queued
  // trial's claim ends in the same transaction: done, or (interrupted with
  // its worker) pending again and this attempt lost. A trial whose lease
  // expired meanwhile (rerun elsewhere) is not overwritten: an error says so.
  virtual Status finish_trial(const model::TrialRecord& trial, std::span<const long long> summary_metric_ids) = 0;

  virtual Expected<std::vector<RunListRow>> list_runs(int limit, const std::string& suite = {}) = 0;
  // "42", "latest", "latest:TAG".
  virtual Expected<long long> resolve_run(const std::string& selector) = 0;
  virtual Expected<RunData> load_run(long long run_id) = 0;
  // Samples of one trial and metric, in step order.
  virtual Expected<std::vector<SampleRow>> load_samples(long long trial_id, long long metric_id) = 0;
  // Runs matching the query, newest first, with their tags.
  virtual Expected<std::vector<RunRecord>> find_runs(const RunQuery& q) = 0;
  // Records a gate and its verdicts in one transaction; returns the gate id.
  virtual Expected<long long> save_gate(const GateRecord& gate) = 0;
  // Gates of a run, newest first, with their verdicts.
  virtual Expected<std::vector<GateRecord>> load_gates(long long run_id) = 0;
  // Samples of one trial and metric in step order, one at a time (a soak's
  // series can hold millions; nothing is gathered in memory).
  virtual Status for_each_sample(long long trial_id, long long metric_id,
                                 const std::function<void(const SampleRow&)>& fn) = 0;
  // The metrics that have raw samples in a trial, with their ids.
  virtual Expected<std::vector<std::pair<model::MetricInfo, long long>>> sampled_metrics(long long trial_id) = 0;
  // Runs left "running" by a perfgate on this host that no longer exists
  // become "interrupted". Runs with queued trials are left alone: their
  // workers and `perfgate wait` end them, not the host that submitted them.
  virtual Expected<int> close_abandoned_runs(const std::string& host) = 0;

  // -- the fleet queue ------------------------------------------------------
  // Queues trials of a run, each tried at most max_attempts times.
  virtual Status enqueue_trials(long long run_id, std::span<const QueueItem> items, int max_attempts) = 0;
  virtual Status record_fleet_job(long long run_id, const std::string& job_id) = 0;
  virtual Expected<std::vector<std::string>> fleet_jobs(long long run_id) = 0;
  // Takes the pending trial of the run that comes first, leased to `worker`
  // for lease_s seconds of the database's clock; nullopt when none is
  // pending. Leases that expired first make their trials pending again (or
  // lost, out of attempts) and mark the attempt's trial "lost".
  // Only rows whose plan_index is below `below_index` are taken: a worker
  // claims what its copy of the plan holds (trials added to the run later,
  // by an adaptive gate, go to the workers submitted with them).
  virtual Expected<std::optional<Claim>> claim_trial(long long run_id, const std::string& worker, double lease_s,
                                                     long long below_index = k_all_trials) = 0;
  // Inserts the trial of the attempt `worker` claimed at plan_index as
  // running and names it in the claim, in one transaction. A worker killed
  // at any moment leaves no trial row (the attempt is queued again when its
  // lease runs out) or one that the lease expiry finds and marks lost;
  // never a "running" row that no claim names, which the run's end could
  // only call interrupted. A claim no longer this worker's is left alone.
  virtual Expected<long long> begin_claimed_trial(const model::TrialRecord& trial, std::size_t plan_index,
                                                  const std::string& worker) = 0;
  // Extends every lease `worker` holds; returns how many it still holds.
  virtual Expected<int> renew_leases(const std::string& worker, double lease_s) = 0;
  // The queue of a run, after expiring leases as claim_trial does.
  virtual Expected<QueueCounts> queue_counts(long long run_id, long long below_index = k_all_trials) = 0;
  // Ctrl-C on the submitter: nothing more of the run is started; trials
  // running now end as interrupted, not as lost.
  virtual Status cancel_queue(long long run_id) = 0;
  virtual Status save_node_fingerprint(const std::string& hash, const std::string& json) = 0;
  virtual Expected<std::string> node_fingerprint(const std::string& hash) = 0;
  // The distinct node fingerprints of a run's trials, sorted ("" for trials
  // that ran where the run did, as every local run's do).
  virtual Expected<std::vector<std::string>> trial_node_fingerprints(long long run_id) = 0;

  // -- bisect -------------------------------------------------------------
  virtual Expected<std::optional<BuildRecord>> find_build(const std::string& key) = 0;
  // Inserts or replaces the build of b.key.
  virtual Status save_build(const BuildRecord& b) = 0;
  virtual Expected<long long> save_bisect(const BisectRecord& b) = 0;
  // Bisects of a suite ("" for every suite), newest first.
  virtual Expected<std::vector<BisectRecord>> load_bisects(const std::string& suite) = 0;
};

struct OpenOptions {
  double busy_timeout_s = 10;  // how long to wait for another perfgate's lock
};

// Opens or creates a perfgate database. Refuses files that are not perfgate
// databases (never overwrites them) and reports damaged ones.
Expected<std::unique_ptr<Store>> open_sqlite_store(const std::string& path, const OpenOptions& opts = {});

// Connects to a PostgreSQL database (a libpq URL or key=value string) and
// creates or upgrades perfgate's schema in it; refuses a database holding
// another application's tables or a newer schema. Messages never show the
// password.
Expected<std::unique_ptr<Store>> open_postgres_store(const std::string& conninfo, const OpenOptions& opts = {});

// What `--db` / PERFGATE_DB names: a postgresql:// or postgres:// URL, or a
// libpq key=value string, is PostgreSQL; a path is a SQLite file; anything
// else that looks like a URL is refused as an input error.
enum class Backend { Sqlite, Postgres };
Expected<Backend> backend_of(const std::string& spec);
Expected<std::unique_ptr<Store>> open_store(const std::string& spec, const OpenOptions& opts = {});
// The spec as it may be shown: a connection string without its password.
std::string display_name(const std::string& spec);

}  // namespace perfgate::store
