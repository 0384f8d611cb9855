// SQLite implementation of Store: the only file that includes sqlite3.h.

#include <signal.h>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <sqlite3.h>
#include <nlohmann/json.hpp>

#include "harness/model/params.hpp"
#include "harness/store/queue_sql.hpp"
#include "harness/store/rows.hpp"
#include "harness/store/schema.hpp"
#include "harness/store/store.hpp"
#include "harness/util/strings.hpp"
#include "harness/util/time.hpp"

namespace perfgate::store {
namespace fs = std::filesystem;

namespace {

// 'PGAT': marks a file as a perfgate database (PRAGMA application_id).
constexpr int k_application_id = 0x50474154;

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) { m_rc = sqlite3_prepare_v2(db, sql, -1, &m_stmt, nullptr); }
  ~Stmt() { sqlite3_finalize(m_stmt); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool ok() const { return m_rc == SQLITE_OK; }
  Stmt& bind(int i, long long v) {
    sqlite3_bind_int64(m_stmt, i, v);
    return *this;
  }
  Stmt& bind(int i, int v) {
    sqlite3_bind_int64(m_stmt, i, v);
    return *this;
  }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(m_stmt, i, v);
    return *this;
  }
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(m_stmt, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind_null(int i) {
    sqlite3_bind_null(m_stmt, i);
    return *this;
  }
  int step() { return sqlite3_step(m_stmt); }
  void reset() {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
  }
  long long i64(int c) const { return sqlite3_column_int64(m_stmt, c); }
  double f64(int c) const { return sqlite3_column_double(m_stmt, c); }
  // Parameter index of a named parameter (":name"), 0 if the statement has none.
  int index(const char* name) const { return sqlite3_bind_parameter_index(m_stmt, name); }
  bool is_null(int c) const { return sqlite3_column_type(m_stmt, c) == SQLITE_NULL; }
  std::string text(int c) const {
    auto p = sqlite3_column_text(m_stmt, c);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(m_stmt, c)))
             : std::string{};
  }

 private:
  sqlite3_stmt* m_stmt = nullptr;
  int m_rc = SQLITE_ERROR;
};

class SqliteStore final : public Store {
 public:
  SqliteStore(sqlite3* db, std::string path, double busy_s) : m_db(db), m_path(std::move(path)), m_busy_s(busy_s) {}
  ~SqliteStore() override { sqlite3_close_v2(m_db); }

  Status init();

  Expected<std::string> store_id() override;
  Expected<long long> begin_run(const RunRecord& r) override;
  Status update_run_plan(long long run_id, const std::string& plan_json, const std::string& artifacts_dir) override;
  Status set_primary_metrics(long long run_id, const std::vector<std::pair<long long, std::string>>& primary) override;
  Status finish_run(long long run_id, model::RunStatus status, double ended_at) override;
  Status delete_run(long long run_id) override;
  Expected<long long> config_id(const std::string& workload, const std::string& params_json) override;
  Expected<long long> metric_id(const model::MetricInfo& info) override;
  Expected<long long> begin_trial(const model::TrialRecord& t) override;
  Status append_samples(long long trial_id, std::span<const SampleRow> rows) override;
  Status finish_trial(const model::TrialRecord& t, std::span<const long long> summary_metric_ids) override;
  Expected<std::vector<RunListRow>> list_runs(int limit, const std::string& suite) override;
  Expected<long long> resolve_run(const std::string& selector) override;
  Expected<RunData> load_run(long long run_id) override;
  Expected<std::vector<SampleRow>> load_samples(long long trial_id, long long metric_id) override;
  Expected<int> close_abandoned_runs(const std::string& host) override;
  Expected<std::vector<RunRecord>> find_runs(const RunQuery& q) override;
  Status for_each_sample(long long trial_id, long long metric_id,
                         const std::function<void(const SampleRow&)>& fn) override;
  Expected<std::vector<std::pair<model::MetricInfo, long long>>> sampled_metrics(long long trial_id) override;
  Expected<long long> save_gate(const GateRecord& gate) override;
  Expected<std::vector<GateRecord>> load_gates(long long run_id) override;
  Status enqueue_trials(long long run_id, std::span<const QueueItem> items, int max_attempts) override;
  Status record_fleet_job(long long run_id, const std::string& job_id) override;
  Expected<std::vector<std::string>> fleet_jobs(long long run_id) override;
  Expected<std::optional<Claim>> claim_trial(long long run_id, const std::string& worker, double lease_s,
                                             long long below_index) override;
  Expected<long long> begin_claimed_trial(const model::TrialRecord& trial, std::size_t plan_index,
                                          const std::string& worker) override;
  Expected<int> renew_leases(const std::string& worker, double lease_s) override;
  Expected<QueueCounts> queue_counts(long long run_id, long long below_index) override;
  Status cancel_queue(long long run_id) override;
  Status save_node_fingerprint(const std::string& hash, const std::string& json) override;
  Expected<std::string> node_fingerprint(const std::string& hash) override;
  Expected<std::vector<std::string>> trial_node_fingerprints(long long run_id) override;
  Expected<std::optional<BuildRecord>> find_build(const std::string& key) override;
  Status save_build(const BuildRecord& b) override;
  Expected<long long> save_bisect(const BisectRecord& b) override;
  Expected<std::vector<BisectRecord>> load_bisects(const std::string& suite) override;

 private:
  Status expire_leases(long long run_id);

 private:
  Error fail(int rc, const std::string& doing) const {
    std::string msg = sqlite3_errmsg(m_db);
    if (rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
      return Error::harness(
          fmt::format("{}: database is locked by another process (waited {:.0f} s) while {}; "
                      "try again when the other perfgate finishes, or raise --db-timeout",
                      m_path, m_busy_s, doing));
    if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB)
      return Error::harness(
          fmt::format("{}: database is damaged ({}) while {}; check it with: sqlite3 {} 'PRAGMA integrity_check'",
                      m_path, msg, doing, m_path));
    return Error::harness(fmt::format("{}: database error while {}: {}", m_path, doing, msg));
  }
  Status exec(const char* sql, const std::string& doing) {
    char* err = nullptr;
    int rc = sqlite3_exec(m_db, sql, nullptr, nullptr, &err);
    sqlite3_free(err);
    if (rc != SQLITE_OK) return fail(rc, doing);
    return Ok{};
  }
  // Runs fn inside BEGIN IMMEDIATE ... COMMIT; rolls back if it fails.
  template <typename Fn>
  Status transaction(const std::string& doing, Fn&& fn) {
    if (auto st = exec("BEGIN IMMEDIATE", doing); !st) return st;
    Status st = fn();
    if (!st) {
      (void)exec("ROLLBACK", doing);  // the first error is the one to report
      return st;
    }
    return exec("COMMIT", doing);
  }
  Expected<std::vector<std::string>> tags_of(long long run_id);
  // The running trial row, inside the caller's transaction.
  Expected<long long> insert_trial_locked(const model::TrialRecord& t);

