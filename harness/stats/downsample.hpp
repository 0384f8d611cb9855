#pragma once
// Downsampling a series for drawing: a soak's step times run to millions of
// points, a chart needs a couple of thousand. Largest-Triangle-Three-Buckets
// (Steinarsson, 2013) keeps the visual shape; a streaming pre-reduction keeps
// each bucket's first, last, lowest and highest point, so spikes (stalls)
// survive and memory stays bounded whatever the length.

#include <cstddef>
#include <span>
#include <vector>

namespace perfgate::stats {

struct Point {
  double t = 0;
  double v = 0;
};

// Chooses `n_out` of the points (first and last always kept), in order.
// Fewer points than n_out (or n_out < 3) are returned as they are.
std::vector<Point> lttb(std::span<const Point> points, std::size_t n_out);

// Takes points one at a time in time order and keeps at most about
// 4 * max_buckets of them: per bucket of consecutive points its first, last,
// minimum and maximum. When the buckets fill up, neighbours merge and each
// bucket covers twice as many points, so a series of any length is reduced
// in one pass with bounded memory. Non-finite values are skipped.
class StreamingReducer {
 public:
  explicit StreamingReducer(std::size_t max_buckets = 4096);
  void add(double t, double v);
  long long count() const { return m_count; }
  // The kept points, in time order (a point that is several of first/min/max/last appears once).
  std::vector<Point> points() const;

 private:
  struct Bucket {
    Point first, last, min, max;
    long long n = 0;
  };
  void merge_pairs();
  std::size_t m_max_buckets;
  long long m_per_bucket = 1;  // points per full bucket
  long long m_count = 0;
  std::vector<Bucket> m_buckets;
};

// Both: reduce in one pass, then LTTB to n_out.
std::vector<Point> downsample(std::span<const Point> points, std::size_t n_out);

}  // namespace perfgate::stats
