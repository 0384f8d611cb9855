#include "harness/util/units.hpp"

#include <cctype>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace perfgate::util {
namespace {

// Reads a leading non-negative decimal number; returns characters consumed or 0.
std::size_t read_number(std::string_view s, double& out) {
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  if (i == 0) return 0;
  auto r = std::from_chars(s.data(), s.data() + i, out);
  return r.ec == std::errc{} && r.ptr == s.data() + i ? i : 0;
}

}  // namespace

Expected<double> parse_duration_s(std::string_view text) {
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  auto bad = [&] {
    return Error::input(fmt::format("'{}' is not a duration (write e.g. 90, 500ms, 30s, 20m, 1h30m)", text));
  };
  if (s.empty()) return bad();
  double total = 0;
  bool any = false;
  while (!s.empty()) {
    double v = 0;
    std::size_t n = read_number(s, v);
    if (n == 0) return bad();
    s.remove_prefix(n);
    std::size_t u = 0;
    while (u < s.size() && std::isalpha(static_cast<unsigned char>(s[u]))) ++u;
    std::string_view unit = s.substr(0, u);
    s.remove_prefix(u);
    double mult = 0;
    if (unit.empty()) {
      if (any || !s.empty()) return bad();  // a bare number only on its own
      mult = 1;
    } else if (unit == "ms")
      mult = 1e-3;
    else if (unit == "s")
      mult = 1;
    else if (unit == "m" || unit == "min")
      mult = 60;
    else if (unit == "h")
      mult = 3600;
    else if (unit == "d")
      mult = 86400;
    else
      return bad();
    total += v * mult;
    any = true;
  }
  return total;
}

Expected<std::uint64_t> parse_bytes(std::string_view text) {
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  double v = 0;
  std::size_t n = read_number(s, v);
  auto bad = [&] { return Error::input(fmt::format("'{}' is not a size (write e.g. 4096, 64KB, 16MB, 1GB)", text)); };
  if (n == 0) return bad();
  std::string unit;
  for (char c : s.substr(n))
    if (!std::isspace(static_cast<unsigned char>(c)))
      unit += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double mult = 0;
  if (unit.empty() || unit == "B")
    mult = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB")
    mult = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB")
    mult = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB")
    mult = 1024.0 * 1024 * 1024;
  else
    return bad();
  return static_cast<std::uint64_t>(std::llround(v * mult));
}

Expected<FailureLimit> parse_failure_limit(std::string_view text) {
  FailureLimit l;
  std::string t(text);
  auto bad = [&] {
    return Error::input(
        fmt::format("--max-failures '{}': expected a count of trials (3) or a percentage of them (10%)", t));
  };
  if (t.empty()) return bad();
  std::string_view digits = text;
  if (digits.back() == '%') {
    l.percent = true;
    digits.remove_suffix(1);
  }
  if (digits.empty()) return bad();
  double v = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc{} || ptr != digits.data() + digits.size() || !(v >= 0)) return bad();
  if (l.percent && v > 100)
    return Error::input(fmt::format("--max-failures '{}': a percentage must be between 0% and 100%", t));
  if (!l.percent && v != std::floor(v)) return bad();
  l.value = v;
  return l;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds)) return "?";
  if (seconds < 1) return fmt::format("{:.0f} ms", seconds * 1e3);
  if (seconds < 60) return fmt::format("{:.1f} s", seconds);
  auto total = static_cast<long long>(std::llround(seconds));
  if (total < 3600) return fmt::format("{}m{:02}s", total / 60, total % 60);
  return fmt::format("{}h{:02}m", total / 3600, (total % 3600) / 60);
}

std::string format_hms(double seconds) {
  long long t = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  return fmt::format("{}:{:02}:{:02}", t / 3600, (t / 60) % 60, t % 60);
}

std::string format_bytes(std::uint64_t bytes) {
  constexpr double k = 1024.0;
  auto b = static_cast<double>(bytes);
  if (b < k) return fmt::format("{} B", bytes);
  if (b < k * k) return fmt::format("{:.1f} KiB", b / k);
  if (b < k * k * k) return fmt::format("{:.1f} MiB", b / (k * k));
  return fmt::format("{:.2f} GiB", b / (k * k * k));
}

}  // namespace perfgate::util
