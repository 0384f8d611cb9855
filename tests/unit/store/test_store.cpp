#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <sqlite3.h>

#include "harness/store/schema.hpp"
#include "harness/store/store.hpp"
#include "tests/unit/support/backends.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;
using store::RunRecord;
namespace fs = std::filesystem;

namespace {

RunRecord make_run(const std::string& suite, std::vector<std::string> tags = {}) {
  RunRecord r;
  r.suite = suite;
  r.suite_path = "suites/" + suite + ".yaml";
  r.description = "desc of " + suite;
  r.started_at = 1700000000.5;
  r.status = model::RunStatus::Running;
  r.host = "node-a-017";
  r.pid = ::getpid();
  r.fingerprint_json = R"({"cpu":"x"})";
  r.fingerprint_hash = "abc123";
  r.git_commit = "deadbeef";
  r.git_branch = "main";
  r.tags = std::move(tags);
  r.seed = (1ull << 52) + 7;
  r.argv = "perfgate run suites/x.yaml";
  r.env_json = R"({"OMP_NUM_THREADS":"1"})";
  r.plan_json = "{}";
  r.artifacts_dir = "/tmp/a";
  r.perfgate_version = "0.1.0";
  return r;
}

// Runs SQL with the plain sqlite3 API, outside perfgate.
void raw_exec(const fs::path& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(db_path.c_str(), &db) == SQLITE_OK);
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  INFO(msg);
  REQUIRE(rc == SQLITE_OK);
}

long long raw_int(const fs::path& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK);
  long long v = -1;
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

model::MetricSummary summary(const std::string& metric, double value, bool scalar = false) {
  model::MetricSummary m;
  m.metric = metric;
  m.n_total = scalar ? 1 : 20;
  m.n_steady = scalar ? 1 : 15;
  m.mean = value + 1;
  m.median = value;
  m.p90 = value + 2;
  m.p99 = value + 3;
  m.min = value - 1;
  m.max = value + 4;
  m.stddev = 0.5;
  m.value = value;
  m.is_scalar = scalar;
  return m;
}

}  // namespace

