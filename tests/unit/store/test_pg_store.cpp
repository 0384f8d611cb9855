// What only the PostgreSQL store has: connection strings, its error cases,
// passwords that never show, several writers at once. The tests shared with
// SQLite are in test_store.cpp and test_gates.cpp, on both backends.

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <libpq-fe.h>

#include "harness/store/pg.hpp"
#include "harness/store/store.hpp"
#include "tests/unit/support/backends.hpp"
#include "tests/unit/support/temp_dir.hpp"

using namespace perfgate;

namespace {

// The server's host (socket folder) and port, from PERFGATE_TEST_PG.
std::pair<std::string, std::string> server_host_port() {
  const char* url = std::getenv("PERFGATE_TEST_PG");
  if (!url) FAIL("PERFGATE_TEST_PG is not set: run through ctest (fixture 'postgres')");
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(url, &err);
  REQUIRE(opts);
  std::string host, port;
  for (auto* o = opts; o->keyword; ++o) {
    if (!o->val) continue;
    if (std::string(o->keyword) == "host") host = o->val;
    if (std::string(o->keyword) == "port") port = o->val;
  }
  PQconninfoFree(opts);
  return {host, port};
}

store::RunRecord a_run(const std::string& suite, const std::string& host) {
  store::RunRecord r;
  r.suite = suite;
  r.started_at = 1700000000;
  r.host = host;
  r.pid = 1;
  return r;
}

}  // namespace

TEST_CASE("database specs: PostgreSQL URLs and libpq strings, SQLite paths, and URL-like mistakes", "[store]") {
  using store::Backend;
  CHECK(*store::backend_of("postgresql://u@h:5432/db") == Backend::Postgres);
  CHECK(*store::backend_of("postgres://h/db") == Backend::Postgres);
  CHECK(*store::backend_of("host=/run/pg dbname=perfgate") == Backend::Postgres);
  CHECK(*store::backend_of("results/perfgate.db") == Backend::Sqlite);
  CHECK(*store::backend_of("/data/a:b/perfgate.db") == Backend::Sqlite);
  for (const char* bad : {"postgresq://u:secret@h/db", "mysql://h/db", "pg:/x"}) {
    INFO(bad);
    auto b = store::backend_of(bad);
    REQUIRE_FALSE(b);
    CHECK(b.error().kind == ErrorKind::Input);
    CHECK_THAT(b.error().message, Catch::Contains("not a PostgreSQL one"));
    CHECK_THAT(b.error().message, !Catch::Contains("secret"));
  }
}

TEST_CASE("passwords are masked in every form of connection string", "[store]") {
  CHECK(store::pg::redact_conninfo("postgresql://alice:s3cret@db.example:5432/perfgate") ==
        "postgresql://alice:***@db.example:5432/perfgate");
  CHECK(store::pg::redact_conninfo("postgresql://db/perfgate?user=alice&password=s3cret&sslmode=require") ==
        "postgresql://db/perfgate?user=alice&password=***&sslmode=require");
  CHECK(store::pg::redact_conninfo("host=db password='s3 cret' dbname=perfgate") ==
        "host=db password=*** dbname=perfgate");
  CHECK(store::pg::redact_conninfo("host=db password=s3cret") == "host=db password=***");
  CHECK(store::pg::redact_conninfo("postgresql://alice@db/perfgate") == "postgresql://alice@db/perfgate");

  // Any length: a 30,000-character --db once overflowed the stack in the
  // redaction (std::regex recursed per character).
  const std::string long_password(1 << 20, 's');
  CHECK(store::pg::redact_conninfo("host=db password=" + long_password + " dbname=x") ==
        "host=db password=*** dbname=x");
  CHECK(store::pg::redact_conninfo("postgresql://alice:" + long_password + "@db/x") == "postgresql://alice:***@db/x");
  const std::string long_path(1 << 20, 'a');
  CHECK(store::display_name(long_path) == long_path);
  auto b = store::backend_of(long_path);
  REQUIRE(b.has_value());
  CHECK(*b == store::Backend::Sqlite);
  CHECK(store::pg::looks_like_conninfo(long_path + " host=db"));

  // Read byte by byte, as libpq does: a Latin-1 byte in a password and a
  // vertical tab before the key are masked too.
  CHECK(store::pg::redact_conninfo("postgresql://u:p\xe9ss@h/db") == "postgresql://u:***@h/db");
  CHECK(store::pg::redact_conninfo("host=h password=p\xe9ss dbname=x") == "host=h password=*** dbname=x");
  CHECK(store::pg::redact_conninfo("host=h\vpassword=secret") == "host=h\vpassword=***");
  CHECK(store::pg::looks_like_conninfo("x\vhost=h"));
}

