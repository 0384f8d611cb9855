#include <fmt/format.h>
#include <re2/re2.h>

#include "harness/store/pg.hpp"
#include "harness/store/store.hpp"

namespace perfgate::store {

Expected<Backend> backend_of(const std::string& spec) {
  if (pg::looks_like_conninfo(spec)) return Backend::Postgres;
  // "postgresq://", "mysql://host/db", "pg:/x": a URL that is not PostgreSQL's
  // would otherwise become a SQLite file named like it.
  static const RE2 url(R"(^[A-Za-z][A-Za-z0-9+.-]*:/)");
  if (RE2::PartialMatch(spec, url))
    return Error::input(
        fmt::format("--db '{}': looks like a URL but is not a PostgreSQL one (postgresql://user@host:port/db "
                    "or key=value pairs such as 'host=... dbname=...'); a SQLite database is a file path",
                    pg::redact_conninfo(spec)));
  return Backend::Sqlite;
}

Expected<std::unique_ptr<Store>> open_store(const std::string& spec, const OpenOptions& opts) {
  auto b = backend_of(spec);
  if (!b) return b.error();
  if (*b == Backend::Postgres) return open_postgres_store(spec, opts);
  return open_sqlite_store(spec, opts);
}

std::string display_name(const std::string& spec) { return pg::redact_conninfo(spec); }

}  // namespace perfgate::store
