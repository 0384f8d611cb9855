#pragma once
#include <chrono>
#include <string>

namespace perfgate::util {

// Monotonic clock seam: code that measures durations takes a Clock so tests can inject one.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual double now_s() const = 0;  // monotonic seconds, arbitrary origin
};

class SteadyClock final : public Clock {
 public:
  double now_s() const override {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }
};

// Wall-clock time as ISO-8601 UTC with milliseconds: "2026-11-29T17:03:12.345Z".
std::string utc_now_iso();
// Seconds since the Unix epoch, for ordering and durations of stored runs.
double unix_now_s();

}  // namespace perfgate::util
