#include "harness/sampling/host_probe.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

using perfgate::sampling::WakeupCanary;

namespace {

// Stops this whole process (every thread) for `pause_ms` from a child, as a
// hypervisor that deschedules the VM would: nothing here runs meanwhile.
void pause_this_process_ms(int pause_ms) {
  const pid_t me = ::getpid();
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::kill(me, SIGSTOP);
    ::usleep(static_cast<useconds_t>(pause_ms) * 1000);
    ::kill(me, SIGCONT);
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0) {
  }
}

}  // namespace

TEST_CASE("wake-up canary: a pause of the whole process is its lateness, and each read starts afresh", "[sampling]") {
  WakeupCanary canary, other;  // side-by-side trials: one waking thread, two readers
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const double before_ms = canary.take_worst_late_ms();
  pause_this_process_ms(300);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));  // the canary's first wake-up after it
  const double paused_ms = canary.take_worst_late_ms();
  // The child sleeps 300 ms between stopping and continuing us; the canary's
  // wake-up fell due inside that, at most one period after it began.
  CHECK(paused_ms >= 300 - 2.0 * WakeupCanary::k_period.count());
  CHECK(paused_ms < 5000);
  // Side by side with the quiet interval before it (whatever the machine's
  // load made that): the pause is what stands out.
  CHECK(paused_ms > before_ms + 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(canary.take_worst_late_ms() < paused_ms - 200);  // read, then reset
  // The other reader's worst was not taken by the first one's reads.
  CHECK(other.take_worst_late_ms() >= paused_ms - 1);
  // A canary made after the pause has seen none of it.
  WakeupCanary later;
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(later.take_worst_late_ms() < paused_ms - 200);
}
