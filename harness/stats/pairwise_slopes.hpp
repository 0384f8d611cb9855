#pragma once
// Order statistics of the pairwise slopes of a series, for the Theil-Sen
// estimator (stats/trend): selected exactly without materialising all
// n(n-1)/2 of them.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "harness/stats/kendall.hpp"
#include "harness/stats/running.hpp"

namespace perfgate::stats {

// Values at the given 0-based ranks of v (any order, duplicates allowed), as
// a full sort would place them. Reorders v.
std::vector<double> select_ranks(std::vector<double>& v, const std::vector<std::size_t>& wanted);

// The slopes (y_j - y_i) / (x_j - x_i) of the N pairs with x_i < x_j, computed
// with exactly SciPy's floating-point operations (so that order statistics
// match bit for bit), and order statistics of them without materialising
// all N.
//
// Exact selection is randomized slope selection (Matousek 1991; Dillencourt,
// Mount & Netanyahu 1992; deterministic: Cole, Salowe, Steiger & Szemeredi
// 1989), in a simple form: for a
// threshold t, the pairs with slope below t are exactly the inversions of
// r_i = y_i - t x_i over the points in x order, which merge sort counts in
// O(n log n). A sample of pairs places a bracket [t_lo, t_hi) around each
// wanted rank; counting at its ends confirms it; a sample from inside the
// bracket narrows it again, until it holds O(n) pairs. Those are enumerated
// (as the pairs whose order differs between r(t_lo) and r(t_hi), merge sort
// again) and selected directly. Each round shrinks a bracket by a factor of
// about sqrt(sample size) / 7 with 2n-pair samples, so 5,000 and 260,000
// points both take two rounds (about 8 counts and 4 enumerations in all):
// O(n log n) expected time, O(n) memory.
//
// Rounding: r is computed in floating point, so the predicate "pair below t"
// can be wrong for slopes within xi(t) of t (bound derived at prepare_keys),
// and a computed slope is within 3 ulps of the real one. Brackets are padded
// by these bounds and each answer is checked to lie where they prove it is
// the wanted order statistic of the computed slopes.
//
// Ties: sampling cannot split a tie. An exact tie at slope 0 (quantized
// metrics: equal y) is counted exactly with keys y, where no rounding occurs.
// Elsewhere, a bracket that sampling cannot narrow holds slopes that agree to
// within its proven width; when that is below 1e-9 relative (an exact tie at
// a non-zero slope, or a noise-free line whose slopes differ by rounding
// only), a sampled value from it is returned: within 1e-9 of the exact
// order statistic, not necessarily identical in the last bits. Otherwise the
// bracket is enumerated with equal values run-length encoded.
class PairwiseSlopes {
 public:
  // A point's key at a threshold, for the inversion visits of the selection.
  struct Item {
    double key;
    std::size_t point;
  };

  PairwiseSlopes(std::span<const double> x, std::span<const double> y) : m_n(x.size()) {
    std::vector<std::pair<double, double>> p(m_n);
    for (std::size_t i = 0; i < m_n; ++i) p[i] = {x[i], y[i]};
    std::sort(p.begin(), p.end());
    m_pts.resize(m_n);
    for (std::size_t i = 0; i < m_n; ++i) m_pts[i] = {p[i].first, p[i].second};
    // Groups of equal x: their pairs have no slope.
    std::uint64_t x_tied = 0;
    for (std::size_t i = 0; i < m_n;) {
      std::size_t j = i + 1;
      while (j < m_n && m_pts[j].x == m_pts[i].x) ++j;
      m_group_start.push_back(i);
      const std::uint64_t t = j - i;
      x_tied += t * (t - 1) / 2;
      if (t > 1) {
        m_x_tie_exact += static_cast<std::int64_t>(t * (t - 1) * (2 * t + 5));
        m_x_tie_double += static_cast<double>(t) * static_cast<double>(t - 1) * static_cast<double>(2 * t + 5);
      }
      i = j;
    }
    m_group_start.push_back(m_n);
    const std::uint64_t all = m_n < 2 ? 0 : std::uint64_t{m_n} * (m_n - 1) / 2;
    m_pairs = all - x_tied;
  }

  std::uint64_t pairs() const { return m_pairs; }
  // sum t(t-1)(2t+5) over groups of equal x.
  double x_tie_term() const { return m_n < k_exact_cubes ? static_cast<double>(m_x_tie_exact) : m_x_tie_double; }

  // m slopes by stratified sampling of the pair index space (pairs ordered by
  // their lower-x point, then the other): one uniform pair from each of m
  // equal strata. Unbiased like simple random sampling, never worse in
  // variance, and the strata come in order, so the points are read
  // sequentially. m is capped at N.
  std::vector<double> stratified_sample(std::uint64_t m, SplitMix64& gen) const;
  template <class Sink>
  void stratified_visit(std::uint64_t m, SplitMix64& gen, Sink&& sink) const;

  // The values at 0-based ranks (any order) of the N slopes sorted.
  std::vector<double> select(const std::vector<std::uint64_t>& ranks) const;
  // Whether select() ranks every slope exactly: false only past 2^25 pairs
  // without a usable rounding bound (distinct x a subnormal apart), where it
  // reads the ranks off a stratified subsample.
  bool selects_exactly() const;

