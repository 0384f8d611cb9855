#include <catch2/catch.hpp>

#include <unistd.h>
#include <cmath>
#include <filesystem>

#include <sqlite3.h>

#include "harness/store/schema.hpp"
#include "harness/store/store.hpp"
#include "tests/unit/support/backends.hpp"
#include "tests/unit/support/paths.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;
namespace fs = std::filesystem;

namespace {

long long add_run(store::Store& st, const std::string& suite, std::vector<std::string> tags, const std::string& commit,
                  const std::string& fp_hash, model::RunStatus status = model::RunStatus::Completed) {
  store::RunRecord r;
  r.suite = suite;
  r.started_at = 1700000000;
  r.status = model::RunStatus::Running;
  r.host = "h";
  r.pid = ::getpid();
  r.fingerprint_hash = fp_hash;
  r.fingerprint_json = "{\"cpu_model\":\"" + fp_hash + "\"}";
  r.git_commit = commit;
  r.tags = std::move(tags);
  auto id = st.begin_run(r);
  REQUIRE(id.has_value());
  REQUIRE(st.finish_run(*id, status, 1700000100).has_value());
  return *id;
}

}  // namespace

TEST_CASE("find_runs filters by suite, tag, commit prefix, age and status", "[store]") {
  BOTH_BACKENDS;
  test::TempDir dir("gates");
  auto st = test::open_or_fail(test::database_for(backend, dir / "p.db"));
  long long a = add_run(*st, "nightly", {"nightly"}, "aaaa1111", "m1");
  long long b = add_run(*st, "nightly", {"nightly", "x"}, "bbbb2222", "m1");
  long long c = add_run(*st, "nightly", {"adhoc"}, "aaaa3333", "m1");
  long long d = add_run(*st, "other", {"nightly"}, "aaaa4444", "m1");
  long long e = add_run(*st, "nightly", {"nightly"}, "cccc", "m1", model::RunStatus::Interrupted);
  long long f = add_run(*st, "nightly", {"nightly"}, "100%_x", "m1");

  store::RunQuery q;
  q.suite = "nightly";
  q.tag = "nightly";
  auto r = st->find_runs(q);
  REQUIRE(r.has_value());
  REQUIRE(r->size() == 3);  // newest first; the interrupted run is left out
  CHECK((*r)[0].id == f);
  CHECK((*r)[1].id == b);
  CHECK((*r)[2].id == a);
  CHECK((*r)[1].tags == std::vector<std::string>{"nightly", "x"});

  q.before_id = f;
  q.limit = 1;
  r = st->find_runs(q);
  REQUIRE(r->size() == 1);
  CHECK(r->front().id == b);

  store::RunQuery by_commit;
  by_commit.commit_prefix = "aaaa";
  r = st->find_runs(by_commit);
  REQUIRE(r->size() == 3);
  CHECK(r->front().id == d);
  by_commit.exclude_id = d;
  by_commit.suite = "nightly";
  r = st->find_runs(by_commit);
  REQUIRE(r->size() == 2);
  CHECK(r->front().id == c);

  // The prefix is literal text, not a LIKE pattern.
  store::RunQuery literal;
  literal.commit_prefix = "100%";
  CHECK(st->find_runs(literal)->size() == 1);
  literal.commit_prefix = "1_0";
  CHECK(st->find_runs(literal)->empty());

  store::RunQuery all;
  all.completed_only = false;
  all.suite = "nightly";
  CHECK(st->find_runs(all)->size() == 5);
  (void)e;
}

