#include "harness/stats/stalls.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace perfgate::stats {

namespace {

using Offset = std::ptrdiff_t;

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
