#include "harness/stats/mann_whitney.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <boost/math/distributions/normal.hpp>

#include "harness/stats/descriptive.hpp"
#include "harness/stats/running.hpp"

namespace perfgate::stats {

namespace {

// Beyond this many (x, y) pairs an explicit MwMethod::Exact falls back to the
// normal approximation: the count table costs about (n1 n2)^2 / 4 additions
// (100 x 100 takes ~25 M, about 20 ms), and at that size the normal
// approximation is close to the exact p except far in the tails.
constexpr std::size_t k_exact_max_pairs = 10'000;

const boost::math::normal_distribution<double> k_std_normal(0.0, 1.0);

double normal_sf(double z) { return boost::math::cdf(boost::math::complement(k_std_normal, z)); }
double normal_cdf(double z) { return boost::math::cdf(k_std_normal, z); }

// Ranks of the pooled sample, reduced to what the U test and its intervals need.
struct PooledRanks {
  double u1 = 0;        // R1 - n1 (n1 + 1) / 2; a multiple of 0.5, exact in double
  double tie_term = 0;  // sum over groups of equal values of t^3 - t
  bool ties = false;
};

PooledRanks rank_pooled(std::span<const double> x, std::span<const double> y) {
  // (value, from x). Sorting pairs also orders x before y inside a group of
  // equal values, which does not matter: the whole group shares one rank.
  std::vector<std::pair<double, bool>> pooled;
  pooled.reserve(x.size() + y.size());
  for (double v : x) pooled.emplace_back(v, true);
  for (double v : y) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end());

  PooledRanks r;
  double rank_sum_x = 0;
  const std::size_t n = pooled.size();
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i + 1;
    std::size_t in_x = pooled[i].second ? 1 : 0;
    while (j < n && pooled[j].first == pooled[i].first) {
      in_x += pooled[j].second ? 1 : 0;
      ++j;
    }
    // 1-based ranks i+1 .. j share their average (i + 1 + j) / 2.
    const double average_rank = 0.5 * static_cast<double>(i + 1 + j);
    rank_sum_x += static_cast<double>(in_x) * average_rank;
    const auto t = static_cast<double>(j - i);
    if (j - i > 1) {
      r.ties = true;
      r.tie_term += t * t * t - t;
    }
    i = j;
  }
  const auto n1 = static_cast<double>(x.size());
  r.u1 = rank_sum_x - n1 * (n1 + 1) / 2;
  return r;
}

// Standard deviation of U under the null hypothesis with the tie correction
// (Lehmann, Nonparametrics, 1975, eq. 1.31): with N = n1 + n2,
//   var = n1 n2 / 12 * ((N + 1) - sum(t^3 - t) / (N (N - 1))).
// Written as one numerator so that "every value equal" gives exactly 0.
double u_null_sd(std::size_t n1, std::size_t n2, double tie_term) {
  const auto a = static_cast<double>(n1), b = static_cast<double>(n2);
  const double n = a + b;
  if (n < 2) return 0;
  const double numerator = n * (n - 1) * (n + 1) - tie_term;
  if (!(numerator > 0)) return 0;
  return std::sqrt(a * b * numerator / (12 * n * (n - 1)));
}

// Exact null distribution of U as a CDF over u = 0 .. n1 n2.
//
// f(m, n, u), the number of orderings of m first-sample and n second-sample
// values with U = u, satisfies f(m, n, u) = f(m - 1, n, u - n) + f(m, n - 1, u):
// the largest value either comes from the first sample (beating all n of the
// second) or from the second (beating nobody). Mann & Whitney 1947; see also
// Di Bucchianico 1999, Theorem 2.5. We sweep n = 1 .. n2 and keep one row per
// m, updating rows in increasing m so that row m - 1 already holds layer n.
// Only additions of positive counts: no cancellation, so tail probabilities
// keep full relative precision (counts beyond 2^53 are rounded, relatively).
// U has the same distribution for (n1, n2) and (n2, n1); callers pass m <= n.
std::vector<double> build_u_null_cdf(std::size_t m, std::size_t n) {
  std::vector<std::vector<double>> rows(m + 1, std::vector<double>{1.0});
  for (std::size_t c = 1; c <= n; ++c) {
    for (std::size_t j = 1; j <= m; ++j) {
      std::vector<double>& row = rows[j];
      const std::vector<double>& shorter = rows[j - 1];
      row.resize(j * c + 1, 0.0);
      for (std::size_t u = c; u <= j * c; ++u) row[u] += shorter[u - c];
    }
  }
  std::vector<double>& counts = rows[m];
  double total = 0;
  for (double v : counts) total += v;  // C(m + n, m), rounded like the counts
  double running = 0;
  for (double& v : counts) {
    running += v;
    v = running / total;
  }
  counts.back() = 1.0;
  return std::move(counts);
}

