#include "harness/sampling/host_probe.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

using perfgate::sampling::WakeupCanary;
using perfgate::sampling::WakeupLateness;

namespace {

constexpr std::int64_t k_ms = 1'000'000;  // nanoseconds

// Drives `lateness` as its waking thread would, on a clock of the test's own:
// every wake-up on time (`late_ns` late) until `until_ns`.
void wake_on_time_until(WakeupLateness& lateness, std::int64_t until_ns, std::int64_t late_ns = 0) {
  while (lateness.due_ns() + late_ns <= until_ns) lateness.woke_at(lateness.due_ns() + late_ns);
}

}  // namespace

// The canary's bookkeeping on an injected clock: what a real pause does to it
// is the soak's paused-machine integration test (test_soak.py), which stops
// perfgate and its workload together. A real pause in a unit test measured
// the machine's load as well (266 ms for a 300 ms pause beside eight busy loops).
TEST_CASE("wake-up canary: a pause of the whole process is its lateness, and each read starts afresh", "[sampling]") {
  const std::int64_t period = WakeupCanary::k_period.count() * k_ms;
  WakeupLateness lateness(WakeupCanary::k_period, 1000 * k_ms);
  WakeupCanary canary(lateness), other(lateness);  // side-by-side trials: one waking thread, two readers
  // A loaded machine: every wake-up 1.5 ms late.
  wake_on_time_until(lateness, 1050 * k_ms, 1'500'000);
  const double before_ms = canary.take_worst_late_ms();
  CHECK(before_ms == Approx(1.5));
  // The process stops for 300 ms just after a wake-up: the next one, due a
  // period later, happens when it runs again.
  const std::int64_t paused_at = lateness.due_ns() - period + 1 * k_ms;
  lateness.woke_at(paused_at + 300 * k_ms);
  const double paused_ms = canary.take_worst_late_ms();
  CHECK(paused_ms == Approx(300 - 4).margin(1e-9));  // due 4 ms into the pause
  CHECK(paused_ms > before_ms + 200);
  // After the pause the next wake-up is a period from when it woke, not the
  // sixty missed ones at once (which would report one pause as many).
  CHECK(lateness.due_ns() == paused_at + 300 * k_ms + period);
  wake_on_time_until(lateness, lateness.due_ns() + 30 * k_ms);
  CHECK(canary.take_worst_late_ms() == 0);  // read, then reset
  // The other reader's worst was not taken by the first one's reads.
  CHECK(other.take_worst_late_ms() == Approx(paused_ms));
  // A canary made after the pause has seen none of it.
  WakeupCanary later(lateness);
  wake_on_time_until(lateness, lateness.due_ns() + 30 * k_ms, 200'000);
  CHECK(later.take_worst_late_ms() == Approx(0.2));
  // Waking early (a spurious wake-up) is no lateness.
  lateness.woke_at(lateness.due_ns() - 2 * k_ms);
  CHECK(later.take_worst_late_ms() == 0);
}

TEST_CASE("wake-up canary: a gone canary is dropped, the others still read", "[sampling]") {
  WakeupLateness lateness(WakeupCanary::k_period, 0);
  WakeupCanary kept(lateness);
  { WakeupCanary gone(lateness); }
  lateness.woke_at(lateness.due_ns() + 7 * k_ms);
  CHECK(kept.take_worst_late_ms() == Approx(7));
}

TEST_CASE("wake-up canary: the process's own waking thread reports to every canary", "[sampling]") {
  // The real thread, without asserting how late: no wake-up is exactly on
  // time (timer slack alone is 50 us), so both readers have seen some, and a
  // read resets only the reader's own.
  WakeupCanary a, b;
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(a.take_worst_late_ms() > 0);
  CHECK(b.take_worst_late_ms() > 0);
}
