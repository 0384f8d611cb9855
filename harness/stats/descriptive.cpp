#include "harness/stats/descriptive.hpp"

#include <algorithm>
#include <cmath>

#include <boost/math/distributions/binomial.hpp>

#include "harness/stats/running.hpp"

namespace perfgate::stats {

double mean(std::span<const double> x) {
  if (x.empty()) return 0;
  // Kahan-compensated: step series run to millions of values.
  double sum = 0, c = 0;
  for (double v : x) {
    double y = v - c;
    double t = sum + y;
    c = (t - sum) - y;
    sum = t;
  }
  return sum / static_cast<double>(x.size());
}

double harmonic_mean(std::span<const double> x) {
  if (x.empty()) return 0;
  double inv = 0;
  for (double v : x) {
    if (!(v > 0)) return mean(x);
    inv += 1.0 / v;
  }
  return static_cast<double>(x.size()) / inv;
}

double stddev(std::span<const double> x) {
  if (x.size() < 2) return 0;
  RunningMoments m;  // Welford: stable for long series with a large mean
  for (double v : x) m.add(v);
  return m.stddev();
}

void PooledVariance::add(std::span<const double> group) {
  if (group.size() < 2) return;
  const double mu = mean(group);
  for (double v : group) sum_sq += (v - mu) * (v - mu);
  df += static_cast<double>(group.size() - 1);
}

double PooledVariance::variance() const { return df > 0 ? sum_sq / df : 0; }

double cv(std::span<const double> x) {
  double m = mean(x);
  if (x.size() < 2 || m == 0) return 0;
  return stddev(x) / std::fabs(m);
}

double quantile_sorted(std::span<const double> s, double p) {
  if (s.empty()) return 0;
  p = std::clamp(p, 0.0, 1.0);
  double h = (static_cast<double>(s.size()) - 1) * p;
  auto lo = static_cast<std::size_t>(std::floor(h));
  std::size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (h - static_cast<double>(lo)) * (s[hi] - s[lo]);
}

double quantile(std::span<const double> x, double p) {
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  return quantile_sorted(s, p);
}

double median(std::span<const double> x) { return quantile(x, 0.5); }

double scaled_mad(std::span<const double> x) {
  if (x.empty()) return 0;
  const double m = median(x);
  std::vector<double> dev(x.size());
  std::transform(x.begin(), x.end(), dev.begin(), [m](double v) { return std::fabs(v - m); });
  return 1.482602218505602 * median(dev);  // 1 / Phi^-1(3/4)
}

std::vector<std::size_t> rare_outliers(std::span<const double> x, double mads, double max_fraction,
                                       double min_distance) {
  std::vector<std::size_t> out;
  if (x.size() < 8 || !(mads > 0)) return out;
  const double m = median(x), s = scaled_mad(x);
  if (!(s > 0)) return out;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (std::fabs(x[i] - m) > std::max(mads * s, min_distance)) out.push_back(i);
  if (static_cast<double>(out.size()) > max_fraction * static_cast<double>(x.size())) out.clear();
  return out;
}

MedianInterval median_ci(std::span<const double> x, double level) {
  MedianInterval r;
  if (x.empty()) return r;
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  const std::size_t n = s.size();
  boost::math::binomial_distribution<double> b(static_cast<double>(n), 0.5);
  std::size_t best_k = 0;
  for (std::size_t k = 1; k <= n / 2; ++k) {
    double coverage = 1 - 2 * boost::math::cdf(b, static_cast<double>(k - 1));
    if (coverage >= level)
      best_k = k;
    else
      break;
  }
  std::size_t k = best_k == 0 ? 1 : best_k;
  r.low = s[k - 1];
  r.high = s[n - k];
  r.coverage = n == 1 ? 0 : 1 - 2 * boost::math::cdf(b, static_cast<double>(k - 1));
  return r;
}

}  // namespace perfgate::stats