using Cdf = std::vector<double>;

// Cache of exact distributions for the sizes Auto can use (n <= 50 per side:
// at most 1,275 size pairs of at most 2,501 doubles). A gate compares many
// configurations with the same trial counts, so one table serves them all.
std::shared_ptr<const Cdf> u_null_cdf(std::size_t n1, std::size_t n2) {
  const std::size_t m = std::min(n1, n2), n = std::max(n1, n2);
  if (n > k_mw_exact_max_n) return std::make_shared<const Cdf>(build_u_null_cdf(m, n));

  static std::mutex mutex;
  static std::map<std::pair<std::size_t, std::size_t>, std::shared_ptr<const Cdf>> cache;
  const auto key = std::make_pair(m, n);
  {
    std::lock_guard lock(mutex);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  // Built outside the lock; two threads racing on a new size both build it
  // and the first insertion wins (the tables are identical).
  auto built = std::make_shared<const Cdf>(build_u_null_cdf(m, n));
  std::lock_guard lock(mutex);
  return cache.emplace(key, std::move(built)).first->second;
}

bool exact_allowed(std::size_t n1, std::size_t n2, bool ties, MwMethod method) {
  if (ties) return false;
  switch (method) {
    case MwMethod::Auto:
      return n1 <= k_mw_exact_max_n && n2 <= k_mw_exact_max_n;
    case MwMethod::Exact:
      return n1 * n2 <= k_exact_max_pairs;
    case MwMethod::Asymptotic:
      return false;
  }
  return false;
}

// Median (type 7, as stats::median) of a scratch buffer, reordering it.
double median_in_place(std::vector<double>& v) {
  const std::size_t n = v.size();
  const std::size_t hi = n / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(hi), v.end());
  if (n % 2 == 1) return v[hi];
  const double upper = v[hi];
  const double lower = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(hi));
  return lower + 0.5 * (upper - lower);
}

// NaN has no place in an ordering; sorting it is undefined behaviour.
bool any_nan(std::span<const double> v) {
  return std::any_of(v.begin(), v.end(), [](double a) { return std::isnan(a); });
}

// Keeps a confidence level inside (0, 1) so that normal quantiles stay finite.
double clamp_level(double level) {
  constexpr double k_edge = 1e-12;
  if (!(level > k_edge)) return k_edge;
  if (!(level < 1 - k_edge)) return 1 - k_edge;
  return level;
}

}  // namespace

