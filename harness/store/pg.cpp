#include "harness/store/pg.hpp"

#include <bit>
#include <cstdlib>

#include <fmt/format.h>
#include <re2/re2.h>

#include "harness/util/strings.hpp"

namespace perfgate::store::pg {

std::string double_text(double v) {
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  // 17 significant digits: the double comes back bit for bit.
  return fmt::format("{:.17g}", v);
}

Params& Params::add(double v) {
  if (std::isnan(v)) return null();
  return add(double_text(v));
}

std::vector<const char*> Params::pointers() const {
  std::vector<const char*> out;
  out.reserve(m_values.size());
  for (const auto& v : m_values) out.push_back(v ? v->c_str() : nullptr);
  return out;
}

bool Result::ok() const {
  auto s = status();
  return s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK;
}

std::string Result::error() const {
  if (!m_r) return "no result (out of memory or connection lost)";
  return std::string(util::trim(PQresultErrorMessage(m_r.get())));
}

std::string Result::sqlstate() const {
  if (!m_r) return "";
  const char* s = PQresultErrorField(m_r.get(), PG_DIAG_SQLSTATE);
  return s ? s : "";
}

std::string Result::text(int row, int col) const {
  const char* v = PQgetvalue(m_r.get(), row, col);
  return std::string(v, static_cast<std::size_t>(PQgetlength(m_r.get(), row, col)));
}

long long Result::i64(int row, int col) const {
  if (is_null(row, col)) return 0;
  return std::strtoll(PQgetvalue(m_r.get(), row, col), nullptr, 10);
}

double Result::f64(int row, int col) const {
  if (is_null(row, col)) return std::nan("");
  return std::strtod(PQgetvalue(m_r.get(), row, col), nullptr);
}

BinaryCopy::BinaryCopy() {
  static constexpr char k_signature[] = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', '\377', '\r', '\n', '\0'};
  m_buf.append(k_signature, sizeof k_signature);
  put_be(0, 4);  // flags
  put_be(0, 4);  // header extension length
}

void BinaryCopy::put_be(unsigned long long v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) m_buf.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void BinaryCopy::row(int fields) { put_be(static_cast<unsigned long long>(fields), 2); }

void BinaryCopy::i64(long long v) {
  put_be(8, 4);
  put_be(static_cast<unsigned long long>(v), 8);
}

void BinaryCopy::f64(double v) {
  put_be(8, 4);
  put_be(std::bit_cast<unsigned long long>(v), 8);
}

void BinaryCopy::null() { put_be(0xffffffffull, 4); }  // length -1

const std::string& BinaryCopy::finish() {
  put_be(0xffffull, 2);  // a field count of -1 ends the data
  return m_buf;
}

Result exec(PGconn* c, const std::string& sql) { return Result(PQexec(c, sql.c_str())); }

Result exec(PGconn* c, const std::string& sql, const Params& p) {
  auto ptrs = p.pointers();
  return Result(PQexecParams(c, sql.c_str(), p.size(), nullptr, ptrs.data(), nullptr, nullptr, 0));
}

// RE2, not std::regex: a connection string comes from the command line or
// $PERFGATE_DB at any length, and std::regex recursed per character (a
// 30,000-character --db overflowed the stack before any error was printed).
namespace {

// Byte by byte, as libpq reads a connection string: RE2's default UTF-8 mode
// would not match a password's stray Latin-1 byte with [^...] or \S, and
// would show the rest of it.
RE2::Options bytes() {
  RE2::Options o;
  o.set_encoding(RE2::Options::EncodingLatin1);
  return o;
}

}  // namespace

std::string redact_conninfo(std::string_view conninfo) {
  std::string s(conninfo);
  // URL userinfo: scheme://user:secret@host (any scheme: a mistyped one too)
  static const RE2 url_pw(R"(^([A-Za-z][A-Za-z0-9+.-]*://[^:@/?#]*):[^@/?#]*@)", bytes());
  RE2::Replace(&s, url_pw, R"(\1:***@)");
  // A query parameter: ?password=secret or &password=secret
  static const RE2 query_pw(R"((?i)([?&]password=)[^&#]*)", bytes());
  RE2::GlobalReplace(&s, query_pw, R"(\1***)");
  // key=value form: password=secret or password='se cret'. [[:space:]] as
  // libpq's isspace (RE2's \s leaves out the vertical tab).
  static const RE2 kv_pw(R"((?i)(^|[[:space:]])(password[[:space:]]*=[[:space:]]*)('(?:[^'\\]|\\.)*'|[^[:space:]]*))",
                         bytes());
  RE2::GlobalReplace(&s, kv_pw, R"(\1\2***)");
  return s;
}

bool looks_like_conninfo(std::string_view s) {
  if (s.starts_with("postgresql://") || s.starts_with("postgres://")) return true;
  static const RE2 kv(R"((^|[[:space:]])(host|hostaddr|port|dbname|user|service|sslmode)[[:space:]]*=)", bytes());
  return RE2::PartialMatch(s, kv);
}

}  // namespace perfgate::store::pg
