#include "harness/stats/van_elteren.hpp"

#include <algorithm>
#include <cmath>

#include <boost/math/distributions/normal.hpp>

#include "harness/stats/mann_whitney.hpp"

namespace perfgate::stats {

namespace {

double normal_sf(double z) {
  static const boost::math::normal_distribution<double> k_std_normal(0.0, 1.0);
  return boost::math::cdf(boost::math::complement(k_std_normal, z));
}

}  // namespace

VanElteren van_elteren(std::span<const StratumSamples> strata) {
  VanElteren r;
  double sum = 0, var = 0;
  for (const auto& s : strata) {
    // U of y against x: large when the candidate's values are large.
    const UNull u = u_with_null(s.y, s.x);
    if (!(u.sd > 0)) continue;
    const double w = 1.0 / (static_cast<double>(s.x.size() + s.y.size()) + 1.0);
    sum += w * (u.u - u.mean);
    var += w * w * u.sd * u.sd;
    ++r.strata;
  }
  if (!(var > 0)) return r;
  r.z = sum / std::sqrt(var);
  r.p_greater = normal_sf(r.z);
  r.p_less = normal_sf(-r.z);
  r.p_two_sided = std::min(1.0, 2 * normal_sf(std::fabs(r.z)));
  return r;
}

double normal_deviate(double p_two_sided, double sign) {
  static const boost::math::normal_distribution<double> k_std_normal(0.0, 1.0);
  if (!(p_two_sided < 1)) return 0;
  const double upper = 0.5 * std::max(p_two_sided, 0.0);
  const double z = upper > 1e-300 ? boost::math::quantile(boost::math::complement(k_std_normal, upper)) : 40.0;
  return std::copysign(z, sign);
}

Stouffer stouffer(std::span<const double> z) {
  Stouffer r;
  if (z.empty()) return r;
  double sum = 0;
  for (double v : z) sum += v;
  r.z = sum / std::sqrt(static_cast<double>(z.size()));
  r.p_two_sided = std::min(1.0, 2 * normal_sf(std::fabs(r.z)));
  return r;
}

}  // namespace perfgate::stats