MannWhitney mann_whitney_u(std::span<const double> x, std::span<const double> y, MwMethod method) {
  MannWhitney r;
  if (x.empty() || y.empty()) return r;
  if (any_nan(x) || any_nan(y)) {
    r.u = r.p_value = r.z = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  const std::size_t n1 = x.size(), n2 = y.size();
  const PooledRanks ranks = rank_pooled(x, y);
  r.u = ranks.u1;
  r.ties = ranks.ties;
  const double pairs = static_cast<double>(n1) * static_cast<double>(n2);
  const double mean_u = pairs / 2;

  if (exact_allowed(n1, n2, ranks.ties, method)) {
    // Two-sided: twice the smaller tail. By symmetry P(U >= max(U1, U2))
    // equals P(U <= min(U1, U2)), which is how scipy 1.10 computes it.
    const auto cdf = u_null_cdf(n1, n2);
    const double u_min = std::min(ranks.u1, pairs - ranks.u1);
    const auto index = static_cast<std::size_t>(std::llround(u_min));
    r.p_value = std::min(1.0, 2 * (*cdf)[index]);
    r.exact = true;
    return r;
  }

  const double sd = u_null_sd(n1, n2, ranks.tie_term);
  if (!(sd > 0)) return r;  // every value equal: no evidence either way, p = 1, z = 0
  // Continuity correction: move |U - mean| half a step towards 0 (not past it).
  const double distance = std::max(0.0, std::fabs(ranks.u1 - mean_u) - 0.5);
  r.z = std::copysign(distance / sd, ranks.u1 - mean_u);
  r.p_value = std::min(1.0, 2 * normal_sf(distance / sd));
  return r;
}

UNull u_with_null(std::span<const double> x, std::span<const double> y) {
  UNull r;
  if (x.empty() || y.empty()) return r;
  const PooledRanks ranks = rank_pooled(x, y);
  r.u = ranks.u1;
  r.mean = static_cast<double>(x.size()) * static_cast<double>(y.size()) / 2;
  r.sd = u_null_sd(x.size(), y.size(), ranks.tie_term);
  return r;
}

double mann_whitney_min_p(std::size_t n1, std::size_t n2) {
  if (n1 == 0 || n2 == 0) return 1;
  if (exact_allowed(n1, n2, false, MwMethod::Auto)) {
    // The most extreme orderings (every x below every y, or above): 2 of C(n1 + n2, n1).
    const double log_c = std::lgamma(static_cast<double>(n1 + n2) + 1) - std::lgamma(static_cast<double>(n1) + 1) -
                         std::lgamma(static_cast<double>(n2) + 1);
    return std::min(1.0, 2 * std::exp(-log_c));
  }
  const double sd = u_null_sd(n1, n2, 0);
  const double mean_u = static_cast<double>(n1) * static_cast<double>(n2) / 2;
  return std::min(1.0, 2 * normal_sf(std::max(0.0, mean_u - 0.5) / sd));
}

ShiftEstimate hodges_lehmann(std::span<const double> x, std::span<const double> y, double level) {
  ShiftEstimate r;
  if (x.empty() || y.empty()) return r;
  if (any_nan(x) || any_nan(y)) {
    r.shift = r.low = r.high = std::numeric_limits<double>::quiet_NaN();
    return r;
  }
  const std::size_t n1 = x.size(), n2 = y.size();
  const std::size_t pairs = n1 * n2;
  std::vector<double> diffs;
  diffs.reserve(pairs);
  for (double b : y)
    for (double a : x) diffs.push_back(b - a);

  // [D_(k), D_(pairs-k+1)] misses the true shift d exactly when at most k - 1
  // differences lie below d (or, symmetrically, above it), and the number of
  // differences y_j - x_i below d is the U statistic of (y - d) against x,
  // which has the null distribution. So coverage = 1 - 2 P(U <= k - 1), and
  // we take the largest k that still reaches `level` (as stats::median_ci).
  level = clamp_level(level);
  const PooledRanks ranks = rank_pooled(x, y);
  const std::size_t k_max = (pairs + 1) / 2;  // keeps low <= high
  std::size_t k = 1;
  if (exact_allowed(n1, n2, ranks.ties, MwMethod::Auto)) {
    const auto cdf = u_null_cdf(n1, n2);
    r.coverage = 1 - 2 * (*cdf)[0];
    for (std::size_t c = 2; c <= k_max; ++c) {
      const double coverage = 1 - 2 * (*cdf)[c - 1];
      if (coverage < level) break;
      k = c;
      r.coverage = coverage;
    }
    // When even k = 1 misses the level the samples are too small: [min, max].
  } else {
    // Normal approximation with continuity correction:
    //   P(U <= k - 1) ~ Phi((k - 1/2 - mean) / sd).
    // Ties shrink the spread of U; when every value is equal the corrected
    // sd is 0 and the untied one keeps the order-statistic rule defined
    // (all differences are 0 then, so the interval is [0, 0] either way).
    double sd = u_null_sd(n1, n2, ranks.tie_term);
    if (!(sd > 0)) sd = u_null_sd(n1, n2, 0);
    const double mean_u = static_cast<double>(pairs) / 2;
    const double z_low = boost::math::quantile(k_std_normal, (1 - level) / 2);
    const double k_real = std::floor(mean_u + 0.5 + sd * z_low);
    if (k_real >= 1) k = std::min(k_max, static_cast<std::size_t>(k_real));
    r.coverage = std::max(0.0, 1 - 2 * normal_cdf((static_cast<double>(k) - 0.5 - mean_u) / sd));
  }
  // Four order statistics by selection rather than a full sort: O(n1 n2).
  // Positions k-1 <= lower median <= upper median <= pairs-k.
  using Offset = std::ptrdiff_t;
  const std::size_t mid_low = (pairs - 1) / 2, mid_high = pairs / 2;
  const auto at = [&](std::size_t i) { return diffs.begin() + static_cast<Offset>(i); };
  std::nth_element(diffs.begin(), at(mid_low), diffs.end());
  const double median_low = diffs[mid_low];
  const double median_high = mid_high == mid_low ? median_low : *std::min_element(at(mid_low + 1), diffs.end());
  r.shift = median_low + 0.5 * (median_high - median_low);  // type 7, as stats::median
  if (k - 1 < mid_low) std::nth_element(diffs.begin(), at(k - 1), at(mid_low));
  r.low = diffs[k - 1];
  if (pairs - k > mid_low) std::nth_element(at(mid_low + 1), at(pairs - k), diffs.end());
  r.high = diffs[pairs - k];
  return r;
}

RatioInterval bootstrap_median_ratio(std::span<const double> x, std::span<const double> y, double level, int resamples,
                                     unsigned long long seed) {
  constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();
  RatioInterval r{k_nan, k_nan, k_nan};
  if (x.empty() || y.empty() || any_nan(x) || any_nan(y)) return r;
  const double median_x = median(x);
  if (median_x == 0) return r;
  r.ratio = median(y) / median_x;
  r.low = r.high = r.ratio;
  if (resamples < 1) return r;

  SplitMix64 gen(seed);
  std::vector<double> resample_x(x.size()), resample_y(y.size());
  std::vector<double> ratios;
  ratios.reserve(static_cast<std::size_t>(resamples));
  for (int b = 0; b < resamples; ++b) {
    // Fixed draw order (all of x, then all of y) so the stream, and hence
    // the interval, depend only on the seed and the sizes.
    for (double& v : resample_x) v = x[gen.below(x.size())];
    for (double& v : resample_y) v = y[gen.below(y.size())];
    const double bx = median_in_place(resample_x);
    const double by = median_in_place(resample_y);
    if (bx != 0) ratios.push_back(by / bx);  // a zero baseline median has no ratio; skip it
  }
  if (ratios.empty()) return r;
  std::sort(ratios.begin(), ratios.end());
  level = std::clamp(std::isnan(level) ? 0.0 : level, 0.0, 1.0);
  r.low = quantile_sorted(ratios, (1 - level) / 2);
  r.high = quantile_sorted(ratios, (1 + level) / 2);
  return r;
}

int mann_whitney_trials_needed(double shift, double sd, double alpha, double power) {
  constexpr int k_unreachable = std::numeric_limits<int>::max();
  const double effect = std::fabs(shift);
  sd = std::fabs(sd);
  if (!(effect > 0) || std::isnan(sd)) return k_unreachable;
  // Noether 1987: total N = (z_{1-alpha/2} + z_power)^2 / (12 c (1 - c) (p - 1/2)^2)
  // with c the share of the first sample (1/2 here, equal allocation) and
  // p = P(Y > X), which for normal noise is Phi(shift / (sd sqrt 2)).
  const double p_exceed = sd > 0 ? normal_cdf(effect / (sd * std::sqrt(2.0))) : 1.0;
  const double gap = p_exceed - 0.5;
  if (!(gap > 0)) return k_unreachable;  // shift negligible relative to sd
  constexpr double k_edge = 1e-12;
  if (std::isnan(alpha) || std::isnan(power)) return k_unreachable;
  alpha = std::clamp(alpha, k_edge, 1 - k_edge);
  power = std::clamp(power, k_edge, 1 - k_edge);
  const double z_sum =
      std::max(0.0, boost::math::quantile(k_std_normal, 1 - alpha / 2) + boost::math::quantile(k_std_normal, power));
  const double per_side = z_sum * z_sum / (12 * 0.25 * gap * gap) / 2;
  if (!(per_side < static_cast<double>(k_unreachable))) return k_unreachable;
  return std::max(2, static_cast<int>(std::ceil(per_side)));
}

}  // namespace perfgate::stats
