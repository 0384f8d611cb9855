#pragma once
// A rank's data pipeline: worker threads each read (a storage latency, by
// nature a wait) and decode (real CPU work) samples into batches and put them
// on a bounded queue of num_workers x prefetch batches. With num_workers = 0
// the rank loads each batch itself, in line with its step, as PyTorch does.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "harness/sim/config.hpp"

namespace perfgate::sim {

struct Batch {
  std::vector<float> x;  // batch x width inputs
  std::vector<float> y;  // batch x width targets
};

class DataLoader {
 public:
  DataLoader(const Config& cfg, int rank);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // The next batch; blocks while none is ready.
  Batch next();

 private:
  Batch make_batch(std::uint64_t index);
  void worker(int id);

  const Config& m_cfg;
  int m_rank;
  std::mutex m_mu;
  std::condition_variable m_cv;
  std::deque<std::pair<std::uint64_t, Batch>> m_ready;  // by batch index, delivered in order
  std::uint64_t m_next_to_make = 0;
  std::uint64_t m_next_to_deliver = 0;
  std::size_t m_capacity;
  bool m_stop = false;
  std::vector<std::thread> m_workers;
};

}  // namespace perfgate::sim
