#include "harness/stats/two_level.hpp"

#include <algorithm>
#include <cmath>

#include <boost/math/distributions/chi_squared.hpp>
#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>
#include <boost/math/special_functions/digamma.hpp>
#include <boost/math/special_functions/polygamma.hpp>
#include <boost/math/special_functions/trigamma.hpp>

#include "harness/stats/descriptive.hpp"

namespace perfgate::stats {

namespace {

constexpr double k_nan = std::numeric_limits<double>::quiet_NaN();
constexpr double k_inf = std::numeric_limits<double>::infinity();
// Bartlett's level for taking a family's variances as one. Strict, as the
// gate's own level: a family pretested as mixed falls back on Smyth's
// estimator, whose prior df scatters widely (see squeeze_prior).
constexpr double k_homogeneity_level = 0.01;
// Beyond this many degrees of freedom Student's t is the normal distribution.
constexpr double k_df_normal = 1e6;

double t_sf(double t, double df) {
  if (!(df < k_df_normal)) {
    static const boost::math::normal_distribution<double> n01(0.0, 1.0);
    return boost::math::cdf(boost::math::complement(n01, t));
  }
  const boost::math::students_t_distribution<double> dist(df);
  return boost::math::cdf(boost::math::complement(dist, t));
}

double t_quantile(double p, double df) {
  if (!(df < k_df_normal)) {
    static const boost::math::normal_distribution<double> n01(0.0, 1.0);
    return boost::math::quantile(n01, p);
  }
  const boost::math::students_t_distribution<double> dist(df);
  return boost::math::quantile(dist, p);
}

}  // namespace

RunSpread run_spread(std::span<const std::vector<double>> spread_runs, std::span<const double> cand) {
  RunSpread s;
  std::vector<double> means;
  PooledVariance within;
  double inv_n = 0;
  for (const auto& run : spread_runs) {
    if (run.empty()) continue;
    means.push_back(mean(run));
    inv_n += 1.0 / static_cast<double>(run.size());
    within.add(run);
  }
  within.add(cand);
  s.runs = static_cast<int>(means.size());
  s.within_df = within.df;
  if (within.df > 0) s.within_var = within.variance();
  if (s.runs >= 1) s.mean_inv_n = inv_n / s.runs;
  if (s.runs >= 2) {
    PooledVariance between;  // one group: the sample variance of the run means
    between.add(means);
    s.between_df = between.df;
    s.between_var = between.variance();
  }
  return s;
}

double trigamma_inverse(double y) {
  if (!(y > 0)) return k_nan;
  if (y > 1e7) return 1 / std::sqrt(y);
  if (y < 1e-6) return 1 / y;
  // trigamma is convex and decreasing; from this start Newton's steps
  // increase x monotonically to the root (Smyth 2004, limma's trigammaInverse).
  double x = 0.5 + 1 / y;
  for (int i = 0; i < 50; ++i) {
    const double tri = boost::math::trigamma(x);
    const double step = tri * (1 - tri / y) / boost::math::polygamma(2, x);
    x += step;
    if (-step / x < 1e-8) break;
  }
  return x;
}

Bartlett bartlett(std::span<const double> var, std::span<const double> df) {
  Bartlett b;
  const std::size_t n = std::min(var.size(), df.size());
  double sum_df = 0, sum_ss = 0, sum_log = 0, sum_inv = 0;
  int groups = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (!(df[i] > 0) || !(var[i] > 0) || !std::isfinite(var[i])) continue;
    ++groups;
    sum_df += df[i];
    sum_ss += df[i] * var[i];
    sum_log += df[i] * std::log(var[i]);
    sum_inv += 1 / df[i];
  }
  if (groups == 0) return b;
  b.pooled_df = sum_df;
  b.pooled_var = sum_ss / sum_df;
  if (groups < 2) return b;
  const double m = sum_df * std::log(b.pooled_var) - sum_log;
  const double c = 1 + (sum_inv - 1 / sum_df) / (3.0 * (groups - 1));
  b.statistic = std::max(0.0, m / c);
  const boost::math::chi_squared_distribution<double> chi2(groups - 1);
  b.p_value = boost::math::cdf(boost::math::complement(chi2, b.statistic));
  return b;
}

