#include "harness/store/schema.hpp"

#include <array>

#include <fmt/format.h>
#include <sqlite3.h>

namespace perfgate::store {
namespace {

// migrations[i] takes the schema from version i to i + 1. Append only.
constexpr std::array<const char*, k_schema_version> k_migrations = {
    R"sql(
CREATE TABLE runs(
  id INTEGER PRIMARY KEY,
  suite TEXT NOT NULL,
  suite_path TEXT NOT NULL DEFAULT '',
  description TEXT NOT NULL DEFAULT '',
  started_at REAL NOT NULL,          -- unix seconds
  ended_at REAL NOT NULL DEFAULT 0,
  status TEXT NOT NULL,              -- running | completed | interrupted | failed
  host TEXT NOT NULL DEFAULT '',
  pid INTEGER NOT NULL DEFAULT 0,
  fingerprint TEXT NOT NULL DEFAULT '{}',
  fingerprint_hash TEXT NOT NULL DEFAULT '',
  git_commit TEXT NOT NULL DEFAULT '',
  git_branch TEXT NOT NULL DEFAULT '',
  seed INTEGER NOT NULL DEFAULT 0,
  argv TEXT NOT NULL DEFAULT '',
  env TEXT NOT NULL DEFAULT '{}',
  plan TEXT NOT NULL DEFAULT '{}',
  artifacts_dir TEXT NOT NULL DEFAULT '',
  perfgate_version TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_suite ON runs(suite, id);
CREATE TABLE run_tags(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  tag TEXT NOT NULL,
  PRIMARY KEY(run_id, tag)
);
CREATE INDEX run_tags_tag ON run_tags(tag, run_id);
CREATE TABLE configs(
  id INTEGER PRIMARY KEY,
  workload TEXT NOT NULL,
  params TEXT NOT NULL,              -- canonical JSON, sorted keys
  UNIQUE(workload, params)
);
CREATE TABLE metrics(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  unit TEXT NOT NULL DEFAULT '',
  better TEXT NOT NULL DEFAULT 'lower'
);
CREATE TABLE trials(
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  config_id INTEGER NOT NULL REFERENCES configs(id),
  repeat INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  status TEXT NOT NULL,              -- running | ok | failed | timed_out | interrupted
  exit_code INTEGER NOT NULL DEFAULT -1,
  signal INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  started_at REAL NOT NULL,
  wall_s REAL NOT NULL DEFAULT 0,
  cpu_s REAL NOT NULL DEFAULT 0,
  peak_rss_mb REAL NOT NULL DEFAULT 0,
  steps INTEGER NOT NULL DEFAULT 0,
  malformed_lines INTEGER NOT NULL DEFAULT 0,
  notes TEXT NOT NULL DEFAULT '',
  log_dir TEXT NOT NULL DEFAULT '',
  -- The trial's rows in samples lie within this rowid range (see samples).
  samples_first_rowid INTEGER,
  samples_last_rowid INTEGER
);
CREATE INDEX trials_run ON trials(run_id, seq);
CREATE INDEX trials_config ON trials(config_id);
-- Raw step samples. value NULL stands for NaN (SQLite stores no NaN).
-- No index: rows are appended in rowid order and found through the rowid
-- range kept on their trial, which makes ingestion about twice as fast as
-- maintaining an index over millions of rows.
CREATE TABLE samples(
  trial_id INTEGER NOT NULL,
  metric_id INTEGER NOT NULL,
  step INTEGER NOT NULL,
  t_s REAL NOT NULL,                 -- seconds since the trial started
  value REAL
);
CREATE TABLE trial_summaries(
  trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  metric_id INTEGER NOT NULL REFERENCES metrics(id),
  n_total INTEGER NOT NULL,
  n_steady INTEGER NOT NULL,
  mean REAL, median REAL, p90 REAL, p99 REAL, min REAL, max REAL, stddev REAL,
  value REAL,                        -- the per-trial number compared across trials
  is_scalar INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(trial_id, metric_id)
);
)sql",
    // v2: gate verdicts, so dashboards and later reports can show them.
    R"sql(
CREATE TABLE gates(
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,  -- the candidate
  created_at REAL NOT NULL,
  baseline TEXT NOT NULL,            -- the selector as given
  baseline_runs TEXT NOT NULL,       -- JSON list of run ids pooled
  policy TEXT NOT NULL DEFAULT '',   -- path of the policy file, '' for the built-in one
  outcome TEXT NOT NULL,             -- regression | pass | inconclusive | error
  trials_added INTEGER NOT NULL DEFAULT 0,
  forced INTEGER NOT NULL DEFAULT 0  -- fingerprint mismatch overridden with --force
);
CREATE INDEX gates_run ON gates(run_id, id);
CREATE TABLE verdicts(
  gate_id INTEGER NOT NULL REFERENCES gates(id) ON DELETE CASCADE,
  config_id INTEGER NOT NULL REFERENCES configs(id),
  metric_id INTEGER NOT NULL REFERENCES metrics(id),
  verdict TEXT NOT NULL,             -- regression | improvement | unchanged | inconclusive | missing | failed
  threshold REAL NOT NULL,           -- practical threshold, relative
  n_base INTEGER NOT NULL, n_cand INTEGER NOT NULL,
  failed_base INTEGER NOT NULL, failed_cand INTEGER NOT NULL,
  base_median REAL, cand_median REAL,
  change REAL, change_low REAL, change_high REAL,   -- relative to the baseline median
  u REAL, p REAL, p_adjusted REAL,
  extra_trials INTEGER NOT NULL DEFAULT 0,
  added_trials INTEGER NOT NULL DEFAULT 0,
  note TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(gate_id, config_id, metric_id)
);
)sql",
    // v3: facts are not measurements, a run's kind and soak options, a trial's
    // steady state and last step, each configuration's primary metric:
    // nothing parsed back out of text.
    R"sql(
ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'run';          -- run | soak | import | bisect
ALTER TABLE runs ADD COLUMN soak_duration_s REAL NOT NULL DEFAULT 0;   -- 0 unless a soak (or each workload's timeout)
ALTER TABLE runs ADD COLUMN soak_window_s REAL NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN soak_hang_after_s REAL NOT NULL DEFAULT 0;
UPDATE runs SET kind = 'soak' WHERE argv LIKE 'perfgate soak %';
UPDATE runs SET kind = 'import' WHERE argv LIKE 'perfgate import %';
ALTER TABLE metrics ADD COLUMN kind TEXT NOT NULL DEFAULT 'measurement';  -- measurement | fact
ALTER TABLE trials ADD COLUMN steady_class TEXT NOT NULL DEFAULT '';   -- warmup auto: flat | warm-up | slowdown | no steady state
ALTER TABLE trials ADD COLUMN steady_start INTEGER NOT NULL DEFAULT 0; -- first steady step of the classified series
ALTER TABLE trials ADD COLUMN compile_steps INTEGER NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN last_step_s REAL NOT NULL DEFAULT -1;    -- arrival of the last step record, -1: none
CREATE TABLE run_configs(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  config_id INTEGER NOT NULL REFERENCES configs(id),
  primary_metric TEXT NOT NULL DEFAULT '',
  PRIMARY KEY(run_id, config_id)
);
)sql",
    // v4: the database's own identity, so that two databases whose runs
    // share an artifacts folder (two files in one directory, many machines
    // writing one server) never write into each other's run folders.
    R"sql(
CREATE TABLE store_info(
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
INSERT INTO store_info(key, value) VALUES('id', lower(hex(randomblob(6))));
)sql",
    // v5: where each trial ran (host, the node's slot, its devices), so a
    // slow card shows as a finding and not as a slow configuration.
    R"sql(
ALTER TABLE trials ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE trials ADD COLUMN slot INTEGER NOT NULL DEFAULT -1;          -- -1: no slot (trials before v5)
ALTER TABLE trials ADD COLUMN device_kind TEXT NOT NULL DEFAULT '';
ALTER TABLE trials ADD COLUMN devices TEXT NOT NULL DEFAULT '';          -- "0,1": ids as exported
UPDATE trials SET host = (SELECT host FROM runs WHERE runs.id = trials.run_id);
)sql",
    // v6: the fleet queue (../shared/DESIGN.md, "Execution"). A Slurm run's
    // trials wait here; a worker claims one with a lease it renews, and an
    // expired lease makes the trial pending again (attempts up to
    // max_attempts). Each node's machine fingerprint is kept once and named
    // by its trials.
    R"sql(
CREATE TABLE trial_queue(
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  plan_index INTEGER NOT NULL,                 -- into the run's plan trials
  seq INTEGER NOT NULL,                        -- run order
  state TEXT NOT NULL DEFAULT 'pending',       -- pending | claimed | done | lost | cancelled
  attempts INTEGER NOT NULL DEFAULT 0,
  max_attempts INTEGER NOT NULL DEFAULT 1,
  worker TEXT NOT NULL DEFAULT '',
  lease_until REAL NOT NULL DEFAULT 0,         -- unix s, the database's clock
  trial_id INTEGER,                            -- the attempt running now (claimed) or the last one
  UNIQUE(run_id, plan_index)
);
CREATE INDEX trial_queue_by_state ON trial_queue(run_id, state, seq);
CREATE INDEX trial_queue_by_trial ON trial_queue(trial_id);
CREATE TABLE fleet_jobs(
  run_id INTEGER NOT NULL REFERENCES runs(id),
  job_id TEXT NOT NULL,
  submitted_at REAL NOT NULL,
  PRIMARY KEY(run_id, job_id)
);
CREATE TABLE node_fingerprints(
  hash TEXT PRIMARY KEY,
  fingerprint TEXT NOT NULL
);
ALTER TABLE trials ADD COLUMN node_fingerprint TEXT NOT NULL DEFAULT '';
)sql",
    // v7: a gate over a fleet of mixed nodes compares each node class apart
    // (analysis/gate.hpp), so a verdict is per configuration, metric and
    // node class ('' when the gate saw one class). SQLite cannot change a
    // primary key in place: the table is rebuilt in its old row order,
    // which is the order reports read verdicts in. (PostgreSQL alters the
    // key instead: pg_store.cpp.)
    R"sql(