  sqlite3* m_db;
  std::string m_path;
  double m_busy_s;
  std::unique_ptr<Stmt> m_insert_sample;
  // One connection, used by the runner and its sample-writer thread: every
  // public method holds this, so transactions never interleave.
  std::recursive_mutex m_mu;
};

// k_run_columns and k_run_column_count: schema.hpp; the other rows: rows.hpp.

Status SqliteStore::init() {
  sqlite3_busy_timeout(m_db, static_cast<int>(m_busy_s * 1000));
  // Is this ours, new, or someone else's?
  {
    Stmt s(m_db, "PRAGMA application_id");
    if (!s.ok()) return fail(sqlite3_errcode(m_db), "reading the file header");
    int rc = s.step();
    if (rc != SQLITE_ROW) return fail(rc, "reading the file header");
    long long app = s.i64(0);
    if (app != k_application_id) {
      Stmt t(m_db, "SELECT group_concat(name, ', ') FROM sqlite_master WHERE type = 'table'");
      int trc = t.step();
      if (trc != SQLITE_ROW) return fail(trc, "listing tables");
      std::string tables = t.text(0);
      if (app != 0 || !tables.empty())
        return Error::harness(
            fmt::format("{}: is a SQLite database of another application (tables: {}); "
                        "perfgate will not touch it. Use --db to choose another file",
                        m_path, tables.empty() ? "none" : tables));
    }
  }
  // Into WAL needs the file to itself, and SQLite answers "busy" at once,
  // without its busy handler, while another connection is reading or
  // switching it too (perfgates opening a fresh database together): asked
  // again until the busy timeout. Once a file is in WAL this is a no-op.
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(m_busy_s);;) {
    int rc = sqlite3_exec(m_db, "PRAGMA journal_mode = WAL", nullptr, nullptr, nullptr);
    if (rc == SQLITE_OK) break;
    if ((rc & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() >= until)
      return fail(rc, "switching to WAL mode");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (auto st = exec("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON", "configuring the connection"); !st)
    return st;
  if (auto st = migrate(m_db, k_application_id); !st) {
    return Error::harness(fmt::format("{}: {}", m_path, st.error().message));
  }
  m_insert_sample =
      std::make_unique<Stmt>(m_db, "INSERT INTO samples(trial_id, metric_id, step, t_s, value) VALUES (?,?,?,?,?)");
  if (!m_insert_sample->ok()) return fail(sqlite3_errcode(m_db), "preparing statements");
  return Ok{};
}

Expected<long long> SqliteStore::begin_run(const RunRecord& r) {
  std::lock_guard lock(m_mu);
  long long id = 0;
  auto st = transaction("recording the new run", [&]() -> Status {
    Stmt s(m_db,
           "INSERT INTO runs(suite, suite_path, description, started_at, ended_at, status, host, pid, fingerprint, "
           "fingerprint_hash, git_commit, git_branch, seed, argv, env, plan, artifacts_dir, perfgate_version, kind, "
           "soak_duration_s, soak_window_s, soak_hang_after_s) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    s.bind(1, r.suite).bind(2, r.suite_path).bind(3, r.description).bind(4, r.started_at).bind(5, r.ended_at);
    s.bind(6, std::string(model::to_string(r.status))).bind(7, r.host).bind(8, r.pid).bind(9, r.fingerprint_json);
    s.bind(10, r.fingerprint_hash).bind(11, r.git_commit).bind(12, r.git_branch);
    s.bind(13, static_cast<long long>(r.seed)).bind(14, r.argv).bind(15, r.env_json).bind(16, r.plan_json);
    s.bind(17, r.artifacts_dir).bind(18, r.perfgate_version).bind(19, std::string(model::to_string(r.kind)));
    s.bind(20, r.soak_duration_s).bind(21, r.soak_window_s).bind(22, r.soak_hang_after_s);
    if (int rc = s.step(); rc != SQLITE_DONE) return fail(rc, "recording the new run");
    id = sqlite3_last_insert_rowid(m_db);
    Stmt t(m_db, "INSERT OR IGNORE INTO run_tags(run_id, tag) VALUES (?, ?)");
    for (const auto& tag : r.tags) {
      t.bind(1, id).bind(2, tag);
      if (int rc = t.step(); rc != SQLITE_DONE) return fail(rc, "recording run tags");
      t.reset();
    }
    return Ok{};
  });
  if (!st) return st.error();
  return id;
}

Status SqliteStore::update_run_plan(long long run_id, const std::string& plan_json, const std::string& artifacts_dir) {
  std::lock_guard lock(m_mu);
  return transaction("recording the run plan", [&]() -> Status {
    Stmt s(m_db, "UPDATE runs SET plan = ?, artifacts_dir = ? WHERE id = ?");
    s.bind(1, plan_json).bind(2, artifacts_dir).bind(3, run_id);
    if (int rc = s.step(); rc != SQLITE_DONE) return fail(rc, "recording the run plan");
    return Ok{};
  });
}

Status SqliteStore::set_primary_metrics(long long run_id,
                                        const std::vector<std::pair<long long, std::string>>& primary) {
  std::lock_guard lock(m_mu);
  return transaction("recording the primary metrics", [&]() -> Status {
    Stmt s(m_db, "INSERT OR REPLACE INTO run_configs(run_id, config_id, primary_metric) VALUES (?, ?, ?)");
    for (const auto& [config, metric] : primary) {
      s.bind(1, run_id).bind(2, config).bind(3, metric);
      int rc = s.step();
      s.reset();
      if (rc != SQLITE_DONE) return fail(rc, "recording the primary metrics");
    }
    return Ok{};
  });
}

Status SqliteStore::finish_run(long long run_id, model::RunStatus status, double ended_at) {
  std::lock_guard lock(m_mu);
  return transaction("closing the run", [&]() -> Status {
    Stmt s(m_db, "UPDATE runs SET status = ?, ended_at = ? WHERE id = ?");
    s.bind(1, std::string(model::to_string(status))).bind(2, ended_at).bind(3, run_id);
    if (int rc = s.step(); rc != SQLITE_DONE) return fail(rc, "closing the run");
    // Trials that never finished (the harness was stopped) are interrupted, not running.
    Stmt t(m_db, "UPDATE trials SET status = 'interrupted' WHERE run_id = ? AND status = 'running'");
    t.bind(1, run_id);
    if (int rc = t.step(); rc != SQLITE_DONE) return fail(rc, "closing the run's trials");
    return Ok{};
  });
}

Status SqliteStore::delete_run(long long run_id) {
  std::lock_guard lock(m_mu);
  return transaction("deleting a run", [&]() -> Status {
    // Samples have no foreign key (rows.hpp, schema.cpp: found through their
    // trial's rowid range); the rest follow the run by ON DELETE CASCADE
    // but the queue and jobs, which predate that habit.
    for (const char* sql : {
             "DELETE FROM samples WHERE rowid IN (SELECT s.rowid FROM trials t JOIN samples s ON s.rowid BETWEEN "
             "t.samples_first_rowid AND t.samples_last_rowid AND s.trial_id = t.id WHERE t.run_id = ?1)",
             "DELETE FROM trial_queue WHERE run_id = ?1",
             "DELETE FROM fleet_jobs WHERE run_id = ?1",
             "DELETE FROM runs WHERE id = ?1",
         }) {
      Stmt s(m_db, sql);
      s.bind(1, run_id);
      if (int rc = s.step(); rc != SQLITE_DONE) return fail(rc, "deleting a run");
    }
    return Ok{};
  });
}

Expected<std::string> SqliteStore::store_id() {
  std::lock_guard lock(m_mu);
  Stmt s(m_db, "SELECT value FROM store_info WHERE key = 'id'");
  if (int rc = s.step(); rc != SQLITE_ROW) return fail(rc, "reading the database's id");
  return s.text(0);
}

Expected<long long> SqliteStore::config_id(const std::string& workload, const std::string& params_json) {
  std::lock_guard lock(m_mu);
  long long id = 0;
  auto st = transaction("recording a configuration", [&]() -> Status {
    Stmt ins(m_db, "INSERT OR IGNORE INTO configs(workload, params) VALUES (?, ?)");
    ins.bind(1, workload).bind(2, params_json);
    if (int rc = ins.step(); rc != SQLITE_DONE) return fail(rc, "recording a configuration");
    Stmt sel(m_db, "SELECT id FROM configs WHERE workload = ? AND params = ?");
    sel.bind(1, workload).bind(2, params_json);
    if (int rc = sel.step(); rc != SQLITE_ROW) return fail(rc, "reading a configuration");
    id = sel.i64(0);
    return Ok{};
  });
  if (!st) return st.error();
  return id;
}

Expected<long long> SqliteStore::metric_id(const model::MetricInfo& info) {
  std::lock_guard lock(m_mu);
  long long id = 0;
  auto st = transaction("recording a metric", [&]() -> Status {
    Stmt ins(m_db,
             "INSERT INTO metrics(name, unit, better, kind) VALUES (?, ?, ?, ?) "
             "ON CONFLICT(name) DO UPDATE SET unit = CASE WHEN excluded.unit <> '' THEN excluded.unit ELSE unit END, "
             "better = excluded.better, kind = CASE WHEN excluded.kind = 'fact' THEN 'fact' ELSE kind END");
    ins.bind(1, info.name).bind(2, info.unit).bind(3, std::string(model::to_string(info.better)));
    ins.bind(4, std::string(info.fact ? "fact" : "measurement"));
    if (int rc = ins.step(); rc != SQLITE_DONE) return fail(rc, "recording a metric");
    Stmt sel(m_db, "SELECT id FROM metrics WHERE name = ?");
    sel.bind(1, info.name);
    if (int rc = sel.step(); rc != SQLITE_ROW) return fail(rc, "reading a metric");
    id = sel.i64(0);
    return Ok{};
  });
  if (!st) return st.error();
  return id;
}

Expected<long long> SqliteStore::insert_trial_locked(const model::TrialRecord& t) {
  Stmt s(m_db,
         "INSERT INTO trials(run_id, config_id, repeat, seq, status, started_at, log_dir, host, slot, device_kind, "
         "devices, node_fingerprint) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)");
  s.bind(1, t.run_id).bind(2, t.config_id).bind(3, t.repeat).bind(4, t.seq);
  s.bind(5, std::string(model::to_string(model::TrialStatus::Running))).bind(6, t.started_at).bind(7, t.log_dir);
  s.bind(8, t.host).bind(9, t.slot).bind(10, t.device_kind).bind(11, util::join_ints(t.devices));
  s.bind(12, t.node_fingerprint);
  if (int rc = s.step(); rc != SQLITE_DONE) return fail(rc, "recording a trial start");
  return static_cast<long long>(sqlite3_last_insert_rowid(m_db));
}

Expected<long long> SqliteStore::begin_trial(const model::TrialRecord& t) {
  std::lock_guard lock(m_mu);
  long long id = 0;
  auto st = transaction("recording a trial start", [&]() -> Status {
    auto inserted = insert_trial_locked(t);
    if (!inserted) return inserted.error();
    id = *inserted;
    return Ok{};
  });
  if (!st) return st.error();
  return id;
}

Expected<long long> SqliteStore::begin_claimed_trial(const model::TrialRecord& t, std::size_t plan_index,
                                                     const std::string& worker) {
  std::lock_guard lock(m_mu);
  long long id = 0;
  bool claim_held = true;
  auto st = transaction("recording a trial start", [&]() -> Status {
    auto inserted = insert_trial_locked(t);
    if (!inserted) return inserted.error();
    id = *inserted;
    Stmt u(m_db, k_link_claim_sqlite);
    u.bind(1, id).bind(2, t.run_id).bind(3, static_cast<long long>(plan_index)).bind(4, worker);
    if (int rc = u.step(); rc != SQLITE_DONE) return fail(rc, "recording a claim's trial");
    claim_held = sqlite3_changes(m_db) > 0;
    if (!claim_held) {
      Stmt lost(m_db, k_mark_claim_lost_sqlite);
      lost.bind(1, claim_lost_error(worker)).bind(2, id);
      if (int rc = lost.step(); rc != SQLITE_DONE) return fail(rc, "recording a lost trial");
    }
    return Ok{};
  });
  if (!st) return st.error();
  if (!claim_held) return Error::harness(claim_lost_message(id, worker));
  return id;
}

Status SqliteStore::append_samples(long long trial_id, std::span<const SampleRow> rows) {
  std::lock_guard lock(m_mu);
  if (rows.empty()) return Ok{};
  return transaction("storing step samples", [&]() -> Status {
    auto& s = *m_insert_sample;
    long long first_rowid = 0;
    for (const auto& r : rows) {
      s.bind(1, trial_id).bind(2, r.metric_id).bind(3, r.step).bind(4, r.t_s);
      if (std::isnan(r.value))
        s.bind_null(5);  // SQLite has no NaN; NULL marks it
      else
        s.bind(5, r.value);
      int rc = s.step();
      s.reset();
      if (rc != SQLITE_DONE) return fail(rc, "storing step samples");
      if (first_rowid == 0) first_rowid = sqlite3_last_insert_rowid(m_db);
    }
    Stmt range(m_db,
               "UPDATE trials SET samples_first_rowid = coalesce(samples_first_rowid, ?), samples_last_rowid = ? "
               "WHERE id = ?");
    range.bind(1, first_rowid).bind(2, sqlite3_last_insert_rowid(m_db)).bind(3, trial_id);
    if (int rc = range.step(); rc != SQLITE_DONE) return fail(rc, "storing step samples");
    return Ok{};
  });
}

Status SqliteStore::finish_trial(const model::TrialRecord& t, std::span<const long long> ids) {
  std::lock_guard lock(m_mu);
  PERFGATE_CHECK(ids.size() == t.summaries.size());
  return transaction("recording a finished trial", [&]() -> Status {
    Stmt s(
        m_db,
        "UPDATE trials SET status = ?, exit_code = ?, signal = ?, error = ?, wall_s = ?, cpu_s = ?, peak_rss_mb = ?, "
        "steps = ?, malformed_lines = ?, notes = ?, steady_class = ?, steady_start = ?, compile_steps = ?, "
        "last_step_s = ? WHERE id = ? AND status <> 'lost'");
    s.bind(1, std::string(model::to_string(t.status))).bind(2, t.exit_code).bind(3, t.signal).bind(4, t.error);
    s.bind(5, t.wall_s).bind(6, t.cpu_s).bind(7, t.peak_rss_mb).bind(8, t.steps).bind(9, t.malformed_lines);
    s.bind(10, t.notes).bind(11, t.steady_class).bind(12, t.steady_start).bind(13, t.compile_steps);
    s.bind(14, t.last_step_s).bind(15, t.id);
    if (int rc = s.step(); rc != SQLITE_DONE) return fail(rc, "recording a finished trial");
    if (sqlite3_changes(m_db) == 0) return Error::harness(lease_lost_message(t.id));
    // A queued trial's claim ends with it (see Store::finish_trial).
    if (t.status == model::TrialStatus::Interrupted) {
      Stmt q(m_db, k_requeue_interrupted_sqlite);
      q.bind(1, t.id);
      if (int rc = q.step(); rc != SQLITE_DONE) return fail(rc, "queueing a stopped worker's trial again");
      if (sqlite3_changes(m_db) > 0) {
        Stmt lost(m_db, k_mark_claim_lost_sqlite);
        lost.bind(1, std::string(k_worker_stopped)).bind(2, t.id);
        if (int rc = lost.step(); rc != SQLITE_DONE) return fail(rc, "recording a lost trial");
      }
    } else {
      Stmt q(m_db, "UPDATE trial_queue SET state = 'done', lease_until = 0 WHERE trial_id = ? AND state = 'claimed'");
      q.bind(1, t.id);
      if (int rc = q.step(); rc != SQLITE_DONE) return fail(rc, "ending a queued trial's claim");
    }
    Stmt ins(m_db,
             "INSERT OR REPLACE INTO trial_summaries(trial_id, metric_id, n_total, n_steady, mean, median, p90, p99, "
             "min, max, stddev, value, is_scalar) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const auto& m = t.summaries[i];
      ins.bind(1, t.id).bind(2, ids[i]).bind(3, m.n_total).bind(4, m.n_steady).bind(5, m.mean).bind(6, m.median);
      ins.bind(7, m.p90).bind(8, m.p99).bind(9, m.min).bind(10, m.max).bind(11, m.stddev).bind(12, m.value);
      ins.bind(13, m.is_scalar ? 1 : 0);
      int rc = ins.step();
      ins.reset();
      if (rc != SQLITE_DONE) return fail(rc, "recording trial summaries");
    }
    return Ok{};
  });
}

Expected<std::vector<std::string>> SqliteStore::tags_of(long long run_id) {
  std::vector<std::string> tags;
  Stmt s(m_db, "SELECT tag FROM run_tags WHERE run_id = ? ORDER BY tag");
  s.bind(1, run_id);
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) tags.push_back(s.text(0));
  if (rc != SQLITE_DONE) return fail(rc, "reading run tags");
  return tags;
}

Expected<std::vector<RunListRow>> SqliteStore::list_runs(int limit, const std::string& suite) {
  std::lock_guard lock(m_mu);
  std::vector<RunListRow> out;
  std::string sql = fmt::format(
      "SELECT {}, (SELECT count(*) FROM trials t WHERE t.run_id = runs.id AND t.status = 'ok'), "
      "(SELECT count(*) FROM trials t WHERE t.run_id = runs.id AND t.status IN ('failed', 'timed_out')), "
      "(SELECT count(*) FROM trials t WHERE t.run_id = runs.id) FROM runs {} ORDER BY id DESC LIMIT ?",
      k_run_columns, suite.empty() ? "" : "WHERE suite = ?");
  Stmt s(m_db, sql.c_str());
  if (!s.ok()) return fail(sqlite3_errcode(m_db), "listing runs");
  int i = 1;
  if (!suite.empty()) s.bind(i++, suite);
  s.bind(i, limit);
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    RunListRow row;
    row.run = rows::run(s);
    row.trials_ok = static_cast<int>(s.i64(k_run_column_count));
    row.trials_failed = static_cast<int>(s.i64(k_run_column_count + 1));
    row.trials_total = static_cast<int>(s.i64(k_run_column_count + 2));
    out.push_back(std::move(row));
  }
  if (rc != SQLITE_DONE) return fail(rc, "listing runs");
  for (auto& row : out) {
    auto tags = tags_of(row.run.id);
    if (!tags) return tags.error();
    row.run.tags = std::move(*tags);
  }
  return out;
}

