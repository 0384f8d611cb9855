#include "harness/stats/kendall.hpp"

#include <algorithm>

namespace perfgate::stats {

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

double kendall_var_head(std::size_t n) {
  if (n < k_exact_cubes) {
    const auto m = static_cast<std::int64_t>(n);
    return static_cast<double>(m * (m - 1) * (2 * m + 5));
  }
  const auto d = static_cast<double>(n);
  return d * (d - 1) * (2 * d + 5);
}

std::uint64_t count_inversions(std::vector<double>& a, std::vector<double>& buf) {
  const std::size_t n = a.size();
  std::uint64_t inv = 0;
  for (std::size_t s = 0; s < n; s += k_merge_run) {
    const std::size_t e = std::min(n, s + k_merge_run);
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
  for (std::size_t width = k_merge_run; width < n; width *= 2) {
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

}  // namespace perfgate::stats