TEST_CASE("a run round-trips through the store", "[store]") {
  BOTH_BACKENDS;
  test::TempDir tmp("store");
  auto db = tmp / "results" / "perfgate.db";  // the parent directory is created
  auto st = test::open_or_fail(test::database_for(backend, db));
  if (backend == "sqlite") REQUIRE(fs::exists(db));

  auto rec = make_run("nightly", {"nightly", "ci", "nightly"});
  auto run_id = st->begin_run(rec);
  REQUIRE(run_id.has_value());
  REQUIRE(st->update_run_plan(*run_id, R"({"seed":1})", "/tmp/artifacts/1").has_value());

  // Configurations: the same inputs give the same id.
  auto c1 = st->config_id("train", R"({"bucket_mb":25})");
  auto c1_again = st->config_id("train", R"({"bucket_mb":25})");
  auto c2 = st->config_id("train", R"({"bucket_mb":50})");
  auto c3 = st->config_id("infer", R"({"bucket_mb":25})");
  REQUIRE(c1.has_value());
  REQUIRE(c1_again.has_value());
  REQUIRE(c2.has_value());
  REQUIRE(c3.has_value());
  CHECK(*c1 == *c1_again);
  CHECK(*c1 != *c2);
  CHECK(*c1 != *c3);

  // Metrics: same name, same id; a later unit replaces an empty one, an empty one keeps it.
  auto m_tp = st->metric_id({"throughput", "", model::Better::Higher});
  auto m_tp2 = st->metric_id({"throughput", "samples/s", model::Better::Higher});
  auto m_tp3 = st->metric_id({"throughput", "", model::Better::Higher});
  auto m_st = st->metric_id({"step_time_ms", "ms", model::Better::Lower});
  auto m_loss = st->metric_id({"loss", "", model::Better::None});
  REQUIRE(m_tp.has_value());
  REQUIRE(m_tp2.has_value());
  REQUIRE(m_tp3.has_value());
  REQUIRE(m_st.has_value());
  REQUIRE(m_loss.has_value());
  CHECK(*m_tp == *m_tp2);
  CHECK(*m_tp == *m_tp3);
  CHECK(*m_tp != *m_st);

  model::TrialRecord t1;
  t1.run_id = *run_id;
  t1.config_id = *c1;
  t1.repeat = 0;
  t1.seq = 0;
  t1.started_at = 1700000001.0;
  t1.log_dir = "/tmp/artifacts/1/0001";
  auto t1_id = st->begin_trial(t1);
  REQUIRE(t1_id.has_value());
  t1.id = *t1_id;

  model::TrialRecord t2 = t1;
  t2.config_id = *c2;
  t2.seq = 1;
  t2.log_dir = "/tmp/artifacts/1/0002";
  auto t2_id = st->begin_trial(t2);
  REQUIRE(t2_id.has_value());
  t2.id = *t2_id;
  CHECK(t2.id != t1.id);

  std::vector<store::SampleRow> rows = {
      {*m_tp, 0, 0.5, 900.0},
      {*m_tp, 1, 1.0, 930.5},
      {*m_loss, 0, 0.5, 2.5},
      {*m_loss, 1, 1.0, std::nan("")},
      {*m_loss, 2, 1.5, std::numeric_limits<double>::infinity()},
  };
  REQUIRE(st->append_samples(t1.id, rows).has_value());
  REQUIRE(st->append_samples(t1.id, std::span<const store::SampleRow>{}).has_value());

  t1.status = model::TrialStatus::Ok;
  t1.exit_code = 0;
  t1.wall_s = 12.5;
  t1.cpu_s = 20.25;
  t1.peak_rss_mb = 512.5;
  t1.steps = 2;
  t1.malformed_lines = 3;
  t1.notes = "3 malformed metric line(s) skipped";
  t1.summaries = {summary("throughput", 915.25), summary("step_time_ms", 34.5), summary("wall_time_s", 12.5, true)};
  std::vector<long long> ids = {*m_tp, *m_st, *st->metric_id({"wall_time_s", "s", model::Better::Lower})};
  REQUIRE(st->finish_trial(t1, ids).has_value());

  t2.status = model::TrialStatus::Failed;
  t2.exit_code = 1;
  t2.error = "exited with code 1; last lines of stderr:\nValueError: boom";
  REQUIRE(st->finish_trial(t2, std::span<const long long>{}).has_value());
  REQUIRE(st->finish_run(*run_id, model::RunStatus::Completed, 1700000100.25).has_value());

  auto data = st->load_run(*run_id);
  REQUIRE(data.has_value());
  const auto& r = data->run;
  CHECK(r.id == *run_id);
  CHECK(r.suite == "nightly");
  CHECK(r.suite_path == rec.suite_path);
  CHECK(r.description == rec.description);
  CHECK(r.started_at == rec.started_at);
  CHECK(r.ended_at == 1700000100.25);
  CHECK(r.status == model::RunStatus::Completed);
  CHECK(r.host == rec.host);
  CHECK(r.pid == rec.pid);
  CHECK(r.fingerprint_json == rec.fingerprint_json);
  CHECK(r.fingerprint_hash == rec.fingerprint_hash);
  CHECK(r.git_commit == "deadbeef");
  CHECK(r.git_branch == "main");
  CHECK(r.tags == std::vector<std::string>{"ci", "nightly"});  // sorted, duplicates dropped
  CHECK(r.seed == rec.seed);
  CHECK(r.argv == rec.argv);
  CHECK(r.env_json == rec.env_json);
  CHECK(r.plan_json == R"({"seed":1})");
  CHECK(r.artifacts_dir == "/tmp/artifacts/1");
  CHECK(r.perfgate_version == "0.1.0");

  REQUIRE(data->configs.size() == 2);
  CHECK(data->configs[0].id == *c1);
  CHECK(data->configs[0].workload == "train");
  CHECK(data->configs[0].params_json == R"({"bucket_mb":25})");
  CHECK(data->configs[1].id == *c2);  // only configs this run used

  REQUIRE(data->trials.size() == 2);
  const auto& a = data->trials[0];
  CHECK(a.id == t1.id);
  CHECK(a.run_id == *run_id);
  CHECK(a.config_id == *c1);
  CHECK(a.seq == 0);
  CHECK(a.status == model::TrialStatus::Ok);
  CHECK(a.exit_code == 0);
  CHECK(a.started_at == 1700000001.0);
  CHECK(a.wall_s == 12.5);
  CHECK(a.cpu_s == 20.25);
  CHECK(a.peak_rss_mb == 512.5);
  CHECK(a.steps == 2);
  CHECK(a.malformed_lines == 3);
  CHECK(a.notes == t1.notes);
  CHECK(a.log_dir == t1.log_dir);
  REQUIRE(a.summaries.size() == 3);
  // Summaries come back ordered by metric name.
  CHECK(a.summaries[0].metric == "step_time_ms");
  CHECK(a.summaries[1].metric == "throughput");
  CHECK(a.summaries[2].metric == "wall_time_s");
  const auto& tp = a.summaries[1];
  CHECK(tp.n_total == 20);
  CHECK(tp.n_steady == 15);
  CHECK(tp.mean == 916.25);
  CHECK(tp.median == 915.25);
  CHECK(tp.p90 == 917.25);
  CHECK(tp.p99 == 918.25);
  CHECK(tp.min == 914.25);
  CHECK(tp.max == 919.25);
  CHECK(tp.stddev == 0.5);
  CHECK(tp.value == 915.25);
  CHECK_FALSE(tp.is_scalar);
  CHECK(a.summaries[2].is_scalar);

  const auto& b = data->trials[1];
  CHECK(b.status == model::TrialStatus::Failed);
  CHECK(b.exit_code == 1);
  CHECK(b.error == t2.error);
  CHECK(b.summaries.empty());

  // Metrics mentioned by the run's summaries, with unit and direction.
  REQUIRE(data->metrics.size() == 3);
  CHECK(data->metrics[0].name == "step_time_ms");
  CHECK(data->metrics[1].name == "throughput");
  CHECK(data->metrics[1].unit == "samples/s");
  CHECK(data->metrics[1].better == model::Better::Higher);
  CHECK(data->metrics[2].unit == "s");

  // Samples in step order; NaN comes back as NaN, infinity as infinity.
  auto tp_samples = st->load_samples(t1.id, *m_tp);
  REQUIRE(tp_samples.has_value());
  REQUIRE(tp_samples->size() == 2);
  CHECK((*tp_samples)[1].step == 1);
  CHECK((*tp_samples)[1].t_s == 1.0);
  CHECK((*tp_samples)[1].value == 930.5);
  auto loss = st->load_samples(t1.id, *m_loss);
  REQUIRE(loss.has_value());
  REQUIRE(loss->size() == 3);
  CHECK((*loss)[0].value == 2.5);
  CHECK(std::isnan((*loss)[1].value));
  CHECK((*loss)[2].value == std::numeric_limits<double>::infinity());
  auto none = st->load_samples(t2.id, *m_tp);
  REQUIRE(none.has_value());
  CHECK(none->empty());
}

