#include "harness/stats/trend.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <boost/math/distributions/normal.hpp>

#include "harness/stats/running.hpp"

namespace perfgate::stats {

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();
constexpr double k_inf = std::numeric_limits<double>::infinity();
// Unit roundoff u = 2^-53: |fl(a op b) - (a op b)| <= u |a op b| for + - * /.
constexpr double k_u = std::numeric_limits<double>::epsilon() / 2;
// Smallest normal double: absorbs underflow in the error bounds below.
constexpr double k_tiny = std::numeric_limits<double>::min();

const boost::math::normal_distribution<double> k_std_normal(0.0, 1.0);

double normal_sf(double z) { return boost::math::cdf(boost::math::complement(k_std_normal, z)); }

bool all_finite(std::span<const double> v) {
  return std::all_of(v.begin(), v.end(), [](double a) { return std::isfinite(a); });
}

// SplitMix64 (stats/running.hpp): the same subsample, and the approximate
// slope read from it, on every platform and call; cheap enough for two
// million draws per call.
using stats::SplitMix64;

constexpr std::uint64_t k_seed = 0x7e2d5eed0c0ffeeull;

using Offset = std::ptrdiff_t;

// Values at the given 0-based ranks of v (any order, duplicates allowed), as
// a full sort would place them. Reorders v.
std::vector<double> select_ranks(std::vector<double>& v, const std::vector<std::size_t>& wanted) {
  std::vector<double> out(wanted.size());
  if (wanted.empty()) return out;
  const auto [min_it, max_it] = std::minmax_element(wanted.begin(), wanted.end());
  const std::size_t lo = *min_it, hi = *max_it;
  const auto at = [&](std::size_t i) { return v.begin() + static_cast<Offset>(i); };
  // Two selections fence the band of wanted ranks; the band is sorted. For a
  // narrow band (the median and its interval, a few % of the values) this is
  // about two linear passes instead of one selection per rank.
  std::nth_element(v.begin(), at(lo), v.end());
  if (hi > lo) {
    std::nth_element(at(lo + 1), at(hi), v.end());
    if (hi - lo > v.size() / 8) {
      // A wide band: one more selection per rank, each inside its fences.
      std::vector<std::size_t> inner(wanted);
      std::sort(inner.begin(), inner.end());
      std::size_t first = lo + 1;
      for (std::size_t k : inner) {
        if (k <= lo || k >= hi || k < first) continue;
        std::nth_element(at(first), at(k), at(hi));
        first = k + 1;
      }
    } else {
      std::sort(at(lo + 1), at(hi));
    }
  }
  for (std::size_t i = 0; i < wanted.size(); ++i) out[i] = v[wanted[i]];
  return out;
}

// np.median: the mean of the two middle values is (a + b) / 2, rounded once
// after the sum; stats::median interpolates as a + (b - a) / 2, which can
// differ in the last bit, and theil_sen promises SciPy's numbers.
double numpy_median(std::vector<double>& v) {
  if (v.empty()) return k_nan;
  const std::size_t n = v.size();
  const auto m = select_ranks(v, {(n - 1) / 2, n / 2});
  return (m[0] + m[1]) / 2;
}

// Runs of equal values in sorted data: the tie terms of Var(S) (Kendall 1975).
struct TieTerms {
  double var_term = 0;           // sum t(t-1)(2t+5)
  std::uint64_t tied_pairs = 0;  // sum t(t-1)/2
};

// Exact in int64 below 2^20 values (n^3 < 2^61), as SciPy computes it; beyond,
// double (relative error 1e-16, irrelevant to a p-value).
constexpr std::size_t k_exact_cubes = std::size_t{1} << 20;

TieTerms tie_terms(const std::vector<double>& sorted) {
  TieTerms r;
  std::int64_t exact = 0;
  const bool small = sorted.size() < k_exact_cubes;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i + 1;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    const std::uint64_t t = j - i;
    if (t > 1) {
      r.tied_pairs += t * (t - 1) / 2;
      if (small)
        exact += static_cast<std::int64_t>(t * (t - 1) * (2 * t + 5));
      else
        r.var_term += static_cast<double>(t) * static_cast<double>(t - 1) * static_cast<double>(2 * t + 5);
    }
    i = j;
  }
  if (small) r.var_term = static_cast<double>(exact);
  return r;
}

// n(n-1)(2n+5), the untied numerator of 18 Var(S).
double kendall_var_head(std::size_t n) {
  if (n < k_exact_cubes) {
    const auto m = static_cast<std::int64_t>(n);
    return static_cast<double>(m * (m - 1) * (2 * m + 5));
  }
  const auto d = static_cast<double>(n);
  return d * (d - 1) * (2 * d + 5);
}

// ---- inversions ----------------------------------------------------------------------------------

// Merge sort that reports inversions (Knuth, TAOCP vol. 3, 5.1.1): when the
// right run's head is taken it is smaller than every value left in the left
// run. Runs of 32 start with an insertion sort, whose shifts are exactly the
// inversions inside the run. Ties are not inversions (strict <).
constexpr std::size_t k_run = 32;

// Strict inversions of a (pairs i < j with a[j] < a[i]), sorting a.
std::uint64_t count_inversions(std::vector<double>& a, std::vector<double>& buf) {
  const std::size_t n = a.size();
  std::uint64_t inv = 0;
  for (std::size_t s = 0; s < n; s += k_run) {
    const std::size_t e = std::min(n, s + k_run);
    for (std::size_t i = s + 1; i < e; ++i) {
      const double v = a[i];
      std::size_t j = i;
      while (j > s && v < a[j - 1]) {
        a[j] = a[j - 1];
        --j;
      }
      a[j] = v;
      inv += i - j;
    }
  }
  buf.resize(n);
  for (std::size_t width = k_run; width < n; width *= 2) {
    for (std::size_t s = 0; s < n; s += 2 * width) {
      const std::size_t mid = std::min(n, s + width), e = std::min(n, s + 2 * width);
      std::size_t i = s, j = mid, k = s;
      // (A branch-free step measured slower: it chains every step on a load.)
      while (i < mid && j < e) {
        if (a[j] < a[i]) {
          buf[k++] = a[j++];
          inv += mid - i;
        } else {
          buf[k++] = a[i++];
        }
      }
      while (i < mid) buf[k++] = a[i++];
      while (j < e) buf[k++] = a[j++];
    }
    a.swap(buf);
  }
  return inv;
}

