// E-divisive means for univariate series: Matteson, D. S. and James, N. A.
// (2014), "A Nonparametric Approach for Multiple Change Point Analysis of
// Multivariate Data", JASA 109(505):334-345, with the distance exponent
// alpha = 1.
//
// For a segment split after its first m points into X (m points) and Y (n points):
//   E(X, Y) = 2/(m n) sum|x_i - y_j| - 2/(m (m-1)) sum_{i<k}|x_i - x_k|
//                                    - 2/(n (n-1)) sum_{j<k}|y_j - y_k|
//   Q(m)    = m n / (m + n) * E(X, Y)
// The candidate change point is the m maximising Q; its significance comes
// from a permutation test on the same segment, and accepted change points
// split the segment in two, which are searched again (bisection).
//
// Simplification: Matteson and James also search the end kappa of the right
// part (X against the next kappa - tau points only). We keep kappa at the
// segment end, as MongoDB's implementation described by Daly et al.
// ("Change Point Detection in Software Performance Testing", ICPE 2020) does.
// A second change inside Y dilutes Y and lowers Q, but the strongest change
// still stands out and the bisection then finds the other one inside its
// part. In exchange every m is evaluated in one O(n log n) pass (below)
// rather than searching O(n^2) (tau, kappa) pairs per statistic, which is
// what makes permutation tests over long histories cheap.

#include "harness/stats/change_points.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "harness/stats/descriptive.hpp"
#include "harness/stats/running.hpp"

namespace perfgate::stats {

namespace {

constexpr std::size_t k_min_segment_floor = 2;  // the within-sample means need two points

// splitmix64's finaliser spreads nearby inputs (seed, segment bounds) over
// unrelated generator seeds.
constexpr std::uint64_t mix64(std::uint64_t z) { return splitmix64_mix(z); }

// Each segment's test draws from its own stream, derived from the seed and the
// segment bounds, so a change point's p-value does not depend on the order in
// which segments are examined or on max_change_points.
std::uint64_t segment_seed(std::uint64_t seed, std::size_t begin, std::size_t end) {
  return mix64(mix64(mix64(seed) ^ static_cast<std::uint64_t>(begin)) ^ static_cast<std::uint64_t>(end));
}

// Count and sum of the values inserted so far, indexed by rank, with prefix
// queries in O(log n) (Fenwick 1994).
class RankFenwick {
 public:
  void reset(std::size_t ranks) { m_nodes.assign(ranks + 1, Node{}); }

  // Count and sum of inserted values with rank < r.
  std::pair<double, double> below(std::size_t r) const {
    double count = 0, sum = 0;
    for (std::size_t i = r; i > 0; i &= i - 1) {
      count += m_nodes[i].count;
      sum += m_nodes[i].sum;
    }
    return {count, sum};
  }

  void add(std::size_t r, double value) {
    for (std::size_t i = r + 1; i < m_nodes.size(); i += i & (~i + 1)) {
      m_nodes[i].count += 1;
      m_nodes[i].sum += value;
    }
  }

 private:
  struct Node {
    double count = 0, sum = 0;
  };
  std::vector<Node> m_nodes;
};

struct Split {
  std::size_t left_size = 0;  // m: points before the change
  double q = -std::numeric_limits<double>::infinity();
};

// One segment: its values by rank and their order in time, which the
// permutation test shuffles. Buffers are reused across segments.
class SegmentSplitter {
 public:
  explicit SegmentSplitter(std::size_t min_segment) : m_min_segment(min_segment) {}