TEST_CASE("a NaN trial summary comes back as NaN, not 0", "[store]") {
  BOTH_BACKENDS;
  // A loss that went NaN gives NaN summaries; reading them back as 0 would
  // show a perfect loss instead of a broken run.
  test::TempDir tmp("store-nan");
  auto st = test::open_or_fail(test::database_for(backend, tmp / "p.db"));
  auto run = st->begin_run(make_run("s"));
  REQUIRE(run.has_value());
  auto cfg = st->config_id("w", "{}");
  auto mid = st->metric_id({"loss", "", model::Better::None});
  REQUIRE(cfg.has_value());
  REQUIRE(mid.has_value());
  model::TrialRecord t;
  t.run_id = *run;
  t.config_id = *cfg;
  auto tid = st->begin_trial(t);
  REQUIRE(tid.has_value());
  t.id = *tid;
  t.status = model::TrialStatus::Ok;
  auto m = summary("loss", std::nan(""));
  t.summaries = {m};
  std::vector<long long> ids = {*mid};
  REQUIRE(st->finish_trial(t, ids).has_value());
  auto data = st->load_run(*run);
  REQUIRE(data.has_value());
  REQUIRE(data->trials.size() == 1);
  REQUIRE(data->trials[0].summaries.size() == 1);
  CHECK(std::isnan(data->trials[0].summaries[0].value));
  CHECK(std::isnan(data->trials[0].summaries[0].median));
}