// Same over (key, point) items, reporting rather than counting:
// on_batch(first, count, right) says that the `count` items from `first` all
// precede `right` in the original order and have larger keys. Every
// inversion is reported exactly once.
struct Item {
  double key;
  std::size_t point;
};

template <class OnBatch>
void visit_inversions(std::vector<Item>& a, std::vector<Item>& buf, OnBatch&& on_batch) {
  const std::size_t n = a.size();
  for (std::size_t s = 0; s < n; s += k_run) {
    const std::size_t e = std::min(n, s + k_run);
    for (std::size_t i = s + 1; i < e; ++i) {
      const Item v = a[i];
      std::size_t j = i;
      while (j > s && v.key < a[j - 1].key) --j;
      if (j < i) {
        on_batch(&a[j], i - j, v);  // a[j..i) are larger and came first
        std::copy_backward(a.begin() + static_cast<Offset>(j), a.begin() + static_cast<Offset>(i),
                           a.begin() + static_cast<Offset>(i + 1));
        a[j] = v;
      }
    }
  }
  buf.resize(n);
  for (std::size_t width = k_run; width < n; width *= 2) {
    for (std::size_t s = 0; s < n; s += 2 * width) {
      const std::size_t mid = std::min(n, s + width), e = std::min(n, s + 2 * width);
      std::size_t i = s, j = mid, k = s;
      while (i < mid && j < e) {
        if (a[j].key < a[i].key) {
          on_batch(&a[i], mid - i, a[j]);
          buf[k++] = a[j++];
        } else {
          buf[k++] = a[i++];
        }
      }
      while (i < mid) buf[k++] = a[i++];
      while (j < e) buf[k++] = a[j++];
    }
    a.swap(buf);
  }
}

// ---- pairwise slopes -----------------------------------------------------------------------------

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
  // Values at the given ranks of the sorted m-slope stratified subsample
  // drawn with `seed`, without keeping all m slopes.
  std::vector<double> subsample_ranks(std::uint64_t m, std::uint64_t seed, const std::vector<std::size_t>& ranks) const;

  // The values at 0-based ranks (any order) of the N slopes sorted.
  std::vector<double> select(const std::vector<std::uint64_t>& ranks) const;

 private:
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

std::vector<double> PairwiseSlopes::all_slopes() const {
  std::vector<double> s;
  s.reserve(m_pairs);
  for (std::size_t g = 0; g + 1 < m_group_start.size(); ++g)
    for (std::size_t i = m_group_start[g]; i < m_group_start[g + 1]; ++i)
      for (std::size_t j = m_group_start[g + 1]; j < m_n; ++j) s.push_back(slope(i, j));
  return s;
}

template <class Sink>
void PairwiseSlopes::stratified_visit(std::uint64_t m, SplitMix64& gen, Sink&& sink) const {
  if (m == 0 || m_pairs == 0) return;
  m = std::min(m, m_pairs);
  // Stratum k: [k q + min(k, r), +q + (k < r)), exact in integers.
  const std::uint64_t q = m_pairs / m, r = m_pairs % m;
  std::size_t g = 0, i = 0;
  std::uint64_t base = 0;                           // pair index of (i, its first partner)
  std::uint64_t partners = m_n - m_group_start[1];  // partners of point i: every point past its group
  // Pairs are located in batches and their slopes computed afterwards, so
  // that the cache misses of a batch (long series) overlap.
  constexpr std::size_t k_batch = 64;
  std::size_t first[k_batch], second[k_batch];
  for (std::uint64_t k0 = 0; k0 < m; k0 += k_batch) {
    const std::size_t count = static_cast<std::size_t>(std::min<std::uint64_t>(k_batch, m - k0));
    for (std::size_t b = 0; b < count; ++b) {
      const std::uint64_t k = k0 + b;
      const std::uint64_t start = k * q + std::min(k, r), len = q + (k < r ? 1 : 0);
      const auto offset = static_cast<std::uint64_t>(gen.uniform01() * static_cast<double>(len));
      const std::uint64_t idx = start + std::min(offset, len - 1);
      while (idx >= base + partners) {
        base += partners;
        if (++i == m_group_start[g + 1]) {
          ++g;
          partners = m_n - m_group_start[g + 1];
        }
      }
      first[b] = i;
      second[b] = m_group_start[g + 1] + (idx - base);
    }
    for (std::size_t b = 0; b < count; ++b) sink(slope(first[b], second[b]));
  }
}

std::vector<double> PairwiseSlopes::stratified_sample(std::uint64_t m, SplitMix64& gen) const {
  std::vector<double> s;
  s.reserve(std::min(m, m_pairs));
  stratified_visit(m, gen, [&](double v) { s.push_back(v); });
  return s;
}

