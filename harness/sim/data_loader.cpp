#include "harness/sim/data_loader.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

namespace perfgate::sim {

DataLoader::DataLoader(const Config& cfg, int rank)
    : m_cfg(cfg),
      m_rank(rank),
      m_capacity(static_cast<std::size_t>(std::max(1, cfg.num_workers * std::max(1, cfg.prefetch)))) {
  for (int i = 0; i < cfg.num_workers; ++i) m_workers.emplace_back([this, i] { worker(i); });
}

DataLoader::~DataLoader() {
  {
    std::lock_guard lock(m_mu);
    m_stop = true;
  }
  m_cv.notify_all();
  for (auto& t : m_workers) t.join();
}

Batch DataLoader::make_batch(std::uint64_t index) {
  const int w = m_cfg.width;
  Batch b;
  b.x.resize(static_cast<std::size_t>(m_cfg.batch) * w);
  b.y.resize(b.x.size());
  std::mt19937_64 rng(m_cfg.seed * 1000003 + static_cast<std::uint64_t>(m_rank) * 7919 + index);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int s = 0; s < m_cfg.batch; ++s) {
    // Storage read of one sample: latency the CPU does not spend.
    if (m_cfg.read_us > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(m_cfg.read_us));
    // Decode: real per-sample CPU work (an iterated smoothing of the raw values), then normalise.
    float* x = b.x.data() + static_cast<std::ptrdiff_t>(s) * w;
    for (int j = 0; j < w; ++j) x[j] = normal(rng);
    const int rounds = std::max(1, m_cfg.decode_work * 1000 / std::max(1, 3 * w));
    for (int r = 0; r < rounds; ++r)
      for (int j = 1; j < w; ++j) x[j] = 0.75f * x[j] + 0.25f * x[j - 1] + 1e-3f * static_cast<float>(r & 7);
    float mean = 0, sq = 0;
    for (int j = 0; j < w; ++j) mean += x[j];
    mean /= static_cast<float>(w);
    for (int j = 0; j < w; ++j) sq += (x[j] - mean) * (x[j] - mean);
    float inv = 1.0f / std::sqrt(sq / static_cast<float>(w) + 1e-6f);
    float* y = b.y.data() + static_cast<std::ptrdiff_t>(s) * w;
    for (int j = 0; j < w; ++j) {
      x[j] = (x[j] - mean) * inv;
      y[j] = 0.5f * x[j] - 0.25f * x[(j + 1) % w];  // a learnable target
    }
  }
  return b;
}

void DataLoader::worker(int) {
  while (true) {
    std::uint64_t index;
    {
      std::unique_lock lock(m_mu);
      m_cv.wait(lock, [&] { return m_stop || m_next_to_make < m_next_to_deliver + m_capacity; });
      if (m_stop) return;
      index = m_next_to_make++;
    }
    Batch b = make_batch(index);
    {
      std::lock_guard lock(m_mu);
      m_ready.emplace_back(index, std::move(b));
    }
    m_cv.notify_all();
  }
}

Batch DataLoader::next() {
  if (m_cfg.num_workers == 0) return make_batch(m_next_to_deliver++);
  std::unique_lock lock(m_mu);
  Batch out;
  m_cv.wait(lock, [&] {
    return std::any_of(m_ready.begin(), m_ready.end(), [&](const auto& e) { return e.first == m_next_to_deliver; });
  });
  auto it = std::find_if(m_ready.begin(), m_ready.end(), [&](const auto& e) { return e.first == m_next_to_deliver; });
  out = std::move(it->second);
  m_ready.erase(it);
  ++m_next_to_deliver;
  lock.unlock();
  m_cv.notify_all();
  return out;
}

}  // namespace perfgate::sim