TEST_CASE("list_runs counts ok and failed trials", "[store]") {
  BOTH_BACKENDS;
  test::TempDir tmp("store-list");
  auto st = test::open_or_fail(test::database_for(backend, tmp / "p.db"));
  auto r1 = st->begin_run(make_run("alpha"));
  auto r2 = st->begin_run(make_run("beta", {"nightly"}));
  auto r3 = st->begin_run(make_run("alpha"));
  REQUIRE(r1.has_value());
  REQUIRE(r2.has_value());
  REQUIRE(r3.has_value());
  auto cfg = st->config_id("w", "{}");
  REQUIRE(cfg.has_value());
  auto add_trial = [&](long long run, model::TrialStatus status) {
    model::TrialRecord t;
    t.run_id = run;
    t.config_id = *cfg;
    auto id = st->begin_trial(t);
    REQUIRE(id.has_value());
    t.id = *id;
    if (status == model::TrialStatus::Running) return;
    t.status = status;
    REQUIRE(st->finish_trial(t, std::span<const long long>{}).has_value());
  };
  add_trial(*r1, model::TrialStatus::Ok);
  add_trial(*r1, model::TrialStatus::Ok);
  add_trial(*r1, model::TrialStatus::Failed);
  add_trial(*r1, model::TrialStatus::TimedOut);
  add_trial(*r1, model::TrialStatus::Running);
  add_trial(*r2, model::TrialStatus::Ok);

  auto all = st->list_runs(10);
  REQUIRE(all.has_value());
  REQUIRE(all->size() == 3);
  CHECK((*all)[0].run.id == *r3);  // newest first
  CHECK((*all)[2].run.id == *r1);
  CHECK((*all)[2].trials_ok == 2);
  CHECK((*all)[2].trials_failed == 2);  // failed and timed out; running is neither
  CHECK((*all)[2].trials_total == 5);
  CHECK((*all)[1].trials_ok == 1);
  CHECK((*all)[1].run.tags == std::vector<std::string>{"nightly"});
  CHECK((*all)[0].trials_total == 0);

  auto limited = st->list_runs(1);
  REQUIRE(limited.has_value());
  REQUIRE(limited->size() == 1);
  CHECK((*limited)[0].run.id == *r3);

  auto alpha = st->list_runs(10, "alpha");
  REQUIRE(alpha.has_value());
  REQUIRE(alpha->size() == 2);
  for (const auto& row : *alpha) CHECK(row.run.suite == "alpha");
}