std::vector<double> PairwiseSlopes::subsample_ranks(std::uint64_t m, std::uint64_t seed,
                                                    const std::vector<std::size_t>& ranks) const {
  m = std::min(m, m_pairs);
  const auto [min_it, max_it] = std::minmax_element(ranks.begin(), ranks.end());
  // A pilot subsample (its own seed) brackets the wanted ranks in value, with
  // a margin of 4 binomial standard deviations; the main pass then keeps only
  // the slopes inside and counts those below. Same values as selecting from
  // the whole subsample, in one pass and a small selection; if the bracket
  // misses (probability ~1e-4), the whole subsample is drawn again.
  const std::uint64_t pilot_size = std::min<std::uint64_t>(m, 16384);
  if (m > 4 * pilot_size) {
    SplitMix64 pilot_gen(seed ^ 0x51a7e5ull);
    auto pilot = stratified_sample(pilot_size, pilot_gen);
    std::sort(pilot.begin(), pilot.end());
    const auto mp = static_cast<double>(pilot.size());
    const double f_lo = static_cast<double>(*min_it) / static_cast<double>(m - 1);
    const double f_hi = static_cast<double>(*max_it) / static_cast<double>(m - 1);
    const double lo_pos = std::floor(f_lo * mp - 4 * std::sqrt(mp * f_lo * (1 - f_lo)) - 2);
    const double hi_pos = std::ceil(f_hi * mp + 4 * std::sqrt(mp * f_hi * (1 - f_hi)) + 2);
    const double v_lo = lo_pos >= 0 ? pilot[static_cast<std::size_t>(lo_pos)] : -k_inf;
    const double v_hi = hi_pos < mp ? pilot[static_cast<std::size_t>(hi_pos)] : k_inf;
    // Branch-free filter: about half the slopes fall on each side of the band,
    // so a branch on it would mispredict every other slope. Every slope is
    // written at the end of `band`, which only advances when it is inside.
    std::vector<double> band(1024);
    std::size_t kept = 0;
    std::uint64_t below = 0;
    SplitMix64 gen(seed);
    stratified_visit(m, gen, [&](double v) {
      band[kept] = v;
      below += v < v_lo ? 1 : 0;
      kept += ((v >= v_lo) & (v <= v_hi)) ? 1 : 0;
      if (kept == band.size()) band.resize(2 * band.size());
    });
    band.resize(kept);
    if (below <= *min_it && *max_it < below + band.size()) {
      std::vector<std::size_t> local(ranks.size());
      for (std::size_t q = 0; q < ranks.size(); ++q) local[q] = static_cast<std::size_t>(ranks[q] - below);
      return select_ranks(band, local);
    }
  }
  SplitMix64 gen(seed);
  auto s = stratified_sample(m, gen);
  return select_ranks(s, ranks);
}

// The key of point i at threshold t is r_i = fl(yc_i - fl(t * xc_i)) with
// xc = fl(x - cx), yc = fl(y - cy) centred on the midranges (centring shrinks
// the magnitudes the rounding errors scale with). Against the real
// y_i - t x_i (shifted by the same constant cy - t cx for every point) it is
// off by at most
//   u |yc| + u |t xc| + u |t xc| + u (|yc| + |t xc|) <= 4u (|yc| + |t| |xc|) = eta(t)
// (centring y, centring x, the product, the difference). For a pair with
// x_j - x_i >= min_gap, "r_j < r_i" then implies a real slope below
// t + 2 eta(t) / min_gap: that is xi(t).
void PairwiseSlopes::prepare_keys() const {
  if (!m_xc.empty()) return;
  double xmin = k_inf, xmax = -k_inf, ymin = k_inf, ymax = -k_inf;
  for (const Point& q : m_pts) {
    xmin = std::min(xmin, q.x), xmax = std::max(xmax, q.x);
    ymin = std::min(ymin, q.y), ymax = std::max(ymax, q.y);
  }
  const double cx = xmin + (xmax - xmin) / 2, cy = ymin + (ymax - ymin) / 2;
  m_xc.resize(m_n);
  m_yc.resize(m_n);
  for (std::size_t i = 0; i < m_n; ++i) {
    m_xc[i] = m_pts[i].x - cx;
    m_yc[i] = m_pts[i].y - cy;
    m_max_abs_xc = std::max(m_max_abs_xc, std::fabs(m_xc[i]));
    m_max_abs_yc = std::max(m_max_abs_yc, std::fabs(m_yc[i]));
  }
  // The smallest gap between distinct x, rounded down: a lower bound on the
  // real x_j - x_i of every pair.
  m_min_gap = k_inf;
  for (std::size_t g = 1; g + 1 < m_group_start.size(); ++g)
    m_min_gap = std::min(m_min_gap, m_pts[m_group_start[g]].x - m_pts[m_group_start[g - 1]].x);
  m_min_gap *= 1 - 4 * k_u;
}

// Pairs (i, j), x_i < x_j, with keys[j] < keys[i], keys in x order. Inside a
// group of equal x the keys are sorted first, so that no pair of the group
// (which has no slope) counts.
std::uint64_t PairwiseSlopes::count_keys(std::vector<double>& keys) const {
  if (m_group_start.size() - 1 < m_n)
    for (std::size_t g = 0; g + 1 < m_group_start.size(); ++g)
      if (m_group_start[g + 1] - m_group_start[g] > 1)
        std::sort(keys.begin() + static_cast<Offset>(m_group_start[g]),
                  keys.begin() + static_cast<Offset>(m_group_start[g + 1]));
  return count_inversions(keys, m_key_buf);
}

std::uint64_t PairwiseSlopes::count_below(double t) const {
  m_keys.resize(m_n);
  for (std::size_t i = 0; i < m_n; ++i) m_keys[i] = m_yc[i] - t * m_xc[i];
  return count_keys(m_keys);
}

// Pairs with slope < 0 (y_j < y_i) and > 0 (y_j > y_i): with keys y itself
// there is no rounding at all, and a computed slope has the sign of y_j - y_i.
void PairwiseSlopes::zero_counts() const {
  if (m_have_zero_counts) return;
  m_keys.resize(m_n);
  for (std::size_t i = 0; i < m_n; ++i) m_keys[i] = m_pts[i].y;
  m_negative = count_keys(m_keys);
  for (std::size_t i = 0; i < m_n; ++i) m_keys[i] = -m_pts[i].y;
  m_positive = count_keys(m_keys);
  m_have_zero_counts = true;
}