Expected<long long> SqliteStore::resolve_run(const std::string& sel) {
  std::lock_guard lock(m_mu);
  if (sel.empty()) return Error::input("empty run selector; use an id, 'latest' or 'latest:TAG'");
  if (std::all_of(sel.begin(), sel.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    long long id = 0;
    auto [ptr, ec] = std::from_chars(sel.data(), sel.data() + sel.size(), id);
    if (ec != std::errc{}) return Error::input(fmt::format("no run {} in {}; `perfgate runs` lists them", sel, m_path));
    Stmt s(m_db, "SELECT id FROM runs WHERE id = ?");
    s.bind(1, id);
    int rc = s.step();
    if (rc == SQLITE_ROW) return s.i64(0);
    if (rc != SQLITE_DONE) return fail(rc, "looking up a run");
    return Error::input(fmt::format("no run {} in {}; `perfgate runs` lists them", sel, m_path));
  }
  if (sel == "latest") {
    Stmt s(m_db, rows::k_latest_run_sql);
    int rc = s.step();
    if (rc != SQLITE_ROW) return fail(rc, "looking up the latest run");
    if (s.i64(0) == 0) return Error::input(rows::no_latest_run_message(m_path, s.i64(1)));
    return s.i64(0);
  }
  if (sel.starts_with("latest:")) {
    std::string tag = sel.substr(7);
    Stmt s(m_db, "SELECT max(run_id) FROM run_tags WHERE tag = ?");
    s.bind(1, tag);
    int rc = s.step();
    if (rc != SQLITE_ROW) return fail(rc, "looking up a tagged run");
    if (s.i64(0) == 0) return Error::input(fmt::format("no run tagged '{}' in {}", tag, m_path));
    return s.i64(0);
  }
  return Error::input(fmt::format("'{}' is not a run; use an id, 'latest' or 'latest:TAG'", sel));
}

Expected<RunData> SqliteStore::load_run(long long run_id) {
  std::lock_guard lock(m_mu);
  RunData d;
  {
    std::string sql = fmt::format("SELECT {} FROM runs WHERE id = ?", k_run_columns);
    Stmt s(m_db, sql.c_str());
    s.bind(1, run_id);
    int rc = s.step();
    if (rc == SQLITE_DONE) return Error::input(fmt::format("no run {} in {}", run_id, m_path));
    if (rc != SQLITE_ROW) return fail(rc, "reading a run");
    d.run = rows::run(s);
  }
  auto tags = tags_of(run_id);
  if (!tags) return tags.error();
  d.run.tags = std::move(*tags);
  {
    Stmt s(m_db,
           "SELECT DISTINCT c.id, c.workload, c.params FROM configs c JOIN trials t ON t.config_id = c.id "
           "WHERE t.run_id = ? ORDER BY c.id");
    s.bind(1, run_id);
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) d.configs.push_back({s.i64(0), s.text(1), s.text(2)});
    if (rc != SQLITE_DONE) return fail(rc, "reading configurations");
  }
  {
    std::string sql = fmt::format("SELECT {} FROM trials WHERE run_id = ? ORDER BY seq, id", rows::k_trial_columns);
    Stmt s(m_db, sql.c_str());
    s.bind(1, run_id);
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) d.trials.push_back(rows::trial(s));
    if (rc != SQLITE_DONE) return fail(rc, "reading trials");
  }
  {
    std::string sql = fmt::format(
        "SELECT {} FROM trial_summaries ts JOIN trials t ON t.id = ts.trial_id "
        "JOIN metrics m ON m.id = ts.metric_id WHERE t.run_id = ? ORDER BY ts.trial_id, m.name",
        rows::k_summary_columns);
    Stmt s(m_db, sql.c_str());
    s.bind(1, run_id);
    std::unordered_map<long long, model::TrialRecord*> by_id;
    for (auto& t : d.trials) by_id[t.id] = &t;
    int rc;
    while ((rc = s.step()) == SQLITE_ROW)
      if (auto it = by_id.find(s.i64(0)); it != by_id.end()) it->second->summaries.push_back(rows::summary(s));
    if (rc != SQLITE_DONE) return fail(rc, "reading trial summaries");
  }
  {
    Stmt s(m_db,
           "SELECT DISTINCT m.name, m.unit, m.better, m.kind FROM metrics m JOIN trial_summaries ts ON "
           "ts.metric_id = m.id JOIN trials t ON t.id = ts.trial_id WHERE t.run_id = ? ORDER BY m.name");
    s.bind(1, run_id);
    int rc;
    while ((rc = s.step()) == SQLITE_ROW)
      d.metrics.push_back({s.text(0), s.text(1), model::better_from_string(s.text(2)).value_or(model::Better::None),
                           s.text(3) == "fact"});
    if (rc != SQLITE_DONE) return fail(rc, "reading metrics");
  }
  {
    Stmt s(m_db, "SELECT config_id, primary_metric FROM run_configs WHERE run_id = ?");
    s.bind(1, run_id);
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) d.primary_metrics[s.i64(0)] = s.text(1);
    if (rc != SQLITE_DONE) return fail(rc, "reading the primary metrics");
  }
  return d;
}

