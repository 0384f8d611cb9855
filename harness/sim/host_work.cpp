#include "harness/sim/host_work.hpp"

#include <time.h>

#include <cmath>

namespace perfgate::sim {
namespace {

std::uint64_t chain(std::uint64_t steps, std::uint64_t h) {
  for (std::uint64_t i = 0; i < steps; ++i) {
    h = (h ^ i) * 1099511628211ull;
    // Keeps the compiler from reordering the chain into something shorter:
    // the value passes through a register it must assume was read.
    asm volatile("" : "+r"(h));
  }
  return h;
}

// Where the chains' results go, so that no chain is optimised away.
volatile std::uint64_t g_sink = 1469598103934665603ull;

double clock_s(clockid_t id) {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

void host_work(double thousands) {
  if (!(thousands > 0)) return;
  g_sink = chain(static_cast<std::uint64_t>(std::llround(thousands * 1000)), g_sink);
}

double thread_cpu_s() { return clock_s(CLOCK_THREAD_CPUTIME_ID); }
double process_cpu_s() { return clock_s(CLOCK_PROCESS_CPUTIME_ID); }

void burn_thread_cpu(double seconds) {
  if (!(seconds > 0)) return;
  const double until = thread_cpu_s() + seconds;
  // Chunks of about 15 us: the clock is read a few hundred times per ms of work.
  while (thread_cpu_s() < until) host_work(10);
}

}  // namespace perfgate::sim