  void load(std::span<const double> segment) {
    const std::size_t n = segment.size();
    m_by_rank.resize(n);
    for (std::size_t i = 0; i < n; ++i) m_by_rank[i] = static_cast<std::uint32_t>(i);
    std::stable_sort(m_by_rank.begin(), m_by_rank.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return segment[a] < segment[b]; });
    // Distances are translation invariant; centring on a middle value keeps
    // the running sums small, so a metric around 1e9 with noise of 1 does not
    // lose its digits in count * value - sum.
    const double centre = segment[m_by_rank[n / 2]];
    m_sorted.resize(n);
    m_rank_order.resize(n);
    for (std::size_t r = 0; r < n; ++r) {
      m_sorted[r] = segment[m_by_rank[r]] - centre;
      m_rank_order[m_by_rank[r]] = static_cast<std::uint32_t>(r);
    }
    // Distance of each value to all others: permutation invariant, so computed
    // once per segment. Equal values contribute 0 whichever side they fall on.
    m_distance_to_all.resize(n);
    double total = 0;
    for (double v : m_sorted) total += v;
    double below_sum = 0;
    m_total_within = 0;
    for (std::size_t r = 0; r < n; ++r) {
      const double v = m_sorted[r];
      const double above_sum = total - below_sum - v;
      m_distance_to_all[r] =
          (static_cast<double>(r) * v - below_sum) + (above_sum - static_cast<double>(n - 1 - r) * v);
      m_total_within += m_distance_to_all[r];
      below_sum += v;
    }
    m_total_within /= 2;  // each pair counted from both ends
    m_tree.reset(n);
  }

  // The m maximising Q for the current order, first one on ties.
  //
  // One pass moves points from the right part to the left. With
  // d_t = sum_{i<t}|x_t - x_i| from the Fenwick tree (as
  // cnt_below x - sum_below + sum_above - cnt_above x),
  //   within_left(t+1) = within_left(t) + d_t,
  //   between(t+1)     = between(t) + (distance_to_all(x_t) - d_t) - d_t,
  //   within_right     = total_within - within_left - between,
  // so all m cost O(n log n) together.
  Split best_split() {
    const std::size_t n = m_rank_order.size();
    const auto n_total = static_cast<double>(n);
    m_tree.reset(n);
    Split best;
    double within_left = 0, between = 0, inserted_sum = 0;
    const std::size_t last_m = n - m_min_segment;
    for (std::size_t t = 0; t < last_m; ++t) {
      const std::uint32_t r = m_rank_order[t];
      const double v = m_sorted[r];
      const auto [count_below, sum_below] = m_tree.below(r);
      const double count_above = static_cast<double>(t) - count_below;
      const double sum_above = inserted_sum - sum_below;
      const double d = (count_below * v - sum_below) + (sum_above - count_above * v);
      within_left += d;
      between += m_distance_to_all[r] - 2 * d;
      m_tree.add(r, v);
      inserted_sum += v;

      const std::size_t m = t + 1;
      if (m < m_min_segment) continue;
      const auto left = static_cast<double>(m);
      const auto right = n_total - left;
      const double within_right = m_total_within - within_left - between;
      // Q = m n/(m+n) * E, expanded so each term costs one division.
      const double q = 2 * between / n_total - 2 * right * within_left / (n_total * (left - 1)) -
                       2 * left * within_right / (n_total * (right - 1));
      if (q > best.q) best = {m, q};
    }
    return best;
  }

  // Fisher-Yates over the time order, from the portable draw above.
  void shuffle(SplitMix64& gen) {
    for (std::size_t i = m_rank_order.size(); i > 1; --i) {
      const auto j = static_cast<std::size_t>(gen.below(i));
      std::swap(m_rank_order[i - 1], m_rank_order[j]);
    }
  }

