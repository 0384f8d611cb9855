#pragma once
// Trends in long series (soak runs): how fast a metric drifts and whether
// the drift is real (stalls: stats/stalls.hpp). Pure functions over
// spans; x is time (seconds), y the value. NaN inputs are the caller's to remove.

#include <cstddef>
#include <span>
#include <vector>

namespace perfgate::stats {

struct SlopeEstimate {
  double slope = 0;          // per unit of x (the median of pairwise slopes)
  double intercept = 0;      // median of y - slope * x
  double low = 0, high = 0;  // confidence interval of the slope
  std::size_t n = 0;
};

// Theil-Sen slope (Theil 1950, Sen 1968) with Sen's distribution-free
// interval from the normal approximation of Kendall's S (tie-corrected), as
// scipy.stats.theilslopes(y, x, alpha=level, method='joint') computes it.
// Pairs with equal x are skipped. The median and the interval bounds are
// selected exactly from the n(n-1)/2 slopes without materialising them
// (stats/pairwise_slopes): O(n log n) expected time, O(n) memory.
SlopeEstimate theil_sen(std::span<const double> x, std::span<const double> y, double level = 0.95);

struct TrendTest {
  double s = 0;        // Kendall's S: concordant minus discordant pairs over time
  double z = 0;        // standardised with tie correction and continuity correction
  double p_value = 1;  // two-sided
  double tau = 0;      // Kendall's tau-b of (index, y)
};

// Mann-Kendall trend test of y against its order (Mann 1945, Kendall 1975),
// with the tie-corrected variance; two-sided p from the normal approximation.
// S and tau are scipy.stats.kendalltau(range(n), y)'s; its asymptotic p lacks
// the continuity correction, so it is slightly smaller than this one.
TrendTest mann_kendall(std::span<const double> y);

}  // namespace perfgate::stats
