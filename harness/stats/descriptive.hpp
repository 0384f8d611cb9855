#pragma once
// Descriptive statistics over spans of doubles. Pure functions; NaN inputs
// are the caller's business (filter them first). Degenerate cases are
// documented per function rather than signalled.

#include <span>
#include <vector>

namespace perfgate::stats {

double mean(std::span<const double> x);    // 0 for empty
double stddev(std::span<const double> x);  // sample (n-1) standard deviation; 0 for n < 2
// n / sum(1/x): the average of rates weighted by the time each took (for
// per-step throughput with equal work per step, total work over total time).
// Falls back to the arithmetic mean if any value is not positive.
double harmonic_mean(std::span<const double> x);
double cv(std::span<const double> x);  // stddev / |mean|; 0 for n < 2 or mean 0

// Variance pooled over groups, each group's values taken about its own mean:
// the sum of squared deviations over the sum of (n_i - 1), the within-group
// mean square of a one-way analysis of variance (R: deviance(aov(y ~ g)) /
// df.residual). A group of fewer than two values adds nothing; one group
// gives its sample variance.
struct PooledVariance {
  double sum_sq = 0;  // squared deviations from each group's own mean
  double df = 0;      // sum of (n_i - 1)
  void add(std::span<const double> group);
  double variance() const;  // sum_sq / df; 0 when df is 0
};
// Quantile by linear interpolation between order statistics (Hyndman & Fan
// type 7, the default of R and NumPy). p in [0, 1]. 0 for empty.
double quantile(std::span<const double> x, double p);
double median(std::span<const double> x);
// Same on data the caller has already sorted ascending (no copy).
double quantile_sorted(std::span<const double> sorted, double p);

// Distribution-free confidence interval of the median from order statistics:
// [x_(k), x_(n-k+1)] with the largest k whose coverage 1 - 2 P(B <= k-1),
// B ~ Binomial(n, 1/2), is at least `level`. When n is too small for the level
// (n < 6 at 95 %), the interval is [min, max] and `coverage` says what it
// really is (n = 5: 93.75 %). See Conover, Practical Nonparametric Statistics, 3.2.
struct MedianInterval {
  double low = 0, high = 0;
  double coverage = 0;  // achieved confidence
};
MedianInterval median_ci(std::span<const double> x, double level = 0.95);

// Median absolute deviation from the median, times 1 / Phi^-1(3/4) = 1.4826 so that it
// estimates the standard deviation of normal data. 0 for empty.
double scaled_mad(std::span<const double> x);

// Rare gross outliers: the indices of values more than `mads` scaled MADs and
// more than `min_distance` from the median, provided they are at most
// `max_fraction` of the values. More of them are a mode of the data (a second
// NUMA node, a slower card), not hiccups, and none is returned; so is none
// below 8 values (too few for the MAD) or when the MAD is 0 (every other value
// equal: any difference would be infinitely far). Ascending indices.
std::vector<std::size_t> rare_outliers(std::span<const double> x, double mads, double max_fraction,
                                       double min_distance = 0);

}  // namespace perfgate::stats
