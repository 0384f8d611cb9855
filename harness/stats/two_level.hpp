#pragma once
// Runs of one configuration differ from each other more than trials inside a
// run do (node, boot, memory placement, thermal state). A candidate run is
// judged against baseline runs under a one-way random-effects model
//
//   y_jt = mu + r_j + e_jt,   r_j ~ N(0, tau^2) per run,  e_jt ~ N(0, sigma^2) per trial
//
// (Searle, Casella & McCulloch 1992, Variance Components, ch. 3): the
// difference D between the candidate run's mean and the mean of the baseline
// runs' means has variance tau^2 (1 + 1/k) + sigma^2 (1/n_c + sum_j 1/n_j / k^2).
// tau^2 comes from the spread of run means, which with few runs is poorly
// known; it is moderated towards the spread of the other comparisons of the
// same gate with Smyth's empirical-Bayes prior (Smyth 2004, "Linear models and
// empirical Bayes methods for assessing differential expression in microarray
// experiments", Stat. Appl. Genet. Mol. Biol. 3(1), section 6.2). The degrees
// of freedom of D's variance follow Satterthwaite (1946) over its run and
// trial components. With equal trials per run and no prior the variance is
// the classical prediction interval's of a new run, s_m^2 (1 + 1/k), and the
// degrees of freedom at least its k - 1.
//
// Pure functions; callers pass finite values (relative units are theirs to choose).

#include <limits>
#include <span>
#include <vector>

namespace perfgate::stats {

// What the runs of one comparison say about the two levels of noise.
struct RunSpread {
  int runs = 0;  // runs with at least one value among those given for the spread
  double between_var = std::numeric_limits<double>::quiet_NaN();  // sample variance of their means
  double between_df = 0;                                          // runs - 1
  double within_var = std::numeric_limits<double>::quiet_NaN();   // pooled variance inside runs
  double within_df = 0;                                           // sum of (n - 1)
  double mean_inv_n = 0;                                          // mean of 1 / n over the runs of between_var
};

// `spread_runs`: the baseline runs and any older runs of the same
// configuration kept for their spread (history); `cand` adds to the within
// variance only.
RunSpread run_spread(std::span<const std::vector<double>> spread_runs, std::span<const double> cand);

// A prior for a variance estimated by many comparisons: var with df degrees
// of freedom (df is infinite when the estimates agree as closely as chance
// allows). df = 0 means no prior.
struct VariancePrior {
  double var = std::numeric_limits<double>::quiet_NaN();
  double df = 0;
};

// Bartlett's (1937) test that sample variances with their degrees of freedom
// estimate one variance: M / C against chi-squared on (groups - 1), with
// M = (sum df) ln(pooled) - sum df_i ln s_i^2 and
// C = 1 + (sum 1/df_i - 1/sum df) / (3 (groups - 1)). As SciPy's
// scipy.stats.bartlett, from the variances instead of the samples.
struct Bartlett {
  double statistic = 0;
  double p_value = 1;
  double pooled_var = std::numeric_limits<double>::quiet_NaN();  // sum df_i s_i^2 / sum df_i
  double pooled_df = 0;                                          // sum df_i
};
Bartlett bartlett(std::span<const double> var, std::span<const double> df);

// The prior for a family of sample variances. When Bartlett's test at 1 %
// finds them consistent with one variance, the prior is their pooled
// variance with the pooled degrees of freedom: with two degrees of freedom
// per comparison, Smyth's moment estimate of the prior df scatters from 5 to
// infinity across families drawn from one variance, and a finite one pulls
// the prior variance down by digamma(d0/2) - log(d0/2) (12 % at d0 = 8), a
// bias every comparison of the gate then shares. Otherwise Smyth's moment
// estimator (limma's fitFDist without covariates). Entries with df <= 0 or a
// variance that is not positive and finite are left out; fewer than three
// left give no prior.
VariancePrior squeeze_prior(std::span<const double> var, std::span<const double> df);

// The pooled variance of the family as a prior, only when Bartlett's test
// at 1 % takes them for one variance; else no prior (df 0). For the trial
// noise inside runs, where each comparison's own estimate has tens of
// degrees of freedom and a gate mixes a 1 %-CV benchmark with a 50 % one.
VariancePrior pooled_if_homogeneous(std::span<const double> var, std::span<const double> df);

// The x with trigamma(x) = y, by Newton's method as limma's trigammaInverse.
double trigamma_inverse(double y);

struct TwoLevel {
  bool spread_known = false;  // tau could be estimated (two runs, or a prior); else only trial noise counts
  double diff = 0;            // candidate mean - mean of the baseline runs' means
  double se = std::numeric_limits<double>::quiet_NaN();
  double df = std::numeric_limits<double>::quiet_NaN();
  double t = 0;
  double p_two_sided = 1;
  double low = std::numeric_limits<double>::quiet_NaN(), high = std::numeric_limits<double>::quiet_NaN();
  double tau2 = 0;  // between-run variance used (moderated, at least 0)
  // The standard error D would keep with any number of candidate trials: the
  // runs' spread and the baseline's own trial noise.
  double se_floor = 0;
};

// D with its interval at `level`. An empty candidate or no baseline run gives
// p = 1. When the spread is unknown (one run and no prior) the run level is
// left out and D is judged on the trial noise alone (spread_known false).
TwoLevel two_level_test(std::span<const std::vector<double>> base_runs, std::span<const double> cand,
                        const RunSpread& spread, const VariancePrior& prior, double level = 0.95);

// Rare hiccups of the runs of one comparison (a trial 10-30 % off on a busy
// machine), left out of the run-level test so that one hiccup does not move a
// run's mean by a run effect's worth. A value is one when it lies further
// from its own run's median than `mads` times the scale of every run's
// deviations from its own median (1.4826 times their median absolute value,
// pooled so that five-trial runs share a steady scale) and further than
// `min_distance`; at most `max_fraction` of a run's values (more is a mode of
// that run, and kept). No value is left out when fewer than 8 deviations are
// pooled or their scale is 0. The baseline and the candidate are trimmed by
// the same rule, so the test stays symmetric.
struct RunsTrimmed {
  std::vector<std::vector<double>> runs;
  std::vector<int> left_out;  // per run
};
RunsTrimmed leave_out_run_hiccups(std::span<const std::vector<double>> runs, double mads, double min_distance,
                                  double max_fraction);

// Smallest |shift| a two-sided test at `alpha` detects with `power`, given the
// standard error of the estimate and its degrees of freedom (normal
// quantiles when df is infinite): (t_{1-alpha/2} + t_power) se.
double detectable_shift(double se, double df, double alpha, double power);

}  // namespace perfgate::stats
