#include "harness/sampling/session.hpp"

#include <chrono>

#include <fmt/format.h>

#include "harness/util/time.hpp"

namespace perfgate::sampling {

namespace {
// A soak at 1 Hz with a few samplers produces a few readings per second; the
// collector drains every tick. This bound only matters if draining stops.
constexpr std::size_t k_max_pending = 100'000;
}  // namespace

SamplingSession::SamplingSession(std::vector<std::unique_ptr<Sampler>> samplers, double interval_s)
    : m_interval_s(interval_s) {
  for (auto& s : samplers) m_samplers.push_back(Slot{std::move(s), {}, 0, 0});
}

SamplingSession::~SamplingSession() { stop(); }

void SamplingSession::before_start() {
  m_t0 = util::SteadyClock{}.now_s();
  m_t0_set = true;
  for (auto& slot : m_samplers)
    if (slot.sampler->brackets_trial()) take(slot, 0);
}

void SamplingSession::start(int root_pid) {
  if (!m_threads.empty()) return;
  if (!m_t0_set) m_t0 = util::SteadyClock{}.now_s();
  m_t0_set = true;
  m_pid = root_pid;
  for (auto& slot : m_samplers) m_threads.emplace_back([this, &slot, root_pid] { loop(slot, root_pid); });
}

void SamplingSession::stop() {
  {
    std::lock_guard lock(m_mu);
    m_stop = true;
  }
  m_cv.notify_all();
  bool started = !m_threads.empty();
  for (auto& t : m_threads)
    if (t.joinable()) t.join();
  m_threads.clear();
  if (started && !m_stopped)
    for (auto& slot : m_samplers)
      if (slot.sampler->brackets_trial()) take(slot, m_pid);
  m_stopped = m_stopped || started;
}

void SamplingSession::take(Slot& slot, int pid) {
  double t = util::SteadyClock{}.now_s() - m_t0;
  auto got = slot.sampler->sample(pid);
  std::lock_guard lock(m_mu);
  if (got) {
    ++slot.samples;
    for (auto& r : *got)
      if (m_pending.size() < k_max_pending) m_pending.push_back({t, std::move(r)});
  } else {
    if (slot.errors++ == 0) slot.first_error = got.error().message;
  }
}

void SamplingSession::loop(Slot& slot, int pid) {
  auto next = std::chrono::steady_clock::now();
  const auto period =
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(m_interval_s));
  for (;;) {
    take(slot, pid);
    // Fixed-rate schedule: a slow sample does not shift every later one.
    next += period;
    auto now = std::chrono::steady_clock::now();
    if (next < now) next = now;
    std::unique_lock lock(m_mu);
    if (m_cv.wait_until(lock, next, [this] { return m_stop; })) return;
  }
}

std::vector<TimedReading> SamplingSession::drain() {
  std::lock_guard lock(m_mu);
  std::vector<TimedReading> out;
  out.swap(m_pending);
  return out;
}

std::vector<std::string> SamplingSession::warnings() const {
  std::lock_guard lock(m_mu);
  std::vector<std::string> out;
  for (const auto& s : m_samplers) {
    if (s.errors > 0)
      out.push_back(
          fmt::format("sampler {}: {}{}", s.sampler->name(), s.first_error,
                      s.errors > 1 ? fmt::format(" ({} of {} samples failed)", s.errors, s.errors + s.samples) : ""));
    if (auto note = s.sampler->note(); !note.empty())
      out.push_back(fmt::format("sampler {}: {}", s.sampler->name(), note));
  }
  return out;
}

}  // namespace perfgate::sampling