Expected<std::vector<SampleRow>> SqliteStore::load_samples(long long trial_id, long long metric_id) {
  std::vector<SampleRow> out;
  if (auto st = for_each_sample(trial_id, metric_id, [&](const SampleRow& r) { out.push_back(r); }); !st)
    return st.error();
  return out;
}

Expected<int> SqliteStore::close_abandoned_runs(const std::string& host) {
  std::lock_guard lock(m_mu);
  std::vector<long long> dead;
  {
    Stmt s(m_db,
           "SELECT id, pid FROM runs WHERE status = 'running' AND host = ? "
           "AND NOT EXISTS (SELECT 1 FROM trial_queue q WHERE q.run_id = runs.id)");
    s.bind(1, host);
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) {
      auto pid = static_cast<pid_t>(s.i64(1));
      if (pid <= 0 || (::kill(pid, 0) != 0 && errno == ESRCH)) dead.push_back(s.i64(0));
    }
    if (rc != SQLITE_DONE) return fail(rc, "looking for abandoned runs");
  }
  for (long long id : dead) {
    Stmt last(m_db, "SELECT coalesce(max(started_at + coalesce(wall_s, 0)), 0) FROM trials WHERE run_id = ?");
    last.bind(1, id);
    double ended = last.step() == SQLITE_ROW ? last.f64(0) : 0;
    if (auto st = finish_run(id, model::RunStatus::Interrupted, ended); !st) return st.error();
  }
  return static_cast<int>(dead.size());
}

}  // namespace

