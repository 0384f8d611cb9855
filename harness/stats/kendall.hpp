#pragma once
// Kendall's S, the statistic under both the Mann-Kendall trend test and Sen's
// interval of the Theil-Sen slope (stats/trend): the tie terms of its
// variance and the inversions that count its discordant pairs.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace perfgate::stats {

// Runs of equal values in sorted data: the tie terms of Var(S) (Kendall 1975).
struct TieTerms {
  double var_term = 0;           // sum t(t-1)(2t+5)
  std::uint64_t tied_pairs = 0;  // sum t(t-1)/2
};

// Exact in int64 below 2^20 values (n^3 < 2^61), as SciPy computes it; beyond,
// double (relative error 1e-16, irrelevant to a p-value).
inline constexpr std::size_t k_exact_cubes = std::size_t{1} << 20;

TieTerms tie_terms(const std::vector<double>& sorted);

// n(n-1)(2n+5), the untied numerator of 18 Var(S).
double kendall_var_head(std::size_t n);

// Merge sort that reports inversions (Knuth, TAOCP vol. 3, 5.1.1): when the
// right run's head is taken it is smaller than every value left in the left
// run. Runs of k_merge_run start with an insertion sort, whose shifts are
// exactly the inversions inside the run. Ties are not inversions (strict <).
inline constexpr std::size_t k_merge_run = 32;

// Strict inversions of a (pairs i < j with a[j] < a[i]), sorting a; buf is scratch.
std::uint64_t count_inversions(std::vector<double>& a, std::vector<double>& buf);

}  // namespace perfgate::stats