TEST_CASE("delete_run takes a run and all under it, and leaves the run beside it whole", "[store]") {
  BOTH_BACKENDS;
  test::TempDir tmp("store-delete");
  auto st = test::open_or_fail(test::database_for(backend, tmp / "d.db"));
  auto config = st->config_id("train", "{}");
  auto metric = st->metric_id({"step_time_ms", "ms", model::Better::Lower});
  REQUIRE(config);
  REQUIRE(metric);
  // Two runs, their trials' samples interleaved (slots writing side by side).
  std::vector<long long> runs, trials;
  for (int r = 0; r < 2; ++r) {
    auto rec = make_run("s", {"nightly"});
    rec.started_at += r;
    auto id = st->begin_run(rec);
    REQUIRE(id);
    runs.push_back(*id);
    model::TrialRecord t;
    t.run_id = *id;
    t.config_id = *config;
    auto tid = st->begin_trial(t);
    REQUIRE(tid);
    trials.push_back(*tid);
  }
  for (int batch = 0; batch < 3; ++batch)
    for (std::size_t r = 0; r < 2; ++r) {
      std::vector<store::SampleRow> rows;
      for (int i = 0; i < 4; ++i)
        rows.push_back({*metric, batch * 4 + i, 0.1 * (batch * 4 + i), 10.0 * static_cast<double>(r + 1) + i});
      REQUIRE(st->append_samples(trials[r], rows));
    }
  for (std::size_t r = 0; r < 2; ++r) {
    model::TrialRecord t;
    t.id = trials[r];
    t.run_id = runs[r];
    t.status = model::TrialStatus::Ok;
    t.summaries = {summary("step_time_ms", 10.0 * static_cast<double>(r + 1))};
    REQUIRE(st->finish_trial(t, std::vector<long long>{*metric}));
    REQUIRE(st->finish_run(runs[r], model::RunStatus::Completed, 1700000100));
  }
  store::GateRecord g;
  g.run_id = runs[0];
  g.created_at = 1700000200;
  g.baseline = "tag:nightly";
  g.baseline_runs = {runs[1]};
  g.outcome = "pass";
  REQUIRE(st->save_gate(g));

  REQUIRE(st->delete_run(runs[0]));
  auto gone = st->load_run(runs[0]);
  REQUIRE_FALSE(gone);
  CHECK(gone.error().kind == ErrorKind::Input);
  auto samples_gone = st->load_samples(trials[0], *metric);
  REQUIRE(samples_gone);
  CHECK(samples_gone->empty());
  auto kept = st->load_run(runs[1]);
  REQUIRE(kept);
  REQUIRE(kept->trials.size() == 1);
  CHECK(kept->trials[0].summaries.size() == 1);
  CHECK(kept->run.tags == std::vector<std::string>{"nightly"});
  auto kept_samples = st->load_samples(trials[1], *metric);
  REQUIRE(kept_samples);
  REQUIRE(kept_samples->size() == 12);
  CHECK(kept_samples->front().value == 20.0);
  CHECK(kept_samples->back().value == 23.0);
  auto latest = st->resolve_run("latest:nightly");
  REQUIRE(latest);
  CHECK(*latest == runs[1]);
}

TEST_CASE("resolve_run: id, latest, latest:TAG and errors", "[store]") {
  BOTH_BACKENDS;
  test::TempDir tmp("store-resolve");
  auto st = test::open_or_fail(test::database_for(backend, tmp / "p.db"));

  SECTION("an empty store has no latest run") {
    auto r = st->resolve_run("latest");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == ErrorKind::Input);
    CHECK_THAT(r.error().message, Catch::EndsWith("yet"));
  }
  SECTION("a bisect's probe runs are never latest") {
    auto user = st->begin_run(make_run("s", {"nightly"}));
    auto probe_run = make_run("s");
    probe_run.kind = model::RunKind::Bisect;
    auto probe = st->begin_run(probe_run);
    REQUIRE(user);
    REQUIRE(probe);
    auto latest = st->resolve_run("latest");
    REQUIRE(latest);
    CHECK(*latest == *user);
    auto by_id = st->resolve_run(std::to_string(*probe));
    REQUIRE(by_id);
    CHECK(*by_id == *probe);
  }
  SECTION("a store of probe runs alone says so") {
    auto probe_run = make_run("s");
    probe_run.kind = model::RunKind::Bisect;
    REQUIRE(st->begin_run(probe_run));
    auto r = st->resolve_run("latest");
    REQUIRE_FALSE(r);
    CHECK_THAT(r.error().message, Catch::Contains("bisect's probe runs") && Catch::Contains("by its id"));
  }

  auto r1 = st->begin_run(make_run("s", {"nightly"}));
  auto r2 = st->begin_run(make_run("s", {"nightly", "release"}));
  auto r3 = st->begin_run(make_run("s", {"adhoc"}));
  REQUIRE(r1.has_value());
  REQUIRE(r2.has_value());
  REQUIRE(r3.has_value());

  auto id = st->resolve_run(std::to_string(*r1));
  REQUIRE(id.has_value());
  CHECK(*id == *r1);
  auto latest = st->resolve_run("latest");
  REQUIRE(latest.has_value());
  CHECK(*latest == *r3);
  auto nightly = st->resolve_run("latest:nightly");
  REQUIRE(nightly.has_value());
  CHECK(*nightly == *r2);
  auto release = st->resolve_run("latest:release");
  REQUIRE(release.has_value());
  CHECK(*release == *r2);

  for (const std::string bad : {"999", "latest:nosuchtag", "", "newest", "-1", "12abc"}) {
    INFO("selector '" << bad << "'");
    auto r = st->resolve_run(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().kind == ErrorKind::Input);
  }
  auto unknown = st->resolve_run("999");
  CHECK_THAT(unknown.error().message, Catch::Contains("999"));
  auto untagged = st->resolve_run("latest:nosuchtag");
  CHECK_THAT(untagged.error().message, Catch::Contains("nosuchtag"));
  auto loaded = st->load_run(999);
  REQUIRE_FALSE(loaded.has_value());
  CHECK(loaded.error().kind == ErrorKind::Input);
}

