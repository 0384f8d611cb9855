#include "harness/runner/sample_writer.hpp"

namespace perfgate::runner {

SampleWriter::SampleWriter(store::Store& store, long long trial_id)
    : m_store(store), m_trial_id(trial_id), m_thread([this] { loop(); }) {}

SampleWriter::~SampleWriter() {
  {
    std::lock_guard lock(m_mu);
    m_stop = true;
  }
  m_cv.notify_all();
  m_thread.join();
}

void SampleWriter::submit(std::vector<store::SampleRow>& rows) {
  if (rows.empty()) return;
  std::unique_lock lock(m_mu);
  m_cv.wait(lock, [&] { return m_queue.size() < k_max_pending; });
  m_queue.push_back(std::move(rows));
  rows = {};
  lock.unlock();
  m_cv.notify_all();
}

Status SampleWriter::drain() {
  std::unique_lock lock(m_mu);
  m_cv.wait(lock, [&] { return m_queue.empty() && !m_busy; });
  return m_status;
}

void SampleWriter::loop() {
  std::unique_lock lock(m_mu);
  while (true) {
    m_cv.wait(lock, [&] { return m_stop || !m_queue.empty(); });
    if (m_queue.empty()) return;  // stop requested and nothing left
    auto batch = std::move(m_queue.front());
    m_queue.pop_front();
    m_busy = true;
    bool ok = static_cast<bool>(m_status);
    lock.unlock();
    m_cv.notify_all();  // room in the queue
    Status st = ok ? m_store.append_samples(m_trial_id, batch) : Status(Ok{});
    lock.lock();
    if (!st && m_status) m_status = st;
    m_busy = false;
    m_cv.notify_all();
  }
}

}  // namespace perfgate::runner