// Calls visit(first, count, right) for batches of candidate pairs
// (first[k].point, right.point) covering every pair of the bracket: not
// below the lower side, below the upper side. Points are ordered by key at
// the lower side (ties by x, so that a pair with equal keys, exactly at the
// threshold, is "not below"); a pair i before j with x_i < x_j is then not
// below the lower side, and it is below the upper side exactly when the keys
// there invert it. Candidates with x_i >= x_j are equal-x pairs or pairs
// whose rounded predicates are not monotone in t; the visitor drops them.
// An open lower side orders by x (nothing is below -inf); an open upper side
// uses the key -x (every pair with x_i < x_j is below +inf). The zero sides
// use keys y: lower "slope > 0" orders equal y by x descending (slope 0 is
// below it), upper "slope < 0" inverts on y_j < y_i.
template <class Visit>
void PairwiseSlopes::visit_bracket(const Bracket& b, Visit&& visit) const {
  m_items.resize(m_n);
  switch (b.lo) {
    case Side::open:
      for (std::size_t i = 0; i < m_n; ++i) m_items[i] = {0.0, i};
      break;
    case Side::value:
      for (std::size_t i = 0; i < m_n; ++i) m_items[i] = {m_yc[i] - b.t_lo * m_xc[i], i};
      std::sort(m_items.begin(), m_items.end(),
                [](const Item& p, const Item& q) { return p.key < q.key || (p.key == q.key && p.point < q.point); });
      break;
    case Side::zero:
      for (std::size_t i = 0; i < m_n; ++i) m_items[i] = {m_pts[i].y, i};
      std::sort(m_items.begin(), m_items.end(),
                [](const Item& p, const Item& q) { return p.key < q.key || (p.key == q.key && p.point > q.point); });
      break;
  }
  for (Item& it : m_items) {
    const std::size_t i = it.point;
    it.key = b.hi == Side::value ? m_yc[i] - b.t_hi * m_xc[i] : b.hi == Side::zero ? m_pts[i].y : -m_pts[i].x;
  }
  visit_inversions(m_items, m_item_buf, visit);
}

// A Bernoulli sample of the bracket's slopes, about sample_size() of them,
// by geometric skips over the inversions as they are reported: O(n log n +
// sample). Sorted.
std::vector<double> PairwiseSlopes::sample_bracket(const Bracket& b, SplitMix64& gen) const {
  std::vector<double> s;
  const double q = static_cast<double>(sample_size()) / static_cast<double>(std::max<std::uint64_t>(1, b.size()));
  const bool keep_all = !(q < 1);
  const double log_skip = keep_all ? 0 : std::log1p(-q);
  auto skip = [&]() -> std::uint64_t {
    if (keep_all) return 0;
    const double g = std::floor(std::log(gen.uniform01()) / log_skip);  // failures before a success
    return g < 1e18 ? static_cast<std::uint64_t>(g) : std::uint64_t{1} << 60;
  };
  std::uint64_t next = skip();  // offset of the next kept candidate in the current batch
  visit_bracket(b, [&](const Item* first, std::size_t count, const Item& right) {
    while (next < count) {
      const std::size_t i = first[next].point, j = right.point;
      if (m_pts[i].x < m_pts[j].x) s.push_back(slope(i, j));
      next += 1 + skip();
    }
    next -= count;
  });
  std::sort(s.begin(), s.end());
  return s;
}

// Enumerates the bracket and reads the ranks off it. With `compress` the
// values are kept as (value, count) runs, so that a huge bracket of few
// distinct slopes fits. false if the bracket does not provably hold them.
bool PairwiseSlopes::enumerate(const Bracket& b, const std::vector<std::uint64_t>& ranks, bool compress,
                               Results& out) const {
  const std::uint64_t cap = enumerate_max();
  for (std::uint64_t k : ranks)
    if (k < b.c_lo) return false;
  std::vector<double> vals;
  std::vector<std::pair<double, std::uint64_t>> runs;
  bool overflow = false;
  auto squeeze = [&] {  // merge vals into runs
    std::sort(vals.begin(), vals.end());
    std::vector<std::pair<double, std::uint64_t>> merged;
    std::size_t r = 0;
    for (std::size_t i = 0; i < vals.size();) {
      std::size_t j = i + 1;
      while (j < vals.size() && vals[j] == vals[i]) ++j;
      while (r < runs.size() && runs[r].first < vals[i]) merged.push_back(runs[r++]);
      std::uint64_t c = j - i;
      if (r < runs.size() && runs[r].first == vals[i]) c += runs[r++].second;
      merged.emplace_back(vals[i], c);
      i = j;
    }
    while (r < runs.size()) merged.push_back(runs[r++]);
    runs.swap(merged);
    vals.clear();
    if (runs.size() > 4 * cap) overflow = true;
  };
  visit_bracket(b, [&](const Item* first, std::size_t count, const Item& right) {
    if (overflow) return;
    const std::size_t j = right.point;
    const double xj = m_pts[j].x;
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t i = first[k].point;
      if (m_pts[i].x < xj) vals.push_back(slope(i, j));
    }
    if (vals.size() > cap) {
      if (compress)
        squeeze();
      else
        overflow = true;
    }
  });
  if (overflow) return false;
  std::vector<double> got(ranks.size());
  if (compress) {
    squeeze();
    if (overflow) return false;
    for (std::size_t q = 0; q < ranks.size(); ++q) {
      const std::uint64_t r = ranks[q] - b.c_lo;
      std::uint64_t below = 0;
      bool found = false;
      for (const auto& [v, c] : runs) {
        if (r < below + c) {
          got[q] = v;
          found = true;
          break;
        }
        below += c;
      }
      if (!found) return false;
    }
  } else {
    std::vector<std::size_t> local;
    for (std::uint64_t k : ranks) {
      if (k - b.c_lo >= vals.size()) return false;
      local.push_back(static_cast<std::size_t>(k - b.c_lo));
    }
    got = select_ranks(vals, local);
  }
  // With A the pairs below the lower side, E the bracket and R the rest, the
  // value v of rank k - |A| in E is the k-th of all when max(A) <= v <= min(R).
  const double lo_bound = below_lo_max(b), hi_bound = above_hi_min(b);
  for (double v : got)
    if (!(v >= lo_bound && v <= hi_bound)) return false;
  for (std::size_t q = 0; q < ranks.size(); ++q) out.emplace_back(ranks[q], got[q]);
  return true;
}

