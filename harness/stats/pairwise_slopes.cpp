#include "harness/stats/pairwise_slopes.hpp"

#include <algorithm>
#include <cmath>

namespace perfgate::stats {

namespace {

// SplitMix64 (stats/running.hpp): the same samples, so the same brackets and
// answers, on every platform and call.
constexpr std::uint64_t k_seed = 0x7e2d5eed0c0ffeeull;

// Up to this many slopes (256 MB of doubles) the fallback sorts them all.
constexpr std::uint64_t k_direct_max_pairs = std::uint64_t{1} << 25;

using Offset = std::ptrdiff_t;

// Same over (key, point) items, reporting rather than counting:
// on_batch(first, count, right) says that the `count` items from `first` all
// precede `right` in the original order and have larger keys. Every
// inversion is reported exactly once.
using Item = PairwiseSlopes::Item;

template <class OnBatch>
void visit_inversions(std::vector<Item>& a, std::vector<Item>& buf, OnBatch&& on_batch) {
  const std::size_t n = a.size();
  for (std::size_t s = 0; s < n; s += k_merge_run) {
    const std::size_t e = std::min(n, s + k_merge_run);
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
  for (std::size_t width = k_merge_run; width < n; width *= 2) {
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

}  // namespace

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
// a 2^23-pair stratified subsample (inexact; it exists so that no input can
// exhaust memory: reached when x has distinct values a subnormal apart, test
// "Theil-Sen beyond 2^25 slopes" in tests/unit/stats/test_trend.cpp).
void PairwiseSlopes::select_direct(const std::vector<std::uint64_t>& ranks, Results& out) const {
  if (m_pairs <= k_direct_max_pairs) {
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

bool PairwiseSlopes::select_bounded() const {
  prepare_keys();
  return m_min_gap > 0 && std::isfinite(xi(0));
}

// As select() decides: every slope up to 2^25 of them (select_direct), else
// the exact selection when the rounding is bounded, else the subsample.
bool PairwiseSlopes::selects_exactly() const {
  if (m_pairs <= k_direct_max_pairs) return true;
  return m_pairs > enumerate_max() && select_bounded();
}

std::vector<double> PairwiseSlopes::select(const std::vector<std::uint64_t>& wanted) const {
  std::vector<std::uint64_t> ranks(wanted);
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  Results found;
  if (m_pairs <= enumerate_max()) {
    select_direct(ranks, found);
  } else {
    if (!select_bounded()) {
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

}  // namespace perfgate::stats