CREATE TABLE verdicts_v7(
  gate_id INTEGER NOT NULL REFERENCES gates(id) ON DELETE CASCADE,
  config_id INTEGER NOT NULL REFERENCES configs(id),
  metric_id INTEGER NOT NULL REFERENCES metrics(id),
  verdict TEXT NOT NULL,
  threshold REAL NOT NULL,
  n_base INTEGER NOT NULL, n_cand INTEGER NOT NULL,
  failed_base INTEGER NOT NULL, failed_cand INTEGER NOT NULL,
  base_median REAL, cand_median REAL,
  change REAL, change_low REAL, change_high REAL,
  u REAL, p REAL, p_adjusted REAL,
  extra_trials INTEGER NOT NULL DEFAULT 0,
  added_trials INTEGER NOT NULL DEFAULT 0,
  note TEXT NOT NULL DEFAULT '',
  node_class TEXT NOT NULL DEFAULT '',   -- "pool-a/3f2a1b" (hostname class / fingerprint hash), '' for one class
  PRIMARY KEY(gate_id, config_id, metric_id, node_class)
);
INSERT INTO verdicts_v7(gate_id, config_id, metric_id, verdict, threshold, n_base, n_cand, failed_base, failed_cand,
  base_median, cand_median, change, change_low, change_high, u, p, p_adjusted, extra_trials, added_trials, note)
  SELECT gate_id, config_id, metric_id, verdict, threshold, n_base, n_cand, failed_base, failed_cand,
  base_median, cand_median, change, change_low, change_high, u, p, p_adjusted, extra_trials, added_trials, note
  FROM verdicts ORDER BY rowid;