// Ranks (sorted, distinct) that lie in bracket b, with `sample` drawn from b.
void PairwiseSlopes::refine(const Bracket& b, const std::vector<std::uint64_t>& ranks,
                            const std::vector<double>& sample, int depth, SplitMix64& gen, Results& out) const {
  if (ranks.empty()) return;
  if (b.size() <= enumerate_max()) {
    if (!enumerate(b, ranks, false, out)) select_direct(ranks, out);
    return;
  }
  if (depth > 24) {
    select_direct(ranks, out);
    return;
  }
  if (sample.size() < 64) {  // e.g. the positive part of a sample that was nearly all zeros
    refine(b, ranks, sample_bracket(b, gen), depth + 1, gen, out);
    return;
  }
  const auto ms = static_cast<double>(sample.size());
  const auto size = static_cast<double>(b.size());
  // Where each rank should fall in the sorted sample, with a margin of 3.5
  // binomial standard deviations (plus 2 for small samples): a bracket misses
  // its rank with probability ~2e-4 per side, which costs one more round.
  struct Window {
    double lo, hi;
  };
  std::vector<Window> win;
  for (std::uint64_t k : ranks) {
    const double p = (static_cast<double>(k - b.c_lo) + 0.5) / size;
    const double d = 3.5 * std::sqrt(ms * p * (1 - p)) + 2;
    win.push_back({std::floor(p * ms - d), std::ceil(p * ms + d)});
  }
  // Ranks whose windows overlap share a bracket.
  for (std::size_t first = 0; first < ranks.size();) {
    std::size_t last = first + 1;
    double hi_pos = win[first].hi;
    while (last < ranks.size() && win[last].lo <= hi_pos) hi_pos = std::max(hi_pos, win[last++].hi);
    const std::vector<std::uint64_t> group(ranks.begin() + static_cast<Offset>(first),
                                           ranks.begin() + static_cast<Offset>(last));
    const double lo_pos = win[first].lo;
    const bool lo_in = lo_pos >= 0, hi_in = hi_pos < ms;
    const double lo_val = lo_in ? sample[static_cast<std::size_t>(lo_pos)] : 0;
    const double hi_val = hi_in ? sample[static_cast<std::size_t>(hi_pos)] : 0;
    first = last;
    const bool tie = lo_in && hi_in && lo_val == hi_val;
    // Exact zeros inside the window (equal y values, common in quantized
    // metrics) are split off exactly: sampling cannot narrow a tie, and a
    // rank next to it would otherwise drag the whole tie into its bracket.
    const bool zero_inside = (!lo_in || lo_val <= 0) && (!hi_in || hi_val >= 0) && b.lo != Side::zero &&
                             b.hi != Side::zero && std::binary_search(sample.begin(), sample.end(), 0.0);
    if (zero_inside) {
      split_at_zero(b, group, sample, depth, gen, out);
      continue;
    }
    Bracket nb = b;
    // Each threshold tightens the side its count shows it bounds; one that
    // falls between the group's ranks splits the group.
    bool split = false;
    std::uint64_t split_count = 0;
    double split_t = 0;
    auto apply = [&](double t) {
      if (!std::isfinite(t)) return;
      if ((nb.lo == Side::value && t <= nb.t_lo) || (nb.hi == Side::value && t >= nb.t_hi)) return;
      if ((nb.lo == Side::zero && t <= 0) || (nb.hi == Side::zero && t >= 0)) return;
      const std::uint64_t c = count_below(t);
      if (c < nb.c_lo || c > nb.c_hi) return;  // not monotone: rounding noise, ignore
      if (c <= group.front())
        nb.lo = Side::value, nb.t_lo = t, nb.c_lo = c;
      else if (c > group.back())
        nb.hi = Side::value, nb.t_hi = t, nb.c_hi = c;
      else
        split = true, split_count = c, split_t = t;
    };
    if (lo_in) apply(lo_val - pad(lo_val));
    if (hi_in) apply(hi_val + pad(hi_val));
    if (split) {
      std::vector<std::uint64_t> below, above;
      for (std::uint64_t k : group) (k < split_count ? below : above).push_back(k);
      Bracket lb = nb, ub = nb;
      lb.hi = Side::value, lb.t_hi = split_t, lb.c_hi = split_count;
      ub.lo = Side::value, ub.t_lo = split_t, ub.c_lo = split_count;
      for (const auto& [sub, rk] : {std::pair{lb, below}, std::pair{ub, above}})
        refine(sub, rk, sub.size() <= enumerate_max() ? std::vector<double>{} : sample_bracket(sub, gen), depth + 1,
               gen, out);
      continue;
    }
    if (nb.size() <= enumerate_max()) {
      if (!enumerate(nb, group, false, out)) select_direct(group, out);
    } else if (tie || 2 * nb.size() > b.size()) {
      settle(nb, b, group, sample, out);  // sampling no longer narrows it
    } else {
      refine(nb, group, sample_bracket(nb, gen), depth + 1, gen, out);
    }
  }
}

// A bracket that sampling cannot narrow: its slopes agree to within rounding
// (or are tied). If its proven value range is within 1e-9 relative, read the
// ranks off the sample (drawn from `parent`), clamped to that range: within
// the range's width of the exact values. Otherwise enumerate it compressed.
void PairwiseSlopes::settle(const Bracket& b, const Bracket& parent, const std::vector<std::uint64_t>& ranks,
                            const std::vector<double>& sample, Results& out) const {
  // Computed slopes in the bracket: above max(A)'s counterpart and below min(R)'s.
  const double lo = b.lo == Side::value ? lower(b.t_lo) : b.lo == Side::zero ? 0.0 : -k_inf;
  const double hi = b.hi == Side::value ? upper(b.t_hi) : b.hi == Side::zero ? 0.0 : k_inf;
  const bool narrow = std::isfinite(lo) && std::isfinite(hi) && (lo > 0 || hi < 0) &&
                      hi - lo <= 1e-9 * std::min(std::fabs(lo), std::fabs(hi));
  if (narrow && !sample.empty()) {
    const auto ms = static_cast<double>(sample.size());
    for (std::uint64_t k : ranks) {
      const double p = (static_cast<double>(k - parent.c_lo) + 0.5) / static_cast<double>(parent.size());
      const auto at = static_cast<std::size_t>(std::clamp(p * ms, 0.0, ms - 1));
      out.emplace_back(k, std::clamp(sample[at], lo, hi));
    }
    return;
  }
  if (b.size() <= 64 * enumerate_max() && enumerate(b, ranks, true, out)) return;
  select_direct(ranks, out);
}