TEST_CASE("a gate and its verdicts round-trip through the store", "[store]") {
  BOTH_BACKENDS;
  test::TempDir dir("gates");
  auto st = test::open_or_fail(test::database_for(backend, dir / "p.db"));
  long long base = add_run(*st, "s", {}, "a", "m");
  long long cand = add_run(*st, "s", {}, "b", "m");

  store::GateRecord g;
  g.run_id = cand;
  g.created_at = 1700000200;
  g.baseline = "tag:nightly,last:3";
  g.baseline_runs = {base};
  g.policy = "configs/gate.yaml";
  g.outcome = "regression";
  g.trials_added = 4;
  model::Comparison c;
  c.workload = "sim";
  c.params_json = R"({"bucket_mb":25})";
  c.label = "bucket_mb=25";
  c.metric = model::MetricInfo{"step_time_ms", "ms", model::Better::Lower};
  c.verdict = model::VerdictKind::Regression;
  c.threshold_rel = 0.05;
  c.n_base = 15;
  c.n_cand = 10;
  c.base_median = 20;
  c.cand_median = 22;
  c.change_rel = 0.1;
  c.change_low_rel = 0.08;
  c.change_high_rel = 0.12;
  c.tested = true;
  c.u = 3;
  c.p_value = 1e-6;
  c.p_adjusted = 2e-5;
  c.added_trials = 4;
  c.note = "n'ote";
  model::Comparison missing;
  missing.workload = "sim";
  missing.params_json = R"({"bucket_mb":50})";
  missing.metric = model::MetricInfo{"throughput", "samples/s", model::Better::Higher};
  missing.verdict = model::VerdictKind::Missing;
  missing.base_median = std::nan("");
  model::Comparison rss;  // its threshold was the policy's 32 MB floor (schema 9)
  rss.workload = "sim";
  rss.params_json = R"({"bucket_mb":25})";
  rss.metric = model::MetricInfo{"peak_rss_mb", "MB", model::Better::Lower};
  rss.verdict = model::VerdictKind::Unchanged;
  rss.threshold_rel = 1.6;
  rss.threshold_floor = 32;
  g.comparisons = {c, missing, rss};
  auto id = st->save_gate(g);
  REQUIRE(id.has_value());

  auto gates = st->load_gates(cand);
  REQUIRE(gates.has_value());
  REQUIRE(gates->size() == 1);
  const auto& back = gates->front();
  CHECK(back.id == *id);
  CHECK(back.baseline == g.baseline);
  CHECK(back.baseline_runs == std::vector<long long>{base});
  CHECK(back.outcome == "regression");
  CHECK(back.trials_added == 4);
  REQUIRE(back.comparisons.size() == 3);
  const auto& v = back.comparisons[0];
  CHECK(v.verdict == model::VerdictKind::Regression);
  CHECK(v.label == "bucket_mb=25");
  CHECK(v.metric.better == model::Better::Lower);
  CHECK(v.p_adjusted == Approx(2e-5));
  CHECK(v.change_low_rel == Approx(0.08));
  CHECK(v.n_base == 15);
  CHECK(v.note == "n'ote");
  CHECK(back.comparisons[1].verdict == model::VerdictKind::Missing);
  CHECK_FALSE(back.comparisons[1].tested);
  CHECK(std::isnan(back.comparisons[1].base_median));
  CHECK(v.threshold_floor == 0);
  CHECK(back.comparisons[2].threshold_floor == 32);
  CHECK(back.comparisons[2].threshold_rel == Approx(1.6));
  CHECK(st->load_gates(base)->empty());
}

TEST_CASE("a version 1 database is migrated and keeps its runs", "[store]") {
  test::TempDir dir("gates");
  fs::copy_file(fs::path(perfgate::test::data_dir()) / "store" / "v1.db", dir / "old.db");
  auto st = test::open_or_fail((dir / "old.db").string());
  auto runs = st->list_runs(10, "");
  REQUIRE(runs.has_value());
  REQUIRE(runs->size() == 1);
  CHECK(runs->front().run.suite == "tiny-v1");
  CHECK(runs->front().trials_ok == 2);
  auto data = st->load_run(runs->front().run.id);
  REQUIRE(data.has_value());
  CHECK(data->trials.size() == 2);
  CHECK(st->load_gates(runs->front().run.id)->empty());
  store::GateRecord g;
  g.run_id = runs->front().run.id;
  g.baseline = "1";
  g.outcome = "pass";
  CHECK(st->save_gate(g).has_value());
}

