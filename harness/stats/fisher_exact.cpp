#include "harness/stats/fisher_exact.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace perfgate::stats {

namespace {

double log_choose(long long n, long long k) {
  return std::lgamma(static_cast<double>(n) + 1) - std::lgamma(static_cast<double>(k) + 1) -
         std::lgamma(static_cast<double>(n - k) + 1);
}

}  // namespace

FisherExact fisher_exact(long long a, long long b, long long c, long long d) {
  FisherExact r;
  if (a < 0 || b < 0 || c < 0 || d < 0) {
    r.p_greater = r.p_less = r.p_two_sided = r.odds_ratio = std::nan("");
    return r;
  }
  const double num = static_cast<double>(a) * static_cast<double>(d);
  const double den = static_cast<double>(b) * static_cast<double>(c);
  r.odds_ratio = den > 0 ? num / den : (num > 0 ? std::numeric_limits<double>::infinity() : std::nan(""));
  const long long row1 = a + b, col1 = a + c, n = a + b + c + d;
  if (n == 0) return r;
  // X ~ hypergeometric: the first row's count in the first column, given the
  // margins. Its support is [lo, hi]; the probabilities are computed in logs
  // (n of a few thousand trials overflows the binomials) and summed directly.
  const long long lo = std::max(0LL, row1 + col1 - n), hi = std::min(row1, col1);
  if (lo == hi) return r;
  const double log_total = log_choose(n, row1);
  std::vector<double> pmf(static_cast<std::size_t>(hi - lo + 1));
  for (long long x = lo; x <= hi; ++x)
    pmf[static_cast<std::size_t>(x - lo)] = std::exp(log_choose(col1, x) + log_choose(n - col1, row1 - x) - log_total);
  double greater = 0, less = 0, two = 0;
  const double observed = pmf[static_cast<std::size_t>(a - lo)];
  // SciPy counts a table as "no more likely" within a relative 1e-7, so
  // tables tied with the observed one in exact arithmetic are not lost to
  // rounding.
  const double bound = observed * (1 + 1e-7);
  for (long long x = lo; x <= hi; ++x) {
    double p = pmf[static_cast<std::size_t>(x - lo)];
    if (x >= a) greater += p;
    if (x <= a) less += p;
    if (p <= bound) two += p;
  }
  r.p_greater = std::min(1.0, greater);
  r.p_less = std::min(1.0, less);
  r.p_two_sided = std::min(1.0, two);
  return r;
}

}  // namespace perfgate::stats