TEST_CASE("resolve_run of a huge number is an input error, not an exception", "[store]") {
  BOTH_BACKENDS;
  test::TempDir tmp("store-huge");
  auto st = test::open_or_fail(test::database_for(backend, tmp / "p.db"));
  REQUIRE(st->begin_run(make_run("s")).has_value());
  Expected<long long> r = Error::harness("not called");
  REQUIRE_NOTHROW(r = st->resolve_run("99999999999999999999999"));
  REQUIRE_FALSE(r.has_value());
  CHECK(r.error().kind == ErrorKind::Input);
}

TEST_CASE("every database has its own id, kept across reopening", "[store]") {
  BOTH_BACKENDS;
  test::TempDir tmp("store-id");
  std::string first;
  {
    auto st = test::open_or_fail(test::database_for(backend, tmp / "a.db"));
    auto id = st->store_id();
    REQUIRE(id.has_value());
    CHECK(id->size() == 12);
    CHECK(id->find_first_not_of("0123456789abcdef") == std::string::npos);
    first = *id;
  }
  CHECK(*test::open_or_fail(test::database_for(backend, tmp / "a.db"))->store_id() == first);
  CHECK(*test::open_or_fail(test::database_for(backend, tmp / "b.db"))->store_id() != first);
}

TEST_CASE("reopening a database keeps its data and schema version", "[store]") {
  BOTH_BACKENDS;
  test::TempDir tmp("store-reopen");
  auto db = tmp / "p.db";
  const std::string spec = test::database_for(backend, db);
  auto version = [&] {
    return backend == "sqlite" ? raw_int(db, "PRAGMA user_version")
                               : std::stoll(test::pg_query(spec, "SELECT version FROM perfgate_schema"));
  };
  auto runs = [&] {
    return backend == "sqlite" ? raw_int(db, "SELECT count(*) FROM runs")
                               : std::stoll(test::pg_query(spec, "SELECT count(*) FROM runs"));
  };
  long long run = 0;
  {
    auto st = test::open_or_fail(spec);
    auto r = st->begin_run(make_run("s", {"x"}));
    REQUIRE(r.has_value());
    run = *r;
  }
  CHECK(version() == store::k_schema_version);
  for (int i = 0; i < 2; ++i) {
    auto st = test::open_or_fail(spec);
    auto data = st->load_run(run);
    REQUIRE(data.has_value());
    CHECK(data->run.suite == "s");
    CHECK(data->run.tags == std::vector<std::string>{"x"});
    auto r = st->begin_run(make_run("again"));
    REQUIRE(r.has_value());
    CHECK(*r > run);
  }
  CHECK(version() == store::k_schema_version);
  if (backend == "sqlite") CHECK(raw_int(db, "PRAGMA application_id") != 0);
  CHECK(runs() == 3);
}