TEST_CASE("PostgreSQL errors: wrong password, missing database, server down, another application's tables", "[store]") {
  auto [host, port] = server_host_port();
  // Over TCP this role must give its password (scripts/services/postgres.sh).
  auto wrong = store::open_store("postgresql://perfgate_pw:not-the-password@127.0.0.1:" + port + "/perfgate");
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().kind == ErrorKind::Harness);
  CHECK_THAT(wrong.error().message, Catch::Contains("password authentication failed"));
  CHECK_THAT(wrong.error().message, !Catch::Contains("not-the-password"));
  CHECK_THAT(wrong.error().message, Catch::Contains("perfgate_pw:***@"));

  auto missing = store::open_store("host=" + host + " port=" + port + " user=postgres dbname=no_such_db_here");
  REQUIRE_FALSE(missing);
  CHECK_THAT(missing.error().message, Catch::Contains("no_such_db_here"));
  CHECK_THAT(missing.error().message, Catch::Contains("does not exist"));

  // Nothing listens on port 1.
  auto down = store::open_store("postgresql://postgres:pw@127.0.0.1:1/perfgate?connect_timeout=2");
  REQUIRE_FALSE(down);
  CHECK_THAT(down.error().message, Catch::Contains("cannot connect to PostgreSQL"));
  CHECK_THAT(down.error().message, !Catch::Contains(":pw@"));

  test::TempDir tmp("pg-other");
  const std::string spec = test::database_for("postgresql", tmp / "other");
  test::pg_query(spec, "CREATE TABLE notes(id int, body text); INSERT INTO notes VALUES (1, 'keep me')");
  auto other = store::open_store(spec);
  REQUIRE_FALSE(other);
  CHECK_THAT(other.error().message, Catch::Contains("another application"));
  CHECK_THAT(other.error().message, Catch::Contains("notes"));
  CHECK(test::pg_query(spec, "SELECT body FROM notes") == "keep me");
  CHECK(test::pg_query(spec, "SELECT count(*) FROM pg_tables WHERE tablename = 'runs'") == "0");
}

TEST_CASE("several writers at once: each trial is whole, ids never collide", "[store]") {
  test::TempDir tmp("pg-writers");
  const std::string spec = test::database_for("postgresql", tmp / "shared");
  constexpr int k_writers = 4, k_trials = 5, k_samples = 2000;
  std::vector<std::thread> writers;
  std::vector<std::string> errors(k_writers);
  for (int w = 0; w < k_writers; ++w)
    writers.emplace_back([&, w] {
      auto st = store::open_store(spec);  // each its own connection, as separate machines
      if (!st) {
        errors[w] = st.error().message;
        return;
      }
      auto run = (*st)->begin_run(a_run("shared", "node-" + std::to_string(w)));
      auto cfg = (*st)->config_id("train", R"({"bucket_mb":25})");
      auto metric = (*st)->metric_id({"step_time_ms", "ms", model::Better::Lower, false});
      if (!run || !cfg || !metric) {
        errors[w] = "setup failed";
        return;
      }
      for (int t = 0; t < k_trials; ++t) {
        model::TrialRecord tr;
        tr.run_id = *run;
        tr.config_id = *cfg;
        tr.repeat = t;
        tr.seq = t;
        tr.started_at = 1700000000 + t;
        tr.host = "node-" + std::to_string(w);
        auto id = (*st)->begin_trial(tr);
        if (!id) {
          errors[w] = id.error().message;
          return;
        }
        tr.id = *id;
        std::vector<store::SampleRow> rows;
        for (int i = 0; i < k_samples; ++i) rows.push_back({*metric, i, i * 0.01, 10.0 + w + i * 1e-3});
        if (auto s = (*st)->append_samples(*id, rows); !s) {
          errors[w] = s.error().message;
          return;
        }
        tr.status = model::TrialStatus::Ok;
        if (auto s = (*st)->finish_trial(tr, {}); !s) errors[w] = s.error().message;
      }
      (void)(*st)->finish_run(*run, model::RunStatus::Completed, 1700000100);
    });
  for (auto& t : writers) t.join();
  for (const auto& e : errors) CHECK(e.empty());
  CHECK(test::pg_query(spec, "SELECT count(*) FROM runs") == std::to_string(k_writers));
  CHECK(test::pg_query(spec, "SELECT count(DISTINCT id) FROM trials") == std::to_string(k_writers * k_trials));
  CHECK(test::pg_query(spec, "SELECT count(*) FROM samples") == std::to_string(k_writers * k_trials * k_samples));
  // Every trial's samples read back in order, none from another writer.
  auto st = store::open_store(spec);
  REQUIRE(st);
  auto runs = (*st)->find_runs({});
  REQUIRE(runs);
  REQUIRE(runs->size() == k_writers);
  for (const auto& r : *runs) {
    auto d = (*st)->load_run(r.id);
    REQUIRE(d);
    REQUIRE(d->trials.size() == k_trials);
    auto metrics = (*st)->sampled_metrics(d->trials.front().id);
    REQUIRE(metrics);
    REQUIRE(metrics->size() == 1);
    auto samples = (*st)->load_samples(d->trials.front().id, metrics->front().second);
    REQUIRE(samples);
    REQUIRE(samples->size() == k_samples);
    const double base = samples->front().value;
    for (int i = 0; i < k_samples; ++i) {
      CHECK((*samples)[i].step == i);
      CHECK((*samples)[i].value == Approx(base + i * 1e-3));
    }
  }
}
