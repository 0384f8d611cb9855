// `perfgate db copy` (store/copy): repeated copies hold nothing twice, a
// half-written run is copied again whole, and fleet nodes' fingerprints go
// with their trials. Both targets; the PostgreSQL round trip of a real
// history is tests/integration/test_postgres.py.
#include <catch2/catch.hpp>

#include <unistd.h>
#include <string>
#include <vector>

#include <sqlite3.h>

#include "harness/store/copy.hpp"
#include "harness/store/store.hpp"
#include "tests/unit/support/backends.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;

namespace {

// A finished run of `trials` ok trials on fleet node "fp-node-a", 5 samples each.
void finished_run(store::Store& st, double started_at, int trials) {
  store::RunRecord r;
  r.suite = "nightly";
  r.started_at = started_at;
  r.status = model::RunStatus::Running;
  r.host = "submit-host";
  r.pid = ::getpid();
  r.plan_json = "{}";
  auto run = st.begin_run(r);
  REQUIRE(run);
  auto config = st.config_id("train", "{}");
  auto metric = st.metric_id({"step_time_ms", "ms", model::Better::Lower});
  REQUIRE(config);
  REQUIRE(metric);
  REQUIRE(st.save_node_fingerprint("fp-node-a", R"({"host":"node-a","npu":"910B"})"));
  for (int i = 0; i < trials; ++i) {
    model::TrialRecord t;
    t.run_id = *run;
    t.config_id = *config;
    t.repeat = i;
    t.seq = i;
    t.node_fingerprint = "fp-node-a";
    auto id = st.begin_trial(t);
    REQUIRE(id);
    t.id = *id;
    std::vector<store::SampleRow> rows;
    for (int s = 0; s < 5; ++s) rows.push_back({*metric, s, 0.1 * s, 30.0 + i + 0.5 * s});
    REQUIRE(st.append_samples(t.id, rows));
    t.status = model::TrialStatus::Ok;
    REQUIRE(st.finish_trial(t, {}));
  }
  REQUIRE(st.finish_run(*run, model::RunStatus::Completed, started_at + 60));
}

// Deletes the target's node fingerprints outside perfgate.
void forget_fingerprints(const std::string& backend, const std::string& spec) {
  if (backend == "postgresql") {
    test::pg_query(spec, "DELETE FROM node_fingerprints");
    return;
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(spec.c_str(), &db) == SQLITE_OK);
  const int rc = sqlite3_exec(db, "DELETE FROM node_fingerprints", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

}  // namespace

TEST_CASE("db copy: again is a no-op, a half-written run is copied again, node fingerprints go along",
          "[store][copy]") {
  BOTH_BACKENDS;
  test::TempDir tmp("copy");
  auto from = test::open_or_fail((tmp / "from.db").string());
  finished_run(*from, 1700000000, 3);
  finished_run(*from, 1700000100, 4);
  const std::string to_spec = test::database_for(backend, tmp / "to.db");
  auto to = test::open_or_fail(to_spec);

  auto once = store::copy_history(*from, *to);
  REQUIRE(once);
  CHECK(once->runs == 2);
  CHECK(once->trials == 7);
  CHECK(once->samples == 35);
  CHECK(once->kept == 0);
  auto fp = to->node_fingerprint("fp-node-a");
  REQUIRE(fp);
  CHECK(*fp == R"({"host":"node-a","npu":"910B"})");

  // Again, into a target that lost the fingerprints (a copy cut off before them): nothing
  // copied twice, the fingerprints back.
  forget_fingerprints(backend, to_spec);
  REQUIRE(to->node_fingerprint("fp-node-a"));
  CHECK(to->node_fingerprint("fp-node-a")->empty());
  auto again = store::copy_history(*from, *to);
  REQUIRE(again);
  CHECK(again->runs == 0);
  CHECK(again->kept == 2);
  CHECK(again->samples == 0);
  CHECK(*to->node_fingerprint("fp-node-a") == R"({"host":"node-a","npu":"910B"})");

  // The target's copy of the second run left "running" (a copy cut off inside it).
  auto listed = to->list_runs(10);
  REQUIRE(listed);
  REQUIRE(listed->size() == 2);
  long long target_second = 0;
  for (const auto& row : *listed)
    if (row.run.started_at == 1700000100) target_second = row.run.id;
  REQUIRE(target_second != 0);
  REQUIRE(to->finish_run(target_second, model::RunStatus::Running, 0));
  auto resumed = store::copy_history(*from, *to);
  REQUIRE(resumed);
  CHECK(resumed->runs == 1);
  CHECK(resumed->replaced == 1);
  CHECK(resumed->kept == 1);
  CHECK(resumed->trials == 4);
  listed = to->list_runs(10);
  REQUIRE(listed);
  REQUIRE(listed->size() == 2);
  for (const auto& row : *listed) {
    CHECK(row.run.status == model::RunStatus::Completed);
    auto data = to->load_run(row.run.id);
    REQUIRE(data);
    CHECK(data->trials.size() == (row.run.started_at == 1700000100 ? 4u : 3u));
  }
}
