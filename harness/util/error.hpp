#pragma once
// Two error channels (see docs/design.md): expected failures travel as values
// (Error inside Expected<T>) carrying a message that names the file, key, run
// or trial; broken invariants abort through PERFGATE_CHECK.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace perfgate {

// Maps onto the documented exit codes: Input -> 2, Harness -> 3.
enum class ErrorKind { Input, Harness };

struct Error {
  ErrorKind kind = ErrorKind::Input;
  std::string message;

  static Error input(std::string msg) { return {ErrorKind::Input, std::move(msg)}; }
  static Error harness(std::string msg) { return {ErrorKind::Harness, std::move(msg)}; }
};

// Exit codes shared by every subcommand (DESIGN.md "Exit codes").
enum class ExitCode : int {
  Ok = 0,
  Regression = 1,
  InputError = 2,
  HarnessError = 3,
  Inconclusive = 4,
};

inline int exit_code_for(const Error& e) {
  return static_cast<int>(e.kind == ErrorKind::Input ? ExitCode::InputError : ExitCode::HarnessError);
}

// A value or the Error explaining why there is none. Deliberately small:
// std::expected is C++23 and g++ 12 in C++20 mode does not have it.
template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : m_v(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Expected(Error error) : m_v(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool has_value() const { return m_v.index() == 0; }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<0>(m_v); }
  const T& value() const& { return std::get<0>(m_v); }
  T&& value() && { return std::get<0>(std::move(m_v)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const { return std::get<1>(m_v); }
  T value_or(T fallback) const { return has_value() ? value() : fallback; }

 private:
  std::variant<T, Error> m_v;
};

// Expected<void>: success or an Error.
struct Ok {};
using Status = Expected<Ok>;

[[noreturn]] inline void check_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "perfgate: internal error: check '%s' failed at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace perfgate

#define PERFGATE_CHECK(expr) ((expr) ? static_cast<void>(0) : ::perfgate::check_failed(#expr, __FILE__, __LINE__))