DROP TABLE verdicts;
ALTER TABLE verdicts_v7 RENAME TO verdicts;
)sql",
    // v8: perfgate bisect. Builds are cached by tree hash and build command
    // (a second bisect over the same commits builds nothing); each bisect's
    // outcome is kept for reports and the dashboard. Its trials are runs of
    // kind 'bisect' with their commit.
    R"sql(
CREATE TABLE builds(
  key TEXT PRIMARY KEY,                 -- digest of the tree hash and the build command
  tree TEXT NOT NULL,
  build_command TEXT NOT NULL,
  git_commit TEXT NOT NULL,             -- the commit first built with this tree
  status TEXT NOT NULL,                 -- ok | failed
  attempts INTEGER NOT NULL DEFAULT 0,
  worktree TEXT NOT NULL DEFAULT '',
  log_path TEXT NOT NULL DEFAULT '',
  error TEXT NOT NULL DEFAULT '',       -- last lines of the log of a failed build
  duration_s REAL NOT NULL DEFAULT 0,
  updated_at REAL NOT NULL DEFAULT 0
);
CREATE TABLE bisects(
  id INTEGER PRIMARY KEY,
  created_at REAL NOT NULL,
  suite TEXT NOT NULL,
  workload TEXT NOT NULL,
  params TEXT NOT NULL,
  metric TEXT NOT NULL,
  good TEXT NOT NULL,
  bad TEXT NOT NULL,
  outcome TEXT NOT NULL,                -- culprit | range | no-regression | interrupted
  report TEXT NOT NULL DEFAULT '{}'     -- the JSON report (commits, findings, builds and trials spent)
);
CREATE INDEX bisects_suite ON bisects(suite, id);
)sql",
    // v9: a peak_rss_mb verdict whose threshold was the policy's absolute
    // floor (GatePolicy::peak_rss_floor_mb) keeps it, so a stored gate and
    // the dashboard say "±32 MB" as the gate did, not the percentage it
    // came to for that baseline. 0: the relative threshold decided.
    R"sql(