Expected<std::vector<RunRecord>> SqliteStore::find_runs(const RunQuery& q) {
  std::lock_guard lock(m_mu);
  std::string where = "WHERE 1";
  if (!q.suite.empty()) where += " AND suite = :suite";
  if (!q.tag.empty()) where += " AND id IN (SELECT run_id FROM run_tags WHERE tag = :tag)";
  // A prefix match that treats the text literally (no LIKE wildcards).
  if (!q.commit_prefix.empty()) where += " AND substr(git_commit, 1, length(:commit)) = :commit";
  if (q.before_id > 0) where += " AND id < :before";
  if (q.exclude_id > 0) where += " AND id <> :exclude";
  if (q.completed_only) where += " AND status = 'completed'";
  if (!q.bisect_runs) where += " AND kind <> 'bisect'";
  std::string sql = fmt::format("SELECT {} FROM runs {} ORDER BY id DESC{}", k_run_columns, where,
                                q.limit > 0 ? " LIMIT :limit" : "");
  Stmt s(m_db, sql.c_str());
  if (!s.ok()) return fail(sqlite3_errcode(m_db), "finding runs");
  auto bind = [&](const char* name, auto value) {
    if (int i = s.index(name); i > 0) s.bind(i, value);
  };
  bind(":suite", q.suite);
  bind(":tag", q.tag);
  bind(":commit", q.commit_prefix);
  bind(":before", q.before_id);
  bind(":exclude", q.exclude_id);
  bind(":limit", q.limit);
  std::vector<RunRecord> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back(rows::run(s));
  if (rc != SQLITE_DONE) return fail(rc, "finding runs");
  for (auto& r : out) {
    auto tags = tags_of(r.id);
    if (!tags) return tags.error();
    r.tags = std::move(*tags);
  }
  return out;
}

