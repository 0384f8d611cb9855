#pragma once
// The host probe: a fixed piece of CPU and memory work, timed. The same work
// on the same machine takes the same time unless something else competes for
// the core, its caches or its memory (another tenant, a CPU hog, a lowered
// clock), so a slower probe beside a slower trial says the machine moved, not
// the code. A few milliseconds: cheap enough to run every second of a soak.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace perfgate::sampling {

class HostProbe {
 public:
  // The work: a dependent floating-point chain (latency of the core) and a
  // pointer chase through a fixed random cycle of `memory_bytes` (latency of
  // caches and memory). The cycle is built once, from a fixed seed.
  explicit HostProbe(std::size_t memory_bytes = 4 << 20, int fp_iterations = 400'000, int chase_steps = 40'000);
  // Runs the work once; wall milliseconds.
  double run_ms();

 private:
  std::vector<std::uint32_t> m_next;  // a single cycle over all slots (Sattolo's algorithm)
  int m_fp_iterations;
  int m_chase_steps;
  std::uint32_t m_position = 0;
};

// The bookkeeping of a thread that asks to wake every `period`: when its
// next wake-up is due, and for each reader the worst lateness since the
// reader last asked. Times are nanoseconds of a monotonic clock; the waking
// thread (WakeupCanary's) passes the steady clock's, tests their own.
class WakeupLateness {
 public:
  WakeupLateness(std::chrono::nanoseconds period, std::int64_t start_ns);
  std::int64_t due_ns() const;
  // The thread woke at `now_ns` for the wake-up that was due: every reader's
  // worst takes its lateness. The next wake-up is one period after the one
  // due, or, after a pause longer than a period, one period from now:
  // catching up with the missed ones would report one pause as several.
  void woke_at(std::int64_t now_ns);
  // A new reader, whose worst starts at zero; dropped once the caller lets go.
  std::shared_ptr<std::atomic<std::int64_t>> add_reader();

 private:
  mutable std::mutex m_mu;
  std::int64_t m_period_ns;
  std::int64_t m_due_ns;
  std::vector<std::weak_ptr<std::atomic<std::int64_t>>> m_readers;
};

// How late a thread that asks to wake every 5 ms woke (as cyclictest
// measures). A machine that stops running its tasks for a while (the
// hypervisor descheduling this VM, a firmware interrupt, a kernel stall)
// makes it late by about the pause. Sampled series cannot see such a pause
// when it falls between two samples; this sees every one longer than the
// period. One thread serves the whole process (it started with the first
// canary: 200 wake-ups a second, ~0.5 % of a core); each canary keeps its
// own worst since its last read, so side-by-side trials do not share one.
class WakeupCanary {
 public:
  static constexpr std::chrono::milliseconds k_period{5};

  WakeupCanary();  // read from the process's waking thread
  // Read from `source`, which the caller drives (tests: on their own clock).
  explicit WakeupCanary(WakeupLateness& source);
  ~WakeupCanary();
  WakeupCanary(const WakeupCanary&) = delete;
  WakeupCanary& operator=(const WakeupCanary&) = delete;
  // The longest lateness since the previous call (or since this canary was
  // made), in milliseconds; starts the next interval at zero.
  double take_worst_late_ms();

 private:
  std::shared_ptr<std::atomic<std::int64_t>> m_worst_ns;
};

}  // namespace perfgate::sampling