 private:
  static constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();
  static constexpr double k_inf = std::numeric_limits<double>::infinity();
  // Unit roundoff u = 2^-53: |fl(a op b) - (a op b)| <= u |a op b| for + - * /.
  static constexpr double k_u = std::numeric_limits<double>::epsilon() / 2;
  // Smallest normal double: absorbs underflow in the error bounds below.
  static constexpr double k_tiny = std::numeric_limits<double>::min();

  // A side of a bracket: none (open), a threshold t, or the exact zero bound
  // (lower side: slope > 0; upper side: slope < 0).
  enum class Side { open, value, zero };
  // The pairs "not below the lower side" and "below the upper side";
  // c_lo / c_hi count the pairs below each side.
  struct Bracket {
    Side lo = Side::open, hi = Side::open;
    double t_lo = 0, t_hi = 0;
    std::uint64_t c_lo = 0, c_hi = 0;
    std::uint64_t size() const { return c_hi - c_lo; }
  };
  using Results = std::vector<std::pair<std::uint64_t, double>>;

  // SciPy: deltay / deltax with deltax = x_j - x_i > 0.
  double slope(std::size_t i, std::size_t j) const { return (m_pts[j].y - m_pts[i].y) / (m_pts[j].x - m_pts[i].x); }
  std::vector<double> all_slopes() const;

  void prepare_keys() const;
  // Rounding bound xi(t): a pair reported below t has real slope < t + xi(t),
  // one reported not below, real slope > t - xi(t). See prepare_keys().
  double xi(double t) const {
    return 2 * (4 * k_u * (m_max_abs_yc + std::fabs(t) * m_max_abs_xc) + k_tiny) / m_min_gap;
  }
  // Computed slopes of pairs reported below t are < upper(t); of pairs
  // reported not below t, > lower(t). A computed slope is within 3u relative
  // of the real one (one rounding each in dy, dx and the quotient); 8u is slack.
  double upper(double t) const {
    const double a = t + xi(t);
    return a + 8 * k_u * std::fabs(a) + k_tiny;
  }
  double lower(double t) const {
    const double b = t - xi(t);
    return b - 8 * k_u * std::fabs(b) - k_tiny;
  }
  // Distance from a sampled slope v to a threshold whose proof bounds still clear v.
  double pad(double v) const { return 2 * (xi(v) + 8 * k_u * std::fabs(v) + k_tiny); }
  // Bounds on the computed slopes below the lower side / not below the upper side.
  double below_lo_max(const Bracket& b) const {
    return b.lo == Side::open ? -k_inf : b.lo == Side::zero ? 0.0 : upper(b.t_lo);
  }
  double above_hi_min(const Bracket& b) const {
    return b.hi == Side::open ? k_inf : b.hi == Side::zero ? 0.0 : lower(b.t_hi);
  }

  std::uint64_t count_keys(std::vector<double>& keys) const;
  std::uint64_t count_below(double t) const;
  void zero_counts() const;
  template <class Visit>
  void visit_bracket(const Bracket& b, Visit&& visit) const;
  std::vector<double> sample_bracket(const Bracket& b, SplitMix64& gen) const;
  bool enumerate(const Bracket& b, const std::vector<std::uint64_t>& ranks, bool compress, Results& out) const;
  void refine(const Bracket& b, const std::vector<std::uint64_t>& ranks, const std::vector<double>& sample, int depth,
              SplitMix64& gen, Results& out) const;
  void settle(const Bracket& b, const Bracket& parent, const std::vector<std::uint64_t>& ranks,
              const std::vector<double>& sample, Results& out) const;
  void split_at_zero(const Bracket& b, const std::vector<std::uint64_t>& ranks, const std::vector<double>& sample,
                     int depth, SplitMix64& gen, Results& out) const;
  void select_direct(const std::vector<std::uint64_t>& ranks, Results& out) const;
  // Whether the keys' rounding error has a finite bound (prepare_keys()).
  bool select_bounded() const;

  // Brackets of at most this many pairs are enumerated.
  std::uint64_t enumerate_max() const {
    return std::max<std::uint64_t>(std::uint64_t{1} << 16, 8 * std::uint64_t{m_n});
  }
  // Pairs sampled per round.
  std::uint64_t sample_size() const { return std::max<std::uint64_t>(4096, 2 * std::uint64_t{m_n}); }

  std::size_t m_n;
  // Sorted by (x, y); x and y side by side, so that a sampled pair costs two
  // cache misses rather than four on long series.
  struct Point {
    double x, y;
  };
  std::vector<Point> m_pts;
  std::vector<std::size_t> m_group_start;  // starts of the groups of equal x, then n
  std::uint64_t m_pairs = 0;
  std::int64_t m_x_tie_exact = 0;
  double m_x_tie_double = 0;

  // Scratch and lazily computed state of the selection.
  mutable std::vector<double> m_xc, m_yc;  // centred coordinates for the keys
  mutable double m_max_abs_xc = 0, m_max_abs_yc = 0, m_min_gap = 0;
  mutable std::vector<double> m_keys, m_key_buf;
  mutable std::vector<Item> m_items, m_item_buf;
  mutable bool m_have_zero_counts = false;
  mutable std::uint64_t m_negative = 0, m_positive = 0;  // pairs with slope < 0, > 0
};

}  // namespace perfgate::stats