ALTER TABLE verdicts ADD COLUMN threshold_floor REAL NOT NULL DEFAULT 0;
)sql",
};

}  // namespace

std::span<const char* const> migration_sql() { return k_migrations; }

namespace {

int user_version(sqlite3* db) {
  sqlite3_stmt* s = nullptr;
  int v = -1;
  if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
    v = sqlite3_column_int(s, 0);
  sqlite3_finalize(s);
  return v;
}

}  // namespace

Status migrate(sqlite3* db, int application_id) {
  auto newer = [](int v) {
    return Error::harness(
        fmt::format("database schema version {} is newer than this perfgate understands ({}); use a newer perfgate", v,
                    k_schema_version));
  };
  int v = user_version(db);
  if (v < 0) return Error::harness(fmt::format("cannot read the schema version: {}", sqlite3_errmsg(db)));
  if (v > k_schema_version) return newer(v);
  while (v < k_schema_version) {
    // The version is read again once this connection holds the write lock
    // (BEGIN IMMEDIATE): two perfgates opening a fresh database at once
    // both read an old version, and the second, let in after the first has
    // migrated, must see that rather than run a migration again ("table
    // builds already exists" once, two bisects started together).
    char* err = nullptr;
    int rc = sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, &err);
    std::string msg = err ? err : "";
    sqlite3_free(err);
    if (rc != SQLITE_OK) {
      if (rc == SQLITE_BUSY)
        return Error::harness(
            fmt::format("database is locked by another process; could not migrate the schema: {}", msg));
      return Error::harness(fmt::format("migrating the schema from version {} failed: {}", v, msg));
    }
    v = user_version(db);
    if (v < 0 || v >= k_schema_version) {
      std::string why = v < 0 ? sqlite3_errmsg(db) : "";
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      if (v < 0) return Error::harness(fmt::format("cannot read the schema version: {}", why));
      if (v > k_schema_version) return newer(v);
      break;
    }
    std::string sql = fmt::format("{} PRAGMA user_version = {}; PRAGMA application_id = {}; COMMIT;",
                                  k_migrations[static_cast<std::size_t>(v)], v + 1, application_id);
    rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    msg = err ? err : "";
    sqlite3_free(err);
    if (rc != SQLITE_OK) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      return Error::harness(fmt::format("migrating the schema from version {} failed: {}", v, msg));
    }
    ++v;
  }
  return Ok{};
}

}  // namespace perfgate::store