VariancePrior pooled_if_homogeneous(std::span<const double> var, std::span<const double> df) {
  VariancePrior prior;
  const std::size_t n = std::min(var.size(), df.size());
  std::size_t usable = 0;
  for (std::size_t i = 0; i < n; ++i) usable += df[i] > 0 && var[i] > 0 && std::isfinite(var[i]);
  if (usable < 3) return prior;
  if (auto b = bartlett(var, df); b.p_value > k_homogeneity_level) {
    prior.var = b.pooled_var;
    prior.df = b.pooled_df;
  }
  return prior;
}

VariancePrior squeeze_prior(std::span<const double> var, std::span<const double> df) {
  VariancePrior prior;
  // One variance as far as the family can tell: its pooled estimate, as
  // precise as all its degrees of freedom.
  if (auto pooled = pooled_if_homogeneous(var, df); pooled.df > 0) return pooled;
  std::vector<double> e, half_df;
  const std::size_t n = std::min(var.size(), df.size());
  for (std::size_t i = 0; i < n; ++i) {
    if (!(df[i] > 0) || !(var[i] > 0) || !std::isfinite(var[i])) continue;
    const double h = df[i] / 2;
    // log s^2 has mean log sigma^2 + digamma(d/2) - log(d/2) and variance trigamma(d/2).
    e.push_back(std::log(var[i]) - boost::math::digamma(h) + std::log(h));
    half_df.push_back(h);
  }
  if (e.size() < 3) return prior;
  double e_mean = 0;
  for (double v : e) e_mean += v;
  e_mean /= static_cast<double>(e.size());
  double e_var = 0, trigamma_mean = 0;
  for (std::size_t i = 0; i < e.size(); ++i) {
    e_var += (e[i] - e_mean) * (e[i] - e_mean);
    trigamma_mean += boost::math::trigamma(half_df[i]);
  }
  e_var /= static_cast<double>(e.size() - 1);
  trigamma_mean /= static_cast<double>(e.size());
  const double excess = e_var - trigamma_mean;
  if (excess > 0) {
    prior.df = 2 * trigamma_inverse(excess);
    prior.var = std::exp(e_mean + boost::math::digamma(prior.df / 2) - std::log(prior.df / 2));
  } else {
    // The variances agree no less closely than sampling alone would make them.
    prior.df = k_inf;
    prior.var = std::exp(e_mean);
  }
  return prior;
}

