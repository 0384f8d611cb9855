#pragma once
// Thin RAII over libpq for the PostgreSQL store: a connection, a result, and
// statements with text parameters. Nothing here knows perfgate's schema.

#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <libpq-fe.h>

namespace perfgate::store::pg {

struct ConnDeleter {
  void operator()(PGconn* c) const { PQfinish(c); }
};
struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Conn = std::unique_ptr<PGconn, ConnDeleter>;

// A statement's parameters as text (libpq's text format); nullopt is NULL.
class Params {
 public:
  Params& add(std::string_view v) {
    m_values.emplace_back(std::string(v));
    return *this;
  }
  Params& add(const char* v) { return add(std::string_view(v)); }
  Params& add(long long v) { return add(std::to_string(v)); }
  Params& add(int v) { return add(std::to_string(v)); }
  Params& add(bool v) { return add(v ? "1" : "0"); }
  // NaN is NULL, as in the SQLite store (one reading path).
  Params& add(double v);
  Params& null() {
    m_values.emplace_back(std::nullopt);
    return *this;
  }
  std::vector<const char*> pointers() const;
  int size() const { return static_cast<int>(m_values.size()); }

 private:
  std::vector<std::optional<std::string>> m_values;
};

class Result {
 public:
  Result() = default;
  explicit Result(PGresult* r) : m_r(r) {}
  bool ok() const;  // PGRES_COMMAND_OK or PGRES_TUPLES_OK
  ExecStatusType status() const { return m_r ? PQresultStatus(m_r.get()) : PGRES_FATAL_ERROR; }
  std::string error() const;
  // SQLSTATE, e.g. "42P01"; "" when the server sent none.
  std::string sqlstate() const;
  int rows() const { return m_r ? PQntuples(m_r.get()) : 0; }
  // Rows an UPDATE / INSERT / DELETE changed.
  long long affected() const { return m_r ? std::atoll(PQcmdTuples(m_r.get())) : 0; }
  bool is_null(int row, int col) const { return PQgetisnull(m_r.get(), row, col) != 0; }
  std::string text(int row, int col) const;
  long long i64(int row, int col) const;
  double f64(int row, int col) const;  // NULL reads as NaN
  PGresult* get() const { return m_r.get(); }

 private:
  std::unique_ptr<PGresult, ResultDeleter> m_r;
};

// Rows for `COPY ... FROM STDIN (FORMAT binary)`: the server takes binary
// fields as they are, where text needs a number parse per value (one trial
// of 3M samples: 952k samples/s binary against 581k text on this machine's
// PostgreSQL 15, tests/bench/ingest_e2e.py).
class BinaryCopy {
 public:
  BinaryCopy();           // writes the header
  void row(int fields);   // starts a tuple of `fields` values
  void i64(long long v);  // bigint
  void f64(double v);     // double precision
  void null();
  const std::string& finish();  // writes the trailer; the bytes to send
  void reserve(std::size_t bytes) { m_buf.reserve(bytes); }

 private:
  void put_be(unsigned long long v, int bytes);
  std::string m_buf;
};

// A double as PostgreSQL reads it back exactly ("Infinity" for inf).
std::string double_text(double v);

Result exec(PGconn* c, const std::string& sql);
Result exec(PGconn* c, const std::string& sql, const Params& p);

// A connection string with its password replaced by "***": URLs
// (postgresql://user:secret@host/db, ?password=...) and key=value strings
// (password=secret). For every message, log and stored command line.
std::string redact_conninfo(std::string_view conninfo);

// True for what libpq takes as a connection string: a postgresql:// or
// postgres:// URL, or key=value pairs naming at least one known key.
bool looks_like_conninfo(std::string_view s);

}  // namespace perfgate::store::pg