 private:
  std::size_t m_min_segment;
  std::vector<std::uint32_t> m_by_rank;     // segment positions in ascending value order
  std::vector<double> m_sorted;             // centred values, ascending (index = rank)
  std::vector<std::uint32_t> m_rank_order;  // rank of each position in time order
  std::vector<double> m_distance_to_all;    // by rank: sum_j |v_r - v_j| over the segment
  double m_total_within = 0;                // sum over all pairs of the segment
  RankFenwick m_tree;
};

// Permutation p-value of the observed maximum q_observed, (1 + #{q_perm >= q_observed}) / (1 + R).
//
// Early stop (Besag and Clifford 1991, "Sequential Monte Carlo p-values",
// Biometrika 78:301): the full test is significant iff fewer than h permuted
// maxima reach the observed one, with h the smallest count for which
// (1 + h)/(1 + R) > significance. Once h have, the answer is known; we stop
// after l permutations and report max(h / l, (1 + h)/(1 + R)): h / l is
// Besag and Clifford's valid sequential p-value and (1 + h)/(1 + R) the least
// the full test could have given, so the reported value is conservative and
// always above significance. Null segments typically stop after a dozen
// permutations instead of R; only real change points pay for all R.
double permutation_p_value(SegmentSplitter& splitter, double q_observed, const ChangePointOptions& opt,
                           SplitMix64& gen) {
  const int permutations = std::max(0, opt.permutations);
  const double denominator = 1.0 + permutations;
  int stop_at = 0;
  while (stop_at <= permutations && (1.0 + stop_at) / denominator <= opt.significance) ++stop_at;
  if (stop_at == 0) return 1.0 / denominator;  // even a perfect run could not be significant

  int reached = 0;
  for (int done = 1; done <= permutations; ++done) {
    splitter.shuffle(gen);
    if (splitter.best_split().q >= q_observed && ++reached == stop_at && done < permutations)
      return std::max(static_cast<double>(stop_at) / done, (1.0 + stop_at) / denominator);
  }
  return (1.0 + reached) / denominator;
}

}  // namespace

std::vector<ChangePoint> e_divisive(std::span<const double> x, const ChangePointOptions& opt) {
  std::vector<ChangePoint> found;
  const std::size_t min_segment = std::max(k_min_segment_floor, static_cast<std::size_t>(std::max(0, opt.min_segment)));
  if (opt.max_change_points <= 0 || x.size() < 2 * min_segment) return found;
  if (!std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); })) return found;

  struct Candidate {
    std::size_t begin = 0, end = 0, split = 0;
    double q = 0;
  };
  std::vector<Candidate> pending;
  SegmentSplitter splitter(min_segment);
  auto consider = [&](std::size_t begin, std::size_t end) {
    if (end - begin < 2 * min_segment) return;
    splitter.load(x.subspan(begin, end - begin));
    const Split s = splitter.best_split();
    // Q <= 0 everywhere (e.g. a constant segment): no evidence of a change.
    if (s.q > 0) pending.push_back({begin, end, begin + s.left_size, s.q});
  };

  // Strongest candidate first (largest Q, then earliest), so that when
  // max_change_points cuts the search short the most pronounced changes are
  // the ones kept. A candidate that fails its test only closes its own segment.
  consider(0, x.size());
  while (!pending.empty() && found.size() < static_cast<std::size_t>(opt.max_change_points)) {
    auto best = std::max_element(pending.begin(), pending.end(), [](const Candidate& a, const Candidate& b) {
      return a.q < b.q || (a.q == b.q && a.begin > b.begin);
    });
    const Candidate c = *best;
    pending.erase(best);
    splitter.load(x.subspan(c.begin, c.end - c.begin));
    SplitMix64 gen(segment_seed(opt.seed, c.begin, c.end));
    const double p = permutation_p_value(splitter, c.q, opt, gen);
    if (!(p <= opt.significance)) continue;
    ChangePoint cp;
    cp.index = c.split;
    cp.p_value = p;
    found.push_back(cp);
    consider(c.begin, c.split);
    consider(c.split, c.end);
  }

  std::sort(found.begin(), found.end(), [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  for (std::size_t i = 0; i < found.size(); ++i) {
    const std::size_t begin = i == 0 ? 0 : found[i - 1].index;
    const std::size_t end = i + 1 == found.size() ? x.size() : found[i + 1].index;
    ChangePoint& cp = found[i];
    cp.before_median = median(x.subspan(begin, cp.index - begin));
    cp.after_median = median(x.subspan(cp.index, end - cp.index));
    cp.relative_change =
        cp.before_median != 0 ? cp.after_median / cp.before_median - 1 : std::numeric_limits<double>::quiet_NaN();
  }
  return found;
}

}  // namespace perfgate::stats
