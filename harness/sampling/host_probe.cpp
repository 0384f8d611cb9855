#include "harness/sampling/host_probe.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <numeric>
#include <thread>

namespace perfgate::sampling {

HostProbe::HostProbe(std::size_t memory_bytes, int fp_iterations, int chase_steps)
    : m_next(std::max<std::size_t>(2, memory_bytes / sizeof(std::uint32_t))),
      m_fp_iterations(fp_iterations),
      m_chase_steps(chase_steps) {
  // Sattolo's shuffle makes one cycle through every slot, so the chase never
  // settles into a short loop that stays in cache. A fixed 64-bit LCG
  // (Knuth's MMIX constants) makes it the same cycle on every machine.
  std::iota(m_next.begin(), m_next.end(), 0u);
  std::uint64_t state = 0x2545F4914F6CDD1Dull;
  for (std::size_t i = m_next.size() - 1; i > 0; --i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    std::size_t j = static_cast<std::size_t>((state >> 33) % i);
    std::swap(m_next[i], m_next[j]);
  }
}

double HostProbe::run_ms() {
  const auto t0 = std::chrono::steady_clock::now();
  // Each step depends on the one before: the time is latency, which is what a
  // busy neighbour on the core (or a slower clock) stretches.
  double x = 1.0;
  for (int i = 0; i < m_fp_iterations; ++i) x = x * 0.999999 + 1e-6;
  std::uint32_t p = m_position;
  for (int i = 0; i < m_chase_steps; ++i) p = m_next[p];
  m_position = p;
  const auto t1 = std::chrono::steady_clock::now();
  // Keep the results observable so the work is not optimised away.
  volatile double sink_x = x;
  volatile std::uint32_t sink_p = p;
  (void)sink_x;
  (void)sink_p;
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

WakeupLateness::WakeupLateness(std::chrono::nanoseconds period, std::int64_t start_ns)
    : m_period_ns(period.count()), m_due_ns(start_ns + period.count()) {}

std::int64_t WakeupLateness::due_ns() const {
  std::lock_guard lock(m_mu);
  return m_due_ns;
}

void WakeupLateness::woke_at(std::int64_t now_ns) {
  std::lock_guard lock(m_mu);
  const std::int64_t late_ns = std::max<std::int64_t>(0, now_ns - m_due_ns);
  std::erase_if(m_readers, [&](const std::weak_ptr<std::atomic<std::int64_t>>& r) {
    auto worst = r.lock();
    if (!worst) return true;  // its canary is gone
    std::int64_t seen = worst->load(std::memory_order_relaxed);
    while (late_ns > seen && !worst->compare_exchange_weak(seen, late_ns, std::memory_order_relaxed)) {
    }
    return false;
  });
  m_due_ns = late_ns > m_period_ns ? now_ns + m_period_ns : m_due_ns + m_period_ns;
}

std::shared_ptr<std::atomic<std::int64_t>> WakeupLateness::add_reader() {
  auto worst = std::make_shared<std::atomic<std::int64_t>>(0);
  std::lock_guard lock(m_mu);
  m_readers.push_back(worst);
  return worst;
}

namespace {

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The process's one waking thread, started with its first canary.
class Ticker {
 public:
  static Ticker& instance() {
    static Ticker ticker;
    return ticker;
  }
  std::shared_ptr<std::atomic<std::int64_t>> add() {
    auto worst = m_lateness.add_reader();
    std::lock_guard lock(m_mu);
    if (!m_thread.joinable()) m_thread = std::jthread([this](std::stop_token stop) { run(stop); });
    return worst;
  }

 private:
  void run(std::stop_token stop) {
    while (!stop.stop_requested()) {
      std::this_thread::sleep_until(
          std::chrono::steady_clock::time_point(std::chrono::nanoseconds(m_lateness.due_ns())));
      m_lateness.woke_at(steady_ns());
    }
  }

  WakeupLateness m_lateness{WakeupCanary::k_period, steady_ns()};
  std::mutex m_mu;
  std::jthread m_thread;  // last: stopped and joined (at exit) before the rest goes
};

}  // namespace

WakeupCanary::WakeupCanary() : m_worst_ns(Ticker::instance().add()) {}

WakeupCanary::WakeupCanary(WakeupLateness& source) : m_worst_ns(source.add_reader()) {}

// The waking thread drops a canary's slot at its next wake-up, once the slot is gone.
WakeupCanary::~WakeupCanary() = default;

double WakeupCanary::take_worst_late_ms() {
  return static_cast<double>(m_worst_ns->exchange(0, std::memory_order_relaxed)) * 1e-6;
}

}  // namespace perfgate::sampling
