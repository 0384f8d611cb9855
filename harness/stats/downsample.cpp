#include "harness/stats/downsample.hpp"

#include <algorithm>
#include <cmath>

namespace perfgate::stats {

std::vector<Point> lttb(std::span<const Point> pts, std::size_t n_out) {
  const std::size_t n = pts.size();
  if (n_out < 3 || n <= n_out) return {pts.begin(), pts.end()};
  std::vector<Point> out;
  out.reserve(n_out);
  out.push_back(pts.front());
  // The n - 2 inner points fall into n_out - 2 buckets; each bucket gives the
  // point forming the largest triangle with the previous pick and the mean of
  // the next bucket.
  const double width = static_cast<double>(n - 2) / static_cast<double>(n_out - 2);
  std::size_t prev = 0;
  for (std::size_t b = 0; b < n_out - 2; ++b) {
    const auto start = 1 + static_cast<std::size_t>(std::floor(static_cast<double>(b) * width));
    const auto end = std::min(n - 1, 1 + static_cast<std::size_t>(std::floor(static_cast<double>(b + 1) * width)));
    const auto next_start = end;
    const auto next_end = std::min(n, 1 + static_cast<std::size_t>(std::floor(static_cast<double>(b + 2) * width)));
    double avg_t = 0, avg_v = 0;
    const std::size_t next_n = std::max<std::size_t>(1, next_end - next_start);
    if (next_end > next_start) {
      for (std::size_t i = next_start; i < next_end; ++i) {
        avg_t += pts[i].t;
        avg_v += pts[i].v;
      }
      avg_t /= static_cast<double>(next_n);
      avg_v /= static_cast<double>(next_n);
    } else {
      avg_t = pts[n - 1].t;
      avg_v = pts[n - 1].v;
    }
    const Point& a = pts[prev];
    double best_area = -1;
    std::size_t best = start;
    for (std::size_t i = start; i < std::max(end, start + 1) && i < n - 1; ++i) {
      double area = std::fabs((a.t - avg_t) * (pts[i].v - a.v) - (a.t - pts[i].t) * (avg_v - a.v));
      if (area > best_area) {
        best_area = area;
        best = i;
      }
    }
    out.push_back(pts[best]);
    prev = best;
  }
  out.push_back(pts.back());
  return out;
}

StreamingReducer::StreamingReducer(std::size_t max_buckets) : m_max_buckets(std::max<std::size_t>(max_buckets, 2)) {
  m_buckets.reserve(m_max_buckets);
}

void StreamingReducer::add(double t, double v) {
  if (!std::isfinite(v) || !std::isfinite(t)) return;
  ++m_count;
  if (m_buckets.empty() || m_buckets.back().n >= m_per_bucket) {
    if (m_buckets.size() == m_max_buckets) merge_pairs();
    if (m_buckets.empty() || m_buckets.back().n >= m_per_bucket) {
      Point p{t, v};
      m_buckets.push_back({p, p, p, p, 1});
      return;
    }
  }
  auto& b = m_buckets.back();
  b.last = {t, v};
  if (v < b.min.v) b.min = {t, v};
  if (v > b.max.v) b.max = {t, v};
  ++b.n;
}

void StreamingReducer::merge_pairs() {
  std::size_t w = 0;
  for (std::size_t i = 0; i < m_buckets.size(); i += 2, ++w) {
    Bucket b = m_buckets[i];
    if (i + 1 < m_buckets.size()) {
      const Bucket& c = m_buckets[i + 1];
      b.last = c.last;
      if (c.min.v < b.min.v) b.min = c.min;
      if (c.max.v > b.max.v) b.max = c.max;
      b.n += c.n;
    }
    m_buckets[w] = b;
  }
  m_buckets.resize(w);
  m_per_bucket *= 2;
}

std::vector<Point> StreamingReducer::points() const {
  std::vector<Point> out;
  out.reserve(m_buckets.size() * 4);
  for (const auto& b : m_buckets) {
    Point four[4] = {b.first, b.min, b.max, b.last};
    std::sort(std::begin(four), std::end(four), [](const Point& x, const Point& y) { return x.t < y.t; });
    for (const auto& p : four)
      if (out.empty() || p.t != out.back().t || p.v != out.back().v) out.push_back(p);
  }
  return out;
}

std::vector<Point> downsample(std::span<const Point> points, std::size_t n_out) {
  StreamingReducer r(std::max<std::size_t>(n_out, 2));
  for (const auto& p : points) r.add(p.t, p.v);
  auto kept = r.points();
  return lttb(kept, n_out);
}

}  // namespace perfgate::stats