// The sample is tied at 0 across the ranks' windows: count the pairs with
// slope < 0, = 0, > 0 exactly; ranks in the zero band are 0, the others get
// a bracket bounded by the band, and the sample's negative or positive part.
void PairwiseSlopes::split_at_zero(const Bracket& b, const std::vector<std::uint64_t>& ranks,
                                   const std::vector<double>& sample, int depth, SplitMix64& gen, Results& out) const {
  zero_counts();
  const std::uint64_t band_lo = m_negative, band_hi = m_pairs - m_positive;  // ranks [band_lo, band_hi) are 0
  std::vector<std::uint64_t> below, above;
  for (std::uint64_t k : ranks) {
    if (k < band_lo)
      below.push_back(k);
    else if (k >= band_hi)
      above.push_back(k);
    else
      out.emplace_back(k, 0.0);
  }
  if (!below.empty()) {
    Bracket nb = b;
    if (band_lo < nb.c_hi) nb.hi = Side::zero, nb.c_hi = band_lo;
    std::vector<double> part;
    for (double v : sample)
      if (v < 0) part.push_back(v);
    refine(nb, below, part, depth + 1, gen, out);
  }
  if (!above.empty()) {
    Bracket nb = b;
    if (band_hi > nb.c_lo) nb.lo = Side::zero, nb.c_lo = band_hi;
    std::vector<double> part;
    for (double v : sample)
      if (v > 0) part.push_back(v);
    refine(nb, above, part, depth + 1, gen, out);
  }
}

// Fallback: every slope; or, beyond 2^25 of them (256 MB), the ranks read off
// a 2^23-pair stratified subsample (inexact; not reached by finite data in
// testing, it exists so that no input can exhaust memory).
void PairwiseSlopes::select_direct(const std::vector<std::uint64_t>& ranks, Results& out) const {
  if (m_pairs <= (std::uint64_t{1} << 25)) {
    auto s = all_slopes();
    const auto v = select_ranks(s, std::vector<std::size_t>(ranks.begin(), ranks.end()));
    for (std::size_t q = 0; q < ranks.size(); ++q) out.emplace_back(ranks[q], v[q]);
    return;
  }
  SplitMix64 gen(k_seed);
  auto s = stratified_sample(std::uint64_t{1} << 23, gen);
  std::sort(s.begin(), s.end());
  for (std::uint64_t k : ranks) {
    const double h = static_cast<double>(k) / static_cast<double>(m_pairs - 1) * static_cast<double>(s.size() - 1);
    out.emplace_back(k, s[std::min(s.size() - 1, static_cast<std::size_t>(std::llround(h)))]);
  }
}

std::vector<double> PairwiseSlopes::select(const std::vector<std::uint64_t>& wanted) const {
  std::vector<std::uint64_t> ranks(wanted);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  Results found;
  if (m_pairs <= enumerate_max()) {
    select_direct(ranks, found);
  } else {
    prepare_keys();
    if (!(m_min_gap > 0) || !std::isfinite(xi(0))) {
      select_direct(ranks, found);  // no usable rounding bound
    } else {
      SplitMix64 gen(k_seed);
      auto first = stratified_sample(sample_size(), gen);
      std::sort(first.begin(), first.end());
      Bracket all;
      all.c_hi = m_pairs;
      refine(all, ranks, first, 0, gen, found);
    }
  }
  std::vector<double> out(wanted.size(), k_nan);
  for (std::size_t q = 0; q < wanted.size(); ++q)
    for (const auto& [k, v] : found)
      if (k == wanted[q]) out[q] = v;
  return out;
}

// Sen's interval (Sen 1968, eq. 2.6, as SciPy 1.10 computes it): order
// statistics Rl, Ru (0-based) of the N slopes with
//   sigma^2 = [n(n-1)(2n+5) - sum_x t(t-1)(2t+5) - sum_y t(t-1)(2t+5)] / 18,
//   Ru = min(round((N - z sigma) / 2), N - 1), Rl = max(round((N + z sigma) / 2) - 1, 0),
// z = Phi^-1(alpha / 2), rounding half to even (np.round). false when
// sigma^2 < 0 (heavy ties in both x and y), where SciPy returns NaN.
bool sen_ranks(std::uint64_t n_pairs, double sigsq, double level, std::uint64_t& rl, std::uint64_t& ru) {
  if (!(sigsq >= 0)) return false;
  // SciPy reads alpha = 0.05 and 0.95 alike: the level is max(level, 1 - level).
  double alpha = std::isnan(level) ? 0.05 : std::clamp(level, 0.0, 1.0);
  if (alpha > 0.5) alpha = 1 - alpha;
  const auto nt = static_cast<double>(n_pairs);
  if (!(alpha > 0)) {  // a 100 % interval: every slope (SciPy overflows here)
    rl = 0;
    ru = n_pairs - 1;
    return true;
  }
  const double z = boost::math::quantile(k_std_normal, alpha / 2);
  const double sigma = std::sqrt(sigsq);
  const double u = std::nearbyint((nt - z * sigma) / 2);  // default rounding: to nearest, ties to even
  const double l = std::nearbyint((nt + z * sigma) / 2) - 1;
  ru = u >= nt - 1 ? n_pairs - 1 : static_cast<std::uint64_t>(std::max(u, 0.0));
  rl = l <= 0 ? 0 : std::min(n_pairs - 1, static_cast<std::uint64_t>(l));
  return true;
}

}  // namespace

