#pragma once
// Gradient all-reduce between the rank threads, in buckets, overlapped with
// backward the way DDP does it: as backward finishes a layer on every rank,
// its gradient joins the open bucket; a full bucket is reduced at once on the
// communication thread while backward goes on. Reduction of the real
// gradients is real work; the wire is modelled per bucket as
// link_latency + 2 (R-1)/R x bucket_bytes / link_bandwidth (a ring
// all-reduce), over the nominal gradient size grad_mb split across layers.
// Small buckets pay the latency many times; one huge bucket cannot start
// until backward ends. The best size lies between.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "harness/sim/config.hpp"

namespace perfgate::sim {

class AllReduce {
 public:
  // grads[rank][layer]: the gradient each rank produces for each layer.
  AllReduce(const Config& cfg, std::vector<std::vector<std::vector<float>>>& grads);
  ~AllReduce();
  AllReduce(const AllReduce&) = delete;
  AllReduce& operator=(const AllReduce&) = delete;

  // A rank finished backward of `layer` in the current step.
  void grad_ready(int layer);
  // Blocks until every bucket of `step` is reduced.
  void wait_done(long long step);
  int bucket_count() const { return static_cast<int>(m_buckets.size()); }
  // Seconds the wire was busy in the last finished step.
  double last_wire_s() const;
  // When the last rank finished backward in the step that wait_done last
  // returned for. The exposed all-reduce is counted from there: the time a
  // rank waits for a slower peer is straggling, not communication, and on a
  // loaded host it is a scheduler time slice that would drown the bucket
  // effect.
  std::chrono::steady_clock::time_point backward_done_at() const;

 private:
  void loop();
  const Config& m_cfg;
  std::vector<std::vector<std::vector<float>>>& m_grads;
  std::vector<std::vector<int>> m_buckets;  // layers, in backward order
  std::vector<double> m_bucket_bytes;
  std::vector<int> m_bucket_layer;  // the layer whose backward completes each bucket
  static constexpr int k_tensors_per_layer = 16;
  mutable std::mutex m_mu;
  std::condition_variable m_cv;
  std::vector<int> m_ready;   // ranks done with each layer, current step
  long long m_completed = 0;  // steps fully reduced
  double m_last_wire_s = 0;
  std::chrono::steady_clock::time_point m_backward_done{};  // all ranks past layer 0, current step
  bool m_stop = false;
  std::thread m_thread;
};

}  // namespace perfgate::sim
