#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "harness/util/error.hpp"

namespace perfgate::util {

// "90" (seconds), "500ms", "30s", "20m", "2h", "1h30m", "1d" -> seconds.
Expected<double> parse_duration_s(std::string_view text);
// "4096", "64KB", "16MiB", "1GB" -> bytes (KB/MB/GB are powers of 1024, as people mean them for logs).
Expected<std::uint64_t> parse_bytes(std::string_view text);

// How many of a run's trials may fail: "3" (a count) or "10%" (of the trials).
struct FailureLimit {
  bool percent = false;
  double value = 0;  // a count, or a percentage 0..100
  // Whether `failed` of `total` trials is past the limit.
  bool exceeded(int failed, int total) const {
    return percent ? total > 0 && 100.0 * failed > value * total : failed > value;
  }
};
Expected<FailureLimit> parse_failure_limit(std::string_view text);

std::string format_duration(double seconds);
// "26:03:07": hours, minutes, seconds, for elapsed times and ETAs of long runs.
std::string format_hms(double seconds);  // "850 ms", "12.3 s", "4m05s", "2h10m"
std::string format_bytes(std::uint64_t bytes);

}  // namespace perfgate::util