TwoLevel two_level_test(std::span<const std::vector<double>> base_runs, std::span<const double> cand,
                        const RunSpread& spread, const VariancePrior& prior, double level) {
  TwoLevel r;
  std::vector<double> means;
  double inv_n_sum = 0;
  for (const auto& run : base_runs) {
    if (run.empty()) continue;
    means.push_back(mean(run));
    inv_n_sum += 1.0 / static_cast<double>(run.size());
  }
  if (means.empty() || cand.empty()) return r;
  const double k = static_cast<double>(means.size());
  r.diff = mean(cand) - mean(means);

  const double sigma2 = spread.within_df > 0 ? spread.within_var : 0;
  const double within_df = spread.within_df > 0 ? spread.within_df : k_inf;
  // Within-run noise of D alone: what it is when the runs do not differ.
  const double within_part = sigma2 * (1.0 / static_cast<double>(cand.size()) + inv_n_sum / (k * k));

  // The spread of run means, moderated by the prior.
  double s2 = k_nan, df_b = 0;
  const bool own = spread.between_df > 0 && std::isfinite(spread.between_var);
  const bool has_prior = prior.df > 0 && std::isfinite(prior.var);
  if (own && has_prior) {
    if (std::isinf(prior.df))
      s2 = prior.var;
    else
      s2 = (prior.df * prior.var + spread.between_df * spread.between_var) / (prior.df + spread.between_df);
    df_b = prior.df + spread.between_df;
  } else if (own) {
    s2 = spread.between_var;
    df_b = spread.between_df;
  } else if (has_prior) {
    s2 = prior.var;
    df_b = prior.df;
  }

  double var_d = within_part, df = within_df;
  if (df_b > 0) {
    r.spread_known = true;
    r.tau2 = std::max(0.0, s2 - sigma2 * spread.mean_inv_n);
    // Var(D) = tau^2 (1 + 1/k) + within_part. Degrees of freedom by
    // Satterthwaite over the two components, the run part carrying the
    // spread's and the trial part the pooled within-run variance's: as the
    // run variance vanishes D is judged on trial noise (df_w), as it
    // dominates on the runs (df_b). With equal trials per run and no prior
    // the variance is the prediction test's s_m^2 (1 + 1/k) and the df at
    // least its k - 1.
    const double run_part = r.tau2 * (1 + 1 / k);
    var_d = run_part + within_part;
    r.se_floor = std::sqrt(run_part + sigma2 * inv_n_sum / (k * k));
    if (r.tau2 > 0) {
      // tau^2 = s2 - sigma^2 mean(1/n) carries the noise of both estimates:
      // Var(D) = a s2 + b sigma^2 with a = 1 + 1/k and b = 1/n_c +
      // sum(1/n_j)/k^2 - a mean(1/n), b below 0 once the candidate has more
      // trials than the runs did. Satterthwaite over those two terms.
      const double a = 1 + 1 / k;
      const double b = 1.0 / static_cast<double>(cand.size()) + inv_n_sum / (k * k) - a * spread.mean_inv_n;
      const double denom =
          (a * s2) * (a * s2) / df_b + (std::isinf(within_df) ? 0 : (b * sigma2) * (b * sigma2) / within_df);
      df = denom > 0 ? var_d * var_d / denom : k_inf;
    } else {
      // No run effect left over the trial noise: D is judged on the trials,
      // but only as surely as the spread of run means says so (with a
      // spread on few degrees of freedom, a close-together baseline by
      // chance must not read as proof that runs never differ).
      df = std::min(within_df, df_b);
    }
  }
  if (df_b <= 0) r.se_floor = std::sqrt(sigma2 * inv_n_sum / (k * k));
  if (!(var_d > 0)) {
    // No noise at all: any difference is exact; none is none.
    r.se = 0;
    r.df = df;
    r.p_two_sided = r.diff == 0 ? 1 : 0;
    r.low = r.high = r.diff;
    r.t = r.diff == 0 ? 0 : std::copysign(k_inf, r.diff);
    return r;
  }
  r.se = std::sqrt(var_d);
  r.df = std::min(df, k_inf);
  r.t = r.diff / r.se;
  if (!(r.df >= 1)) r.df = 1;  // fewer is an artefact of the approximation; one is the least a t has
  r.p_two_sided = std::min(1.0, 2 * t_sf(std::fabs(r.t), r.df));
  const double q = t_quantile(0.5 + std::clamp(level, 1e-12, 1 - 1e-12) / 2, r.df);
  r.low = r.diff - q * r.se;
  r.high = r.diff + q * r.se;
  return r;
}

RunsTrimmed leave_out_run_hiccups(std::span<const std::vector<double>> runs, double mads, double min_distance,
                                  double max_fraction) {
  RunsTrimmed r;
  r.runs.assign(runs.begin(), runs.end());
  r.left_out.assign(runs.size(), 0);
  if (!(mads > 0)) return r;
  std::vector<double> centre(runs.size(), 0), abs_dev;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].empty()) continue;
    std::vector<double> v = runs[i];
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    centre[i] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    if (n < 3) continue;  // one or two values say nothing about their spread around a median
    for (double x : runs[i]) abs_dev.push_back(std::fabs(x - centre[i]));
  }
  if (abs_dev.size() < 8) return r;
  auto mid = abs_dev.begin() + static_cast<std::ptrdiff_t>(abs_dev.size() / 2);
  std::nth_element(abs_dev.begin(), mid, abs_dev.end());
  double med = *mid;
  if (abs_dev.size() % 2 == 0) med = (med + *std::max_element(abs_dev.begin(), mid)) / 2;
  const double scale = 1.482602218505602 * med;  // 1 / Phi^-1(3/4)
  if (!(scale > 0)) return r;
  const double limit = std::max(mads * scale, min_distance);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    std::vector<double> kept;
    for (double x : runs[i])
      if (!(std::fabs(x - centre[i]) > limit)) kept.push_back(x);
    const std::size_t out = runs[i].size() - kept.size();
    if (out == 0 || static_cast<double>(out) > max_fraction * static_cast<double>(runs[i].size())) continue;
    r.left_out[i] = static_cast<int>(out);
    r.runs[i] = std::move(kept);
  }
  return r;
}

double detectable_shift(double se, double df, double alpha, double power) {
  if (!(se >= 0)) return k_nan;
  if (!(df >= 1)) df = 1;
  alpha = std::clamp(alpha, 1e-300, 1 - 1e-12);
  power = std::clamp(power, 1e-12, 1 - 1e-12);
  return (t_quantile(1 - alpha / 2, df) + t_quantile(power, df)) * se;
}

}  // namespace perfgate::stats