TEST_CASE("a version 6 database's verdicts survive the node-class key of version 7, in order", "[store]") {
  BOTH_BACKENDS;
  test::TempDir dir("gates-v6");
  const auto path = dir / "p.db";
  const std::string spec = test::database_for(backend, path);
  long long cand = 0;
  {
    auto st = test::open_or_fail(spec);
    add_run(*st, "s", {}, "a", "m");
    cand = add_run(*st, "s", {}, "b", "m");
    store::GateRecord g;
    g.run_id = cand;
    g.baseline = "1";
    g.outcome = "pass";
    // Configuration ids made in another order than the verdicts are written
    // (50, 25, 100 get ids in that order): the rows must come back as
    // written, not by key.
    for (int bucket : {50, 25, 100}) REQUIRE(st->config_id("sim", "{\"bucket_mb\":" + std::to_string(bucket) + "}"));
    for (int bucket : {100, 25, 50}) {
      model::Comparison c;
      c.workload = "sim";
      c.params_json = "{\"bucket_mb\":" + std::to_string(bucket) + "}";
      c.metric = model::MetricInfo{"step_time_ms", "ms", model::Better::Lower};
      c.verdict = model::VerdictKind::Unchanged;
      c.note = "bucket " + std::to_string(bucket);
      g.comparisons.push_back(c);
    }
    REQUIRE(st->save_gate(g));
  }
  // Back to version 6 as it was: no node_class, the old primary key, no bisect tables, no threshold_floor.
  if (backend == "sqlite") {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    const char* down =
        "BEGIN; CREATE TABLE v6(gate_id INTEGER NOT NULL, config_id INTEGER NOT NULL, metric_id INTEGER NOT NULL, "
        "verdict TEXT NOT NULL, threshold REAL NOT NULL, n_base INTEGER NOT NULL, n_cand INTEGER NOT NULL, "
        "failed_base INTEGER NOT NULL, failed_cand INTEGER NOT NULL, base_median REAL, cand_median REAL, change REAL, "
        "change_low REAL, change_high REAL, u REAL, p REAL, p_adjusted REAL, extra_trials INTEGER NOT NULL DEFAULT 0, "
        "added_trials INTEGER NOT NULL DEFAULT 0, note TEXT NOT NULL DEFAULT '', "
        "PRIMARY KEY(gate_id, config_id, metric_id)); "
        "INSERT INTO v6 SELECT gate_id, config_id, metric_id, verdict, threshold, n_base, n_cand, "
        "failed_base, failed_cand, base_median, cand_median, change, change_low, change_high, u, p, p_adjusted, "
        "extra_trials, added_trials, note FROM verdicts ORDER BY rowid; DROP TABLE verdicts; "
        "ALTER TABLE v6 RENAME TO verdicts; DROP TABLE builds; DROP TABLE bisects; PRAGMA user_version = 6; COMMIT;";
    REQUIRE(sqlite3_exec(db, down, nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  } else {
    test::pg_query(spec,
                   "ALTER TABLE verdicts DROP CONSTRAINT verdicts_pkey; ALTER TABLE verdicts DROP COLUMN node_class; "
                   "ALTER TABLE verdicts DROP COLUMN threshold_floor; "
                   "ALTER TABLE verdicts ADD PRIMARY KEY (gate_id, config_id, metric_id); "
                   "DROP TABLE builds; DROP TABLE bisects; UPDATE perfgate_schema SET version = 6");
  }
  auto st = test::open_or_fail(spec);
  auto gates = st->load_gates(cand);
  REQUIRE(gates);
  REQUIRE(gates->size() == 1);
  std::vector<std::string> notes;
  for (const auto& c : gates->front().comparisons) {
    notes.push_back(c.note);
    CHECK(c.node_class.empty());
  }
  CHECK(notes == std::vector<std::string>{"bucket 100", "bucket 25", "bucket 50"});
  // Now one configuration and metric may hold a verdict per node class.
  store::GateRecord g;
  g.run_id = cand;
  g.baseline = "1";
  g.outcome = "regression";
  for (const char* cls : {"pool-a/aaaaaa", "pool-b/bbbbbb"}) {
    model::Comparison c;
    c.workload = "sim";
    c.params_json = R"({"bucket_mb":25})";
    c.label = "bucket_mb=25";
    c.node_class = cls;
    c.metric = model::MetricInfo{"step_time_ms", "ms", model::Better::Lower};
    g.comparisons.push_back(c);
  }
  REQUIRE(st->save_gate(g));
  gates = st->load_gates(cand);
  REQUIRE(gates->front().comparisons.size() == 2);
  CHECK(gates->front().comparisons[1].label == "bucket_mb=25 @ pool-b/bbbbbb");
}