SlopeEstimate theil_sen(std::span<const double> x, std::span<const double> y, double level, std::size_t max_pairs) {
  SlopeEstimate r;
  r.slope = r.intercept = r.low = r.high = k_nan;
  if (x.size() != y.size()) return r;  // no pairing: n = 0
  const std::size_t n = x.size();
  r.n = n;
  // NaN would make the sorts undefined; an infinity makes slopes inf - inf.
  if (!all_finite(x) || !all_finite(y)) return r;

  const PairwiseSlopes slopes(x, y);
  const std::uint64_t nt = slopes.pairs();
  if (nt == 0) return r;  // n < 2 or every x equal: no slope (SciPy: NaN)

  std::vector<double> y_sorted(y.begin(), y.end());
  std::sort(y_sorted.begin(), y_sorted.end());
  const double sigsq = (1.0 / 18.0) * (kendall_var_head(n) - slopes.x_tie_term() - tie_terms(y_sorted).var_term);
  std::uint64_t rl = 0, ru = 0;
  const bool has_interval = sen_ranks(nt, sigsq, level, rl, ru);

  if (nt <= max_pairs) {
    // Exact: the two middle slopes and the interval ranks.
    std::vector<std::uint64_t> ranks = {(nt - 1) / 2, nt / 2};
    if (has_interval) ranks.insert(ranks.end(), {rl, ru});
    const auto v = slopes.select(ranks);
    r.slope = (v[0] + v[1]) / 2;  // np.median's rounding
    if (has_interval) r.low = v[2], r.high = v[3];
  } else {
    // Subsample: m = max_pairs slopes by stratified sampling (one uniform pair
    // per stratum of N / m consecutive pairs, fixed seed, so repeated calls
    // agree). The subsample's median estimates the median of all N slopes
    // with a rank error whose standard deviation, as a fraction of the pairs,
    // is at most
    //   se(p) = sqrt(p (1 - p) / m * (1 - m / N))
    // at fraction p (binomial, with the finite-population correction;
    // stratification only lowers it): 3.5e-4 for m = 2e6. Against the 95 %
    // half-width of Sen's interval, z sigma / 2N in the same units, that is 4 % at
    // n = 5,000 and 24 % at n = 200,000 (simulated: rms difference from the
    // exact slope 4.5 % and 24 % of the half-width). The interval is read off
    // the subsample at fractions Rl / (N - 1) and Ru / (N - 1), each moved
    // away from the median so that its distance d becomes sqrt(d^2 + (z se)^2):
    // the subsampling error, independent of the data's, added in quadrature.
    // Simulated coverage stays at 95 %; the interval is 2 % (n = 5,000) and
    // 11 % (n = 200,000) wider than the exact one.
    const std::uint64_t m = std::min<std::uint64_t>(nt, std::max<std::uint64_t>(1, max_pairs));
    const auto ms = static_cast<double>(m);
    const double fpc = std::max(0.0, 1 - ms / static_cast<double>(nt));
    double level_used = std::isnan(level) ? 0.95 : std::clamp(level, 0.0, 1.0);
    level_used = std::max(level_used, 1 - level_used);
    const double z = level_used < 1 ? -boost::math::quantile(k_std_normal, (1 - level_used) / 2) : 0;
    auto widened = [&](std::uint64_t rank) {
      const double f = nt > 1 ? static_cast<double>(rank) / static_cast<double>(nt - 1) : 0.5;
      const double se = std::sqrt(f * (1 - f) / ms * fpc);
      const double d = std::sqrt((f - 0.5) * (f - 0.5) + z * se * z * se);
      return std::clamp(f < 0.5 ? 0.5 - d : 0.5 + d, 0.0, 1.0);
    };
    // Type 7 quantiles of the subsample: the order statistics around h = f (m - 1).
    std::vector<double> fractions = {0.5};
    if (has_interval) fractions.insert(fractions.end(), {widened(rl), widened(ru)});
    std::vector<std::size_t> ranks;
    for (double f : fractions) {
      const auto lo = static_cast<std::size_t>(std::floor(f * (ms - 1)));
      ranks.push_back(lo);
      ranks.push_back(std::min<std::size_t>(lo + 1, m - 1));
    }
    const auto at = slopes.subsample_ranks(m, k_seed, ranks);
    auto quantile_at = [&](std::size_t k) {
      const double h = fractions[k] * (ms - 1);
      return at[2 * k] + (h - std::floor(h)) * (at[2 * k + 1] - at[2 * k]);
    };
    r.slope = quantile_at(0);
    if (has_interval) r.low = quantile_at(1), r.high = quantile_at(2);
  }

  // Intercept: median of the residuals y - slope x (SciPy's method='joint').
  std::vector<double> residuals(n);
  for (std::size_t i = 0; i < n; ++i) residuals[i] = y[i] - r.slope * x[i];
  r.intercept = numpy_median(residuals);
  return r;
}