Status SqliteStore::for_each_sample(long long trial_id, long long metric_id,
                                    const std::function<void(const SampleRow&)>& fn) {
  std::lock_guard lock(m_mu);
  Stmt s(m_db,
         "SELECT step, t_s, value FROM samples WHERE rowid BETWEEN "
         "(SELECT samples_first_rowid FROM trials WHERE id = ?1) AND (SELECT samples_last_rowid FROM trials WHERE id = "
         "?1) "
         "AND trial_id = ?1 AND metric_id = ?2 ORDER BY rowid");
  s.bind(1, trial_id).bind(2, metric_id);
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) fn({metric_id, s.i64(0), s.f64(1), s.is_null(2) ? std::nan("") : s.f64(2)});
  if (rc != SQLITE_DONE) return fail(rc, "reading samples");
  return Ok{};
}

Expected<std::vector<std::pair<model::MetricInfo, long long>>> SqliteStore::sampled_metrics(long long trial_id) {
  std::lock_guard lock(m_mu);
  std::vector<std::pair<model::MetricInfo, long long>> out;
  Stmt s(m_db,
         "SELECT m.id, m.name, m.unit, m.better FROM metrics m WHERE m.id IN (SELECT DISTINCT metric_id FROM samples "
         "WHERE rowid BETWEEN (SELECT samples_first_rowid FROM trials WHERE id = ?1) AND "
         "(SELECT samples_last_rowid FROM trials WHERE id = ?1) AND trial_id = ?1) ORDER BY m.name");
  s.bind(1, trial_id);
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    model::MetricInfo info;
    info.name = s.text(1);
    info.unit = s.text(2);
    info.better = model::better_from_string(s.text(3)).value_or(model::Better::Lower);
    out.emplace_back(std::move(info), s.i64(0));
  }
  if (rc != SQLITE_DONE) return fail(rc, "listing a trial's metrics");
  return out;
}