TEST_CASE("a file that is not SQLite is refused and left unchanged", "[store]") {
  test::TempDir tmp("store-text");
  auto path = tmp / "notes.db";
  const std::string text = "These are my notes, not a database.\nDo not overwrite.\n";
  test::write_file(path, text);
  auto s = store::open_sqlite_store(path.string());
  REQUIRE_FALSE(s.has_value());
  CHECK_THAT(s.error().message, Catch::Contains(path.string()) && Catch::Contains("not a perfgate database"));
  CHECK(test::read_file(path) == text);
  // No side files appeared either.
  CHECK_FALSE(fs::exists(path.string() + "-wal"));
  CHECK_FALSE(fs::exists(path.string() + "-journal"));

  SECTION("a short file too") {
    test::write_file(path, "hi");
    auto s2 = store::open_sqlite_store(path.string());
    REQUIRE_FALSE(s2.has_value());
    CHECK(test::read_file(path) == "hi");
  }
  SECTION("a directory") {
    auto s3 = store::open_sqlite_store(tmp.str());
    REQUIRE_FALSE(s3.has_value());
  }
}

TEST_CASE("a SQLite database of another application is refused and left unchanged", "[store]") {
  test::TempDir tmp("store-other");
  auto path = tmp / "other.db";
  raw_exec(path, "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes(body) VALUES ('keep me');");
  const auto before = test::read_file(path);
  REQUIRE(before.size() > 0);
  auto s = store::open_sqlite_store(path.string());
  REQUIRE_FALSE(s.has_value());
  CHECK_THAT(s.error().message, Catch::Contains("another application") && Catch::Contains("notes"));
  CHECK(test::read_file(path) == before);
  CHECK_FALSE(fs::exists(path.string() + "-wal"));
  CHECK(raw_int(path, "PRAGMA user_version") == 0);
  CHECK(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE name = 'runs'") == 0);

  SECTION("also when it only sets an application_id") {
    auto p2 = tmp / "other2.db";
    raw_exec(p2, "PRAGMA application_id = 1234;");
    const auto b2 = test::read_file(p2);
    auto s2 = store::open_sqlite_store(p2.string());
    REQUIRE_FALSE(s2.has_value());
    CHECK(test::read_file(p2) == b2);
  }
}

TEST_CASE("a database from a newer perfgate is refused", "[store]") {
  BOTH_BACKENDS;
  test::TempDir tmp("store-newer");
  auto path = tmp / "p.db";
  const std::string spec = test::database_for(backend, path);
  {
    auto st = test::open_or_fail(spec);
    REQUIRE(st->begin_run(make_run("s")).has_value());
  }
  const int newer = store::k_schema_version + 1;
  if (backend == "sqlite")
    raw_exec(path, "PRAGMA user_version = " + std::to_string(newer) + ";");
  else
    test::pg_query(spec, "UPDATE perfgate_schema SET version = " + std::to_string(newer));
  auto s = store::open_store(spec);
  REQUIRE_FALSE(s.has_value());
  CHECK(s.error().kind == ErrorKind::Harness);
  CHECK_THAT(s.error().message, Catch::Contains("newer"));
  if (backend == "sqlite") {
    CHECK(raw_int(path, "PRAGMA user_version") == newer);
    CHECK(raw_int(path, "SELECT count(*) FROM runs") == 1);
  } else {
    CHECK(test::pg_query(spec, "SELECT version FROM perfgate_schema") == std::to_string(newer));
    CHECK(test::pg_query(spec, "SELECT count(*) FROM runs") == "1");
  }
}

TEST_CASE("perfgates opening a fresh SQLite database at once all get it, migrated once", "[store]") {
  // Two bisects (or runs) started together on a new file: each reads the
  // schema version, and all but the first find it migrated by the time
  // they hold the write lock.
  test::TempDir tmp("store-race");
  constexpr int k_rounds = 12, k_processes = 6;
  for (int round = 0; round < k_rounds; ++round) {
    const std::string db = (tmp / fmt::format("race-{}.db", round)).string();
    int go[2], report[2];
    REQUIRE(::pipe(go) == 0);
    REQUIRE(::pipe(report) == 0);
    std::vector<pid_t> kids;
    for (int k = 0; k < k_processes; ++k) {
      pid_t pid = ::fork();
      REQUIRE(pid >= 0);
      if (pid == 0) {
        ::close(go[1]);
        char c;
        (void)!::read(go[0], &c, 1);  // every process opens at once, when the parent lets go
        auto st = store::open_store(db);
        if (!st) (void)!::write(report[1], st.error().message.data(), st.error().message.size());
        ::_exit(st ? 0 : 1);
      }
      kids.push_back(pid);
    }
    ::close(go[0]);
    ::close(report[1]);
    ::close(go[1]);  // go
    int failed = 0;
    for (pid_t pid : kids) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    std::string messages;
    char buf[512];
    for (ssize_t n; (n = ::read(report[0], buf, sizeof buf)) > 0;) messages.append(buf, static_cast<std::size_t>(n));
    ::close(report[0]);
    INFO("round " << round << ": " << messages);
    REQUIRE(failed == 0);
  }
  auto st = test::open_or_fail((tmp / "race-0.db").string());
  CHECK(st->begin_run(make_run("s")));
}

TEST_CASE("an empty file becomes a new database", "[store]") {
  test::TempDir tmp("store-empty");
  auto path = tmp / "p.db";
  test::write_file(path, "");
  auto st = test::open_or_fail(path.string());
  CHECK(st->begin_run(make_run("s")).has_value());
}

TEST_CASE("close_abandoned_runs marks runs of dead perfgates interrupted", "[store]") {
  BOTH_BACKENDS;
  test::TempDir tmp("store-abandoned");
  auto st = test::open_or_fail(test::database_for(backend, tmp / "p.db"));
  auto cfg = st->config_id("w", "{}");
  REQUIRE(cfg.has_value());

  // A child that has exited and been reaped: its pid names no process.
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) ::_exit(0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);

  auto dead1 = make_run("s");
  dead1.pid = 999999999;
  auto dead2 = make_run("s");
  dead2.pid = child;
  auto alive = make_run("s");  // our own pid
  auto elsewhere = make_run("s");
  elsewhere.pid = 999999999;
  elsewhere.host = "node-b-001";
  auto finished = make_run("s");
  finished.pid = 999999999;

  auto id_dead1 = st->begin_run(dead1);
  auto id_dead2 = st->begin_run(dead2);
  auto id_alive = st->begin_run(alive);
  auto id_elsewhere = st->begin_run(elsewhere);
  auto id_finished = st->begin_run(finished);
  REQUIRE(id_dead1.has_value());
  REQUIRE(id_dead2.has_value());
  REQUIRE(id_alive.has_value());
  REQUIRE(id_elsewhere.has_value());
  REQUIRE(id_finished.has_value());
  REQUIRE(st->finish_run(*id_finished, model::RunStatus::Completed, 5).has_value());

  // A trial left running in the first dead run.
  model::TrialRecord t;
  t.run_id = *id_dead1;
  t.config_id = *cfg;
  t.started_at = 1700000010;
  auto tid = st->begin_trial(t);
  REQUIRE(tid.has_value());

  auto closed = st->close_abandoned_runs("node-a-017");
  REQUIRE(closed.has_value());
  CHECK(*closed == 2);

  auto status_of = [&](long long id) {
    auto d = st->load_run(id);
    REQUIRE(d.has_value());
    return d->run.status;
  };
  CHECK(status_of(*id_dead1) == model::RunStatus::Interrupted);
  CHECK(status_of(*id_dead2) == model::RunStatus::Interrupted);
  CHECK(status_of(*id_alive) == model::RunStatus::Running);
  CHECK(status_of(*id_elsewhere) == model::RunStatus::Running);
  CHECK(status_of(*id_finished) == model::RunStatus::Completed);

  auto d = st->load_run(*id_dead1);
  REQUIRE(d.has_value());
  REQUIRE(d->trials.size() == 1);
  CHECK(d->trials[0].status == model::TrialStatus::Interrupted);
  CHECK(d->run.ended_at == 1700000010);  // the end of its last trial

  auto again = st->close_abandoned_runs("node-a-017");
  REQUIRE(again.has_value());
  CHECK(*again == 0);
}