TrendTest mann_kendall(std::span<const double> y) {
  TrendTest r;
  const std::size_t n = y.size();
  if (std::any_of(y.begin(), y.end(), [](double v) { return std::isnan(v); })) {
    r.s = r.z = r.p_value = r.tau = k_nan;
    return r;
  }
  if (n < 2) return r;
  // S = concordant - discordant pairs i < j = N0 - T - 2 D, with N0 all
  // pairs, T the pairs tied in y and D the strict inversions of y (the time
  // index has no ties). D by merge sort in O(n log n), as Knight (1966)
  // computes Kendall's tau.
  std::vector<double> a(y.begin(), y.end()), buf;
  const std::uint64_t d = count_inversions(a, buf);  // leaves a sorted
  const TieTerms ties = tie_terms(a);
  const std::uint64_t n0 = std::uint64_t{n} * (n - 1) / 2;
  const double s = static_cast<double>(n0 - ties.tied_pairs) - 2 * static_cast<double>(d);
  r.s = s;
  // Var(S) with ties (Kendall 1975): [n(n-1)(2n+5) - sum t(t-1)(2t+5)] / 18.
  const double var = (kendall_var_head(n) - ties.var_term) / 18;
  if (var > 0) {
    // Continuity correction: S moves in steps of 2, so |S| - 1 is halfway
    // to the next value towards 0 (Kendall 1975; Hipel & McLeod 1994).
    const double corrected = s > 0 ? s - 1 : (s < 0 ? s + 1 : 0);
    r.z = corrected / std::sqrt(var);
    r.p_value = std::min(1.0, 2 * normal_sf(std::fabs(r.z)));
  }
  // tau-b with no ties in the index: S / sqrt(N0 (N0 - T)), as SciPy's
  // kendalltau; 0 when y is constant (SciPy: NaN).
  const double untied = static_cast<double>(n0 - ties.tied_pairs);
  if (untied > 0) r.tau = std::clamp(s / std::sqrt(static_cast<double>(n0)) / std::sqrt(untied), -1.0, 1.0);
  return r;
}

namespace {

// The (k+1)-th smallest (0-based k) of the union of two ascending sequences
// a(0..na) and b(0..nb), given as accessors: binary search on how many come
// from a (the classic selection from two sorted arrays, O(log min(na, nb))).
template <class A, class B>
double kth_of_two(A&& a, std::size_t na, B&& b, std::size_t nb, std::size_t k) {
  // Taking i from a and j = k + 1 - i from b is right when a(i) is not
  // smaller than b(j - 1): find the first such i.
  std::size_t lo = k + 1 > nb ? k + 1 - nb : 0, hi = std::min(k + 1, na);
  while (lo < hi) {
    const std::size_t i = lo + (hi - lo) / 2, j = k + 1 - i;
    if (i < na && j > 0 && b(j - 1) > a(i))
      lo = i + 1;  // a(i) belongs in too
    else
      hi = i;
  }
  const std::size_t i = lo, j = k + 1 - i;
  if (i == 0) return b(j - 1);
  if (j == 0) return a(i - 1);
  return std::max(a(i - 1), b(j - 1));
}

// Position of the first element of sorted a[0..n) that is not below v
// (lower_bound), or, with `upper`, greater than v (upper_bound). Branch-free
// halving: the comparisons on noisy data are coin flips, and mispredicted
// branches cost more than the search.
template <bool upper>
inline std::size_t bound(const double* a, std::size_t n, double v) {
  const double* base = a;
  while (n > 1) {
    const std::size_t half = n / 2;
    const bool right = upper ? !(v < base[half - 1]) : base[half - 1] < v;
    base = right ? base + half : base;
    n -= half;
  }
  const bool past = upper ? !(v < *base) : *base < v;
  return static_cast<std::size_t>(base - a) + (past ? 1 : 0);
}

// 1 / Phi^-1(3/4): the MAD of a normal sample times this estimates its sd.
constexpr double k_mad_to_sd = 1.482602218505602;

}  // namespace

std::vector<Stall> find_stalls(std::span<const double> y, std::size_t window, double factor, double mad_k) {
  std::vector<Stall> out;
  // Centred windows of 2h + 1 points (an even window grows by one): the
  // median of a centred odd window follows a level shift as soon as the new
  // level holds the majority, so a staircase is not one long stall.
  const std::size_t h = window / 2, w = 2 * h + 1;
  const std::size_t n = y.size();
  if (h == 0 || n < w) return out;  // no baseline without a full window
  if (std::any_of(y.begin(), y.end(), [](double v) { return std::isnan(v); })) return out;

  // The window as a sorted array: each slide drops one value and inserts one,
  // both found by binary search (O(log w)); the values between the two
  // positions shift by one (a memmove, on average a third of the window,
  // cheaper than tree nodes for windows up to thousands). The median is the
  // middle element; the MAD is found on demand from the same array
  // (kth_of_two, O(log w)), only for the rare points that already pass
  // value > factor * median.
  std::vector<double> win(y.begin(), y.begin() + static_cast<Offset>(w));
  std::sort(win.begin(), win.end());
  std::size_t start = 0;  // first index of the current window
  for (std::size_t i = 0; i < n; ++i) {
    // Windows stay whole at the edges: the first and last h points share the
    // first and last full window instead of a shrunken, noisier one.
    const std::size_t want = std::min(i > h ? i - h : 0, n - w);
    while (start < want) {
      const double out_v = y[start], in_v = y[start + w];
      double* a = win.data();
      const std::size_t p = bound<false>(a, w, out_v), q = bound<true>(a, w, in_v);
      // Element-wise shifts: the distances are short (a third of the window on
      // average), below what a memmove call pays off for.
      if (q > p) {  // a[p+1 .. q) move left, the new value lands at q - 1
        for (std::size_t k = p; k + 1 < q; ++k) a[k] = a[k + 1];
        a[q - 1] = in_v;
      } else {  // a[q .. p) move right, the new value lands at q
        for (std::size_t k = p; k > q; --k) a[k] = a[k - 1];
        a[q] = in_v;
      }
      ++start;
    }
    const double med = win[h], v = y[i];
    if (!(med > 0) || !(v > factor * med)) continue;  // the ratio needs a positive baseline
    // MAD: the median of the w deviations |a - med|. One is 0 (the median
    // itself); the others form two ascending runs, med - win[h-1-k] and
    // win[h+1+k] - med, so the median deviation is the h-th smallest of those 2h.
    const double mad = kth_of_two([&](std::size_t k) { return med - win[h - 1 - k]; }, h,
                                  [&](std::size_t k) { return win[h + 1 + k] - med; }, h, h - 1);
    if (!(v - med > mad_k * k_mad_to_sd * mad)) continue;
    out.push_back({i, v, med, v / med});
  }
  return out;
}

}  // namespace perfgate::stats