Expected<long long> SqliteStore::save_gate(const GateRecord& g) {
  std::lock_guard lock(m_mu);
  // Ids first: each takes its own short transaction and may insert.
  std::vector<std::pair<long long, long long>> ids;
  for (const auto& c : g.comparisons) {
    auto cid = config_id(c.workload, c.params_json);
    if (!cid) return cid.error();
    auto mid = metric_id(c.metric);
    if (!mid) return mid.error();
    ids.emplace_back(*cid, *mid);
  }
  long long gate_id = 0;
  auto st = transaction("recording a gate", [&]() -> Status {
    Stmt ins(m_db,
             "INSERT INTO gates(run_id, created_at, baseline, baseline_runs, policy, outcome, trials_added, forced) "
             "VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
    ins.bind(1, g.run_id)
        .bind(2, g.created_at)
        .bind(3, g.baseline)
        .bind(4, rows::run_list(g.baseline_runs))
        .bind(5, g.policy)
        .bind(6, g.outcome)
        .bind(7, g.trials_added)
        .bind(8, g.forced ? 1 : 0);
    if (int rc = ins.step(); rc != SQLITE_DONE) return fail(rc, "recording a gate");
    gate_id = sqlite3_last_insert_rowid(m_db);
    Stmt v(m_db,
           "INSERT OR REPLACE INTO verdicts(gate_id, config_id, metric_id, verdict, threshold, n_base, n_cand, "
           "failed_base, failed_cand, base_median, cand_median, change, change_low, change_high, u, p, p_adjusted, "
           "extra_trials, added_trials, note, node_class, threshold_floor) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
           "?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
    for (std::size_t i = 0; i < g.comparisons.size(); ++i) {
      const auto& c = g.comparisons[i];
      v.reset();
      v.bind(1, gate_id)
          .bind(2, ids[i].first)
          .bind(3, ids[i].second)
          .bind(4, std::string(model::to_string(c.verdict)))
          .bind(5, c.threshold_rel)
          .bind(6, c.n_base)
          .bind(7, c.n_cand)
          .bind(8, c.failed_base)
          .bind(9, c.failed_cand);
      int col = 10;
      for (double x : {c.base_median, c.cand_median, c.change_rel, c.change_low_rel, c.change_high_rel}) {
        if (std::isfinite(x))
          v.bind(col, x);
        else
          v.bind_null(col);
        ++col;
      }
      if (c.tested)
        v.bind(15, c.u).bind(16, c.p_value).bind(17, c.p_adjusted);
      else
        v.bind_null(15).bind_null(16).bind_null(17);
      v.bind(18, c.extra_trials).bind(19, c.added_trials).bind(20, c.note).bind(21, c.node_class);
      v.bind(22, c.threshold_floor);
      if (int rc = v.step(); rc != SQLITE_DONE) return fail(rc, "recording a verdict");
    }
    return Ok{};
  });
  if (!st) return st.error();
  return gate_id;
}

Expected<std::vector<GateRecord>> SqliteStore::load_gates(long long run_id) {
  std::lock_guard lock(m_mu);
  std::vector<GateRecord> out;
  std::string gates_sql = fmt::format("SELECT {} FROM gates WHERE run_id = ? ORDER BY id DESC", rows::k_gate_columns);
  Stmt s(m_db, gates_sql.c_str());
  s.bind(1, run_id);
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back(rows::gate(s));
  if (rc != SQLITE_DONE) return fail(rc, "reading gates");
  std::string verdicts_sql = fmt::format(
      "SELECT {} FROM verdicts v JOIN configs c ON c.id = v.config_id JOIN metrics m "
      "ON m.id = v.metric_id WHERE v.gate_id = ? ORDER BY v.rowid",
      rows::k_verdict_columns);
  Stmt v(m_db, verdicts_sql.c_str());
  for (auto& g : out) {
    v.reset();
    v.bind(1, g.id);
    while ((rc = v.step()) == SQLITE_ROW) g.comparisons.push_back(rows::comparison(v));
    if (rc != SQLITE_DONE) return fail(rc, "reading verdicts");
  }
  return out;
}

Expected<std::unique_ptr<Store>> open_sqlite_store(const std::string& path, const OpenOptions& opts) {
  std::error_code ec;
  bool exists = fs::exists(path, ec);
  if (exists) {
    if (fs::is_directory(path, ec)) return Error::input(fmt::format("{}: is a directory, not a database file", path));
    auto size = fs::file_size(path, ec);
    if (!ec && size > 0) {
      char header[16] = {};
      std::ifstream in(path, std::ios::binary);
      in.read(header, sizeof header);
      if (in.gcount() < 16 || std::memcmp(header, "SQLite format 3", 16) != 0)
        return Error::harness(
            fmt::format("{}: is not a perfgate database (not even SQLite); perfgate will not touch "
                        "it. Use --db to choose another file",
                        path));
    }
  } else {
    auto parent = fs::path(path).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (ec)
      return Error::harness(fmt::format("{}: cannot create directory {}: {}", path, parent.string(), ec.message()));
  }
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return Error::harness(fmt::format("{}: cannot open database: {}", path, msg));
  }
  auto store = std::make_unique<SqliteStore>(db, path, opts.busy_timeout_s);
  if (auto st = store->init(); !st) return st.error();
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace perfgate::store

// -- the fleet queue -----------------------------------------------------------
namespace perfgate::store {

Status SqliteStore::enqueue_trials(long long run_id, std::span<const QueueItem> items, int max_attempts) {
  std::lock_guard lock(m_mu);
  return transaction("queueing trials", [&]() -> Status {
    Stmt s(m_db, "INSERT INTO trial_queue(run_id, plan_index, seq, max_attempts) VALUES (?,?,?,?)");
    for (const auto& it : items) {
      s.bind(1, run_id).bind(2, static_cast<long long>(it.plan_index)).bind(3, it.seq).bind(4, max_attempts);
      int rc = s.step();
      s.reset();
      if (rc != SQLITE_DONE) return fail(rc, "queueing trials");
    }
    return Ok{};
  });
}

Status SqliteStore::record_fleet_job(long long run_id, const std::string& job_id) {
  std::lock_guard lock(m_mu);
  Stmt s(m_db, "INSERT OR IGNORE INTO fleet_jobs(run_id, job_id, submitted_at) VALUES (?,?,?)");
  s.bind(1, run_id).bind(2, job_id).bind(3, util::unix_now_s());
  if (int rc = s.step(); rc != SQLITE_DONE) return fail(rc, "recording a Slurm job");
  return Ok{};
}

Expected<std::vector<std::string>> SqliteStore::fleet_jobs(long long run_id) {
  std::lock_guard lock(m_mu);
  std::vector<std::string> out;
  Stmt s(m_db, "SELECT job_id FROM fleet_jobs WHERE run_id = ? ORDER BY submitted_at");
  s.bind(1, run_id);
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back(s.text(0));
  if (rc != SQLITE_DONE) return fail(rc, "reading a run's Slurm jobs");
  return out;
}

// Called inside a transaction: leases that ran out make their trials pending
// again (or lost, out of attempts) and their attempts lost.
Status SqliteStore::expire_leases(long long run_id) {
  const double now = util::unix_now_s();
  Stmt t(m_db, k_expire_trials_sqlite);
  t.bind(1, run_id).bind(2, now);
  if (int rc = t.step(); rc != SQLITE_DONE) return fail(rc, "expiring leases");
  Stmt q(m_db, k_expire_queue_sqlite);
  q.bind(1, run_id).bind(2, now);
  if (int rc = q.step(); rc != SQLITE_DONE) return fail(rc, "expiring leases");
  return Ok{};
}

Expected<std::optional<Claim>> SqliteStore::claim_trial(long long run_id, const std::string& worker, double lease_s,
                                                        long long below_index) {
  std::lock_guard lock(m_mu);
  std::optional<Claim> claim;
  auto st = transaction("claiming a queued trial", [&]() -> Status {
    if (auto e = expire_leases(run_id); !e) return e;
    Stmt s(m_db,
           "SELECT id, plan_index, attempts FROM trial_queue WHERE run_id = ? AND state = 'pending' "
           "AND plan_index < ? ORDER BY seq LIMIT 1");
    s.bind(1, run_id).bind(2, below_index);
    int rc = s.step();
    if (rc == SQLITE_DONE) return Ok{};
    if (rc != SQLITE_ROW) return fail(rc, "claiming a queued trial");
    Claim c;
    c.queue_id = s.i64(0);
    c.plan_index = static_cast<std::size_t>(s.i64(1));
    c.attempt = static_cast<int>(s.i64(2)) + 1;
    Stmt u(m_db,
           "UPDATE trial_queue SET state = 'claimed', worker = ?, lease_until = ?, attempts = attempts + 1, "
           "trial_id = NULL WHERE id = ?");
    u.bind(1, worker).bind(2, util::unix_now_s() + lease_s).bind(3, c.queue_id);
    if (int urc = u.step(); urc != SQLITE_DONE) return fail(urc, "claiming a queued trial");
    claim = c;
    return Ok{};
  });
  if (!st) return st.error();
  return claim;
}

Expected<int> SqliteStore::renew_leases(const std::string& worker, double lease_s) {
  std::lock_guard lock(m_mu);
  Stmt s(m_db, "UPDATE trial_queue SET lease_until = ? WHERE worker = ? AND state = 'claimed'");
  s.bind(1, util::unix_now_s() + lease_s).bind(2, worker);
  if (int rc = s.step(); rc != SQLITE_DONE) return fail(rc, "renewing leases");
  return sqlite3_changes(m_db);
}

Expected<QueueCounts> SqliteStore::queue_counts(long long run_id, long long below_index) {
  std::lock_guard lock(m_mu);
  QueueCounts c;
  auto st = transaction("reading the queue", [&]() -> Status {
    if (auto e = expire_leases(run_id); !e) return e;
    Stmt s(m_db, "SELECT state, count(*) FROM trial_queue WHERE run_id = ? AND plan_index < ? GROUP BY state");
    s.bind(1, run_id).bind(2, below_index);
    int rc;
    while ((rc = s.step()) == SQLITE_ROW) add_queue_count(c, s.text(0), static_cast<int>(s.i64(1)));
    if (rc != SQLITE_DONE) return fail(rc, "reading the queue");
    return Ok{};
  });
  if (!st) return st.error();
  return c;
}

Status SqliteStore::cancel_queue(long long run_id) {
  std::lock_guard lock(m_mu);
  Stmt s(m_db,
         "UPDATE trial_queue SET state = 'cancelled', lease_until = 0 WHERE run_id = ? "
         "AND state IN ('pending', 'claimed')");
  s.bind(1, run_id);
  if (int rc = s.step(); rc != SQLITE_DONE) return fail(rc, "cancelling queued trials");
  return Ok{};
}

Status SqliteStore::save_node_fingerprint(const std::string& hash, const std::string& json) {
  std::lock_guard lock(m_mu);
  Stmt s(m_db, "INSERT OR IGNORE INTO node_fingerprints(hash, fingerprint) VALUES (?,?)");
  s.bind(1, hash).bind(2, json);
  if (int rc = s.step(); rc != SQLITE_DONE) return fail(rc, "recording a node's fingerprint");
  return Ok{};
}

Expected<std::string> SqliteStore::node_fingerprint(const std::string& hash) {
  std::lock_guard lock(m_mu);
  Stmt s(m_db, "SELECT fingerprint FROM node_fingerprints WHERE hash = ?");
  s.bind(1, hash);
  int rc = s.step();
  if (rc == SQLITE_ROW) return s.text(0);
  if (rc != SQLITE_DONE) return fail(rc, "reading a node's fingerprint");
  return std::string();
}

Expected<std::vector<std::string>> SqliteStore::trial_node_fingerprints(long long run_id) {
  std::lock_guard lock(m_mu);
  Stmt s(m_db, "SELECT DISTINCT node_fingerprint FROM trials WHERE run_id = ? ORDER BY node_fingerprint");
  s.bind(1, run_id);
  std::vector<std::string> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back(s.text(0));
  if (rc != SQLITE_DONE) return fail(rc, "reading the nodes of a run");
  return out;
}

Expected<std::optional<BuildRecord>> SqliteStore::find_build(const std::string& key) {
  std::lock_guard lock(m_mu);
  const std::string sql = fmt::format("SELECT {} FROM builds WHERE key = ?", rows::k_build_columns);
  Stmt s(m_db, sql.c_str());
  s.bind(1, key);
  int rc = s.step();
  if (rc == SQLITE_ROW) return std::optional<BuildRecord>(rows::build(s));
  if (rc != SQLITE_DONE) return fail(rc, "reading a build");
  return std::optional<BuildRecord>();
}

Status SqliteStore::save_build(const BuildRecord& b) {
  std::lock_guard lock(m_mu);
  const std::string sql =
      fmt::format("INSERT OR REPLACE INTO builds({}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows::k_build_columns);
  Stmt s(m_db, sql.c_str());
  s.bind(1, b.key)
      .bind(2, b.tree)
      .bind(3, b.build_command)
      .bind(4, b.git_commit)
      .bind(5, b.status)
      .bind(6, b.attempts)
      .bind(7, b.worktree)
      .bind(8, b.log_path)
      .bind(9, b.error)
      .bind(10, b.duration_s)
      .bind(11, b.updated_at);
  if (int rc = s.step(); rc != SQLITE_DONE) return fail(rc, "recording a build");
  return Ok{};
}

Expected<long long> SqliteStore::save_bisect(const BisectRecord& b) {
  std::lock_guard lock(m_mu);
  Stmt s(m_db,
         "INSERT INTO bisects(created_at, suite, workload, params, metric, good, bad, outcome, report) "
         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  s.bind(1, b.created_at)
      .bind(2, b.suite)
      .bind(3, b.workload)
      .bind(4, b.params_json)
      .bind(5, b.metric)
      .bind(6, b.good)
      .bind(7, b.bad)
      .bind(8, b.outcome)
      .bind(9, b.report_json);
  if (int rc = s.step(); rc != SQLITE_DONE) return fail(rc, "recording a bisect");
  return sqlite3_last_insert_rowid(m_db);
}

Expected<std::vector<BisectRecord>> SqliteStore::load_bisects(const std::string& suite) {
  std::lock_guard lock(m_mu);
  const std::string sql =
      fmt::format("SELECT {} FROM bisects WHERE ? = '' OR suite = ? ORDER BY id DESC", rows::k_bisect_columns);
  Stmt s(m_db, sql.c_str());
  s.bind(1, suite).bind(2, suite);
  std::vector<BisectRecord> out;
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) out.push_back(rows::bisect(s));
  if (rc != SQLITE_DONE) return fail(rc, "reading bisects");
  return out;
}

}  // namespace perfgate::store
