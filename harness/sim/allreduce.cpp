#include "harness/sim/allreduce.hpp"

#include <algorithm>
#include <chrono>

namespace perfgate::sim {

AllReduce::AllReduce(const Config& cfg, std::vector<std::vector<std::vector<float>>>& grads)
    : m_cfg(cfg), m_grads(grads), m_ready(static_cast<std::size_t>(cfg.layers), 0) {
  // Each layer holds k_tensors_per_layer parameter tensors (weights, biases,
  // norms...); like DDP, a bucket closes once it holds bucket_mb or more, and
  // a tensor is never split. The real gradient is reduced with the bucket
  // that takes the layer's last tensor.
  const double tensor_bytes = cfg.grad_mb * 1024 * 1024 / cfg.layers / k_tensors_per_layer;
  const double cap = std::max(1.0, cfg.bucket_mb * 1024 * 1024);
  std::vector<int> open;
  double open_bytes = 0;
  for (int l = cfg.layers - 1; l >= 0; --l) {
    for (int t = 0; t < k_tensors_per_layer; ++t) {
      open_bytes += tensor_bytes;
      if (t + 1 == k_tensors_per_layer) open.push_back(l);
      if (open_bytes >= cap) {
        m_buckets.push_back(open);
        m_bucket_bytes.push_back(open_bytes);
        m_bucket_layer.push_back(l);  // this layer's backward fills the bucket
        open.clear();
        open_bytes = 0;
      }
    }
  }
  if (open_bytes > 0) {
    m_buckets.push_back(open);
    m_bucket_bytes.push_back(open_bytes);
    m_bucket_layer.push_back(0);
  }
  m_thread = std::thread([this] { loop(); });
}

AllReduce::~AllReduce() {
  {
    std::lock_guard lock(m_mu);
    m_stop = true;
  }
  m_cv.notify_all();
  m_thread.join();
}

void AllReduce::grad_ready(int layer) {
  {
    std::lock_guard lock(m_mu);
    // Layer 0 is the last one backward finishes.
    if (++m_ready[static_cast<std::size_t>(layer)] == m_cfg.ranks && layer == 0)
      m_backward_done = std::chrono::steady_clock::now();
  }
  m_cv.notify_all();
}

void AllReduce::wait_done(long long step) {
  std::unique_lock lock(m_mu);
  m_cv.wait(lock, [&] { return m_completed > step; });
}

std::chrono::steady_clock::time_point AllReduce::backward_done_at() const {
  // Safe to read after wait_done(step): the next step's value needs this
  // rank's own grad_ready(0) again.
  std::lock_guard lock(m_mu);
  return m_backward_done;
}

double AllReduce::last_wire_s() const {
  std::lock_guard lock(m_mu);
  return m_last_wire_s;
}

void AllReduce::loop() {
  const int ranks = m_cfg.ranks;
  std::unique_lock lock(m_mu);
  while (true) {
    double wire_s = 0;
    for (std::size_t b = 0; b < m_buckets.size(); ++b) {
      const auto& layers = m_buckets[b];
      const int needs = m_bucket_layer[b];  // the layer whose backward fills this bucket
      m_cv.wait(lock, [&] { return m_stop || m_ready[static_cast<std::size_t>(needs)] == ranks; });
      if (m_stop) return;
      lock.unlock();
      auto t0 = std::chrono::steady_clock::now();
      // Real reduction: average each layer's gradient over the ranks, in place on every rank.
      for (int l : layers) {
        auto& g0 = m_grads[0][static_cast<std::size_t>(l)];
        for (int r = 1; r < ranks; ++r) {
          const auto& gr = m_grads[static_cast<std::size_t>(r)][static_cast<std::size_t>(l)];
          for (std::size_t i = 0; i < g0.size(); ++i) g0[i] += gr[i];
        }
        const float inv = 1.0f / static_cast<float>(ranks);
        for (auto& v : g0) v *= inv;
        for (int r = 1; r < ranks; ++r) m_grads[static_cast<std::size_t>(r)][static_cast<std::size_t>(l)] = g0;
      }
      // The wire: latency by nature, so a wait, not work.
      if (ranks > 1) {
        double seconds =
            m_cfg.link_latency_us * 1e-6 + 2.0 * (ranks - 1) / ranks * m_bucket_bytes[b] / (m_cfg.link_gbps * 1e9);
        std::this_thread::sleep_until(t0 + std::chrono::duration<double>(seconds));
      }
      wire_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      lock.lock();
    }
    std::fill(m_ready.begin(), m_ready.end(), 0);
    m_last_wire_s = wire_s;
    ++m_completed;
    m_cv.notify_all();
  }
}

}  // namespace perfgate::sim
