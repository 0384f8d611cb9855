#pragma once
// Two-sample comparison of trial values: the Mann-Whitney U test and the
// Hodges-Lehmann shift estimate with its distribution-free interval. Pure
// functions over spans; the caller removes NaN/Inf first (a NaN gives NaN
// results rather than undefined behaviour). Thread-safe: the exact null
// distributions are cached per (n1, n2) behind a mutex.

#include <span>

namespace perfgate::stats {

enum class MwMethod {
  Auto,        // exact when there are no ties and both samples are small, else asymptotic
  Exact,       // exact null distribution of U (no tie correction; ties fall back to asymptotic,
               // and so do n1 * n2 > 10,000, where the count table gets expensive)
  Asymptotic,  // normal approximation with tie and continuity correction
};

struct MannWhitney {
  double u = 0;        // U of the first sample: #{x_i > y_j} + 0.5 #{x_i == y_j}
  double p_value = 1;  // two-sided
  double z = 0;        // standardised statistic (asymptotic method; 0 for exact): continuity
                       // corrected, signed, > 0 when x tends to be larger than y
  bool exact = false;  // which method produced p_value
  bool ties = false;   // any value shared between or within the samples
};

// Two-sided test of x against y. p-values equal
// scipy.stats.mannwhitneyu(x, y, alternative="two-sided", method=...) with
// use_continuity=True. An empty side gives p = 1. When every value is equal
// (no spread) the asymptotic method gives p = 1 and z = 0.
MannWhitney mann_whitney_u(std::span<const double> x, std::span<const double> y, MwMethod method = MwMethod::Auto);

// Largest sample size (per side) for which Auto uses the exact distribution.
inline constexpr std::size_t k_mw_exact_max_n = 50;

// U of x against y with its null mean and tie-corrected standard deviation
// (Lehmann 1975, eq. 1.31): what a test combined over strata (van Elteren)
// needs from each. Empty sides give zeros.
struct UNull {
  double u = 0;     // #{x_i > y_j} + 0.5 #{x_i == y_j}
  double mean = 0;  // n1 n2 / 2
  double sd = 0;    // 0 when every value is equal
};
UNull u_with_null(std::span<const double> x, std::span<const double> y);

// The smallest two-sided p that mann_whitney_u(Auto) can return for samples
// of these sizes without ties: 2 / C(n1 + n2, n1) where it uses the exact
// distribution, the normal approximation of U = 0 otherwise; 1 for an empty
// side. No number of tests at this size can be significant below it.
double mann_whitney_min_p(std::size_t n1, std::size_t n2);

struct ShiftEstimate {
  double shift = 0;  // median of all pairwise differences y_j - x_i
  double low = 0;    // confidence interval of the shift
  double high = 0;
  double coverage = 0;  // confidence actually achieved (order statistics are discrete)
};

// Hodges-Lehmann estimate of the shift of y relative to x (candidate minus
// baseline) and its distribution-free interval from order statistics of the
// pairwise differences, with the critical value of the U distribution (exact
// for small samples, normal approximation otherwise). When the samples are
// too small for `level` the interval is [min, max] of the differences and
// `coverage` says what it really is. The exact distribution is used when
// Auto would use it (no ties, both n <= k_mw_exact_max_n). `level` is clamped
// into (0, 1). An empty side gives all zeros.
ShiftEstimate hodges_lehmann(std::span<const double> x, std::span<const double> y, double level = 0.95);

struct RatioInterval {
  double ratio = 0;  // median(y) / median(x)
  double low = 0, high = 0;
};

// Percentile bootstrap interval of median(y) / median(x), resampling each side
// independently with a seeded generator (same seed, same interval on every
// platform). median(x) must be non-zero: otherwise, and for an empty side,
// every field is NaN. Resamples whose median of x is 0 are skipped; with
// resamples < 1 the interval is [ratio, ratio].
RatioInterval bootstrap_median_ratio(std::span<const double> x, std::span<const double> y, double level, int resamples,
                                     unsigned long long seed);

// Trials per side a two-sided Mann-Whitney test needs to detect a location
// shift `shift` under normal noise of standard deviation `sd` at level `alpha`
// with `power` (Noether 1987, JASA 82:645). Returns a large number
// (std::numeric_limits<int>::max()) when shift is 0 relative to sd; at least 2.
int mann_whitney_trials_needed(double shift, double sd, double alpha, double power);

}  // namespace perfgate::stats
