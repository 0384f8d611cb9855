#include "tests/unit/support/backends.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

#include <fmt/format.h>
#include <libpq-fe.h>
#include <catch2/catch.hpp>

namespace perfgate::test {
namespace {

// The server's connection string with dbname replaced.
std::string with_dbname(const std::string& conninfo, const std::string& dbname) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(conninfo.c_str(), &err);
  if (!opts) {
    std::string msg = err ? err : "unparsable";
    PQfreemem(err);
    FAIL("PERFGATE_TEST_PG: " << msg);
  }
  std::string out;
  for (PQconninfoOption* o = opts; o->keyword; ++o) {
    if (!o->val || std::string(o->keyword) == "dbname") continue;
    out += fmt::format("{}='{}' ", o->keyword, o->val);
  }
  PQconninfoFree(opts);
  return out + fmt::format("dbname='{}'", dbname);
}

}  // namespace

std::string pg_query(const std::string& spec, const std::string& sql) {
  PGconn* c = PQconnectdb(spec.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(c);
    PQfinish(c);
    FAIL("cannot connect to the test PostgreSQL server: " << msg);
  }
  PGresult* r = PQexec(c, sql.c_str());
  auto status = PQresultStatus(r);
  std::string out, err = PQresultErrorMessage(r);
  if (status == PGRES_TUPLES_OK && PQntuples(r) > 0) out = PQgetvalue(r, 0, 0);
  PQclear(r);
  PQfinish(c);
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) FAIL("SQL failed: " << sql << ": " << err);
  return out;
}

std::string database_for(const std::string& backend, const std::filesystem::path& path) {
  if (backend == "sqlite") return path.string();
  REQUIRE(backend == "postgresql");
  static std::mutex mu;
  static std::map<std::string, std::string> made;
  std::lock_guard lock(mu);
  if (auto it = made.find(path.string()); it != made.end()) return it->second;
  const char* server = std::getenv("PERFGATE_TEST_PG");
  if (!server || !*server)
    FAIL(
        "the PostgreSQL store tests need a server: run them through ctest (fixture 'postgres'), or "
        "export PERFGATE_TEST_PG=$(scripts/services/postgres.sh start)");
  static std::atomic<int> counter{0};
  std::string name = fmt::format("t_{}_{}_{}", ::getpid(), counter++, std::rand() % 100000);
  pg_query(server, "CREATE DATABASE " + name);
  std::string spec = with_dbname(server, name);
  made[path.string()] = spec;
  return spec;
}

std::unique_ptr<store::Store> open_or_fail(const std::string& spec) {
  auto s = store::open_store(spec);
  if (!s) FAIL("open_store " << spec << ": " << s.error().message);
  return std::move(*s);
}

}  // namespace perfgate::test
