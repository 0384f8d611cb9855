#include "harness/stats/trend.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include <boost/math/distributions/normal.hpp>

#include "harness/stats/kendall.hpp"
#include "harness/stats/pairwise_slopes.hpp"

namespace perfgate::stats {

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();

const boost::math::normal_distribution<double> k_std_normal(0.0, 1.0);

double normal_sf(double z) { return boost::math::cdf(boost::math::complement(k_std_normal, z)); }

bool all_finite(std::span<const double> v) {
  return std::all_of(v.begin(), v.end(), [](double a) { return std::isfinite(a); });
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

SlopeEstimate theil_sen(std::span<const double> x, std::span<const double> y, double level) {
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

  // The two middle slopes and the interval ranks, selected exactly.
  std::vector<std::uint64_t> ranks = {(nt - 1) / 2, nt / 2};
  if (has_interval) ranks.insert(ranks.end(), {rl, ru});
  const auto v = slopes.select(ranks);
  r.slope = (v[0] + v[1]) / 2;  // np.median's rounding
  if (has_interval) r.low = v[2], r.high = v[3];

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

}  // namespace perfgate::stats
