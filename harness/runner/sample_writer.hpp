#pragma once
// Writes step samples to the store on a thread of its own, so parsing the
// next lines overlaps with SQLite inserting the last batch (the two halves of
// ingestion cost about the same). At most k_max_pending batches wait; a
// producer that outruns the database blocks instead of growing memory.

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "harness/store/store.hpp"

namespace perfgate::runner {

class SampleWriter {
 public:
  static constexpr std::size_t k_max_pending = 2;

  SampleWriter(store::Store& store, long long trial_id);
  ~SampleWriter();
  SampleWriter(const SampleWriter&) = delete;
  SampleWriter& operator=(const SampleWriter&) = delete;

  // Queues a batch (takes it, leaves `rows` empty). Blocks while the queue is full.
  void submit(std::vector<store::SampleRow>& rows);
  // Waits until everything queued is written; returns the first store error.
  Status drain();

 private:
  void loop();
  store::Store& m_store;
  long long m_trial_id;
  std::mutex m_mu;
  std::condition_variable m_cv;
  std::deque<std::vector<store::SampleRow>> m_queue;
  bool m_busy = false;
  bool m_stop = false;
  Status m_status = Ok{};
  std::thread m_thread;
};

}  // namespace perfgate::runner
