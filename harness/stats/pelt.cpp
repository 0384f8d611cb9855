#include "harness/stats/pelt.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "harness/stats/descriptive.hpp"

namespace perfgate::stats {

double noise_sigma(std::span<const double> x) {
  if (x.size() < 3) return 0;
  std::vector<double> d;
  d.reserve(x.size() - 1);
  for (std::size_t i = 1; i < x.size(); ++i) d.push_back(std::fabs(x[i] - x[i - 1]));
  // For N(0, s^2) noise a difference is N(0, 2 s^2): its median absolute value
  // is 0.6745 sqrt(2) s.
  return median(d) / (0.6744897501960817 * std::sqrt(2.0));
}

std::vector<std::size_t> pelt_mean(std::span<const double> x, const PeltOptions& opt) {
  const std::size_t n = x.size();
  const std::size_t m = std::max<std::size_t>(1, opt.min_segment);
  if (n < 2 * m) return {};
  double sigma = opt.sigma > 0 ? opt.sigma : noise_sigma(x);
  if (!(sigma > 0)) {
    // No noise: any change is exact. Scale by the spread so costs stay finite.
    double lo = *std::min_element(x.begin(), x.end()), hi = *std::max_element(x.begin(), x.end());
    if (!(hi > lo)) return {};
    sigma = (hi - lo) * 1e-6;
  }
  const double inv_var = 1.0 / (sigma * sigma);
  const double beta = opt.penalty > 0 ? opt.penalty : 2 * std::log(static_cast<double>(n));
  // Prefix sums of x and x^2 (centred on the first value for precision): the
  // cost of x[a, b) is (S2 - S1^2 / len) / sigma^2.
  std::vector<double> s1(n + 1, 0), s2(n + 1, 0);
  const double c = x[0];
  for (std::size_t i = 0; i < n; ++i) {
    const double v = x[i] - c;
    s1[i + 1] = s1[i] + v;
    s2[i + 1] = s2[i] + v * v;
  }
  auto cost = [&](std::size_t a, std::size_t b) {
    const double len = static_cast<double>(b - a);
    const double sum = s1[b] - s1[a];
    return std::max(0.0, (s2[b] - s2[a]) - sum * sum / len) * inv_var;
  };
  // F[t]: the optimal penalised cost of x[0, t); last[t]: where its last segment starts.
  std::vector<double> f(n + 1, std::numeric_limits<double>::infinity());
  std::vector<std::size_t> last(n + 1, 0);
  f[0] = -beta;
  std::vector<std::size_t> candidates = {0};
  for (std::size_t t = m; t <= n; ++t) {
    // The best start of the segment that ends at t, among candidates at least m before it.
    double best = std::numeric_limits<double>::infinity();
    std::size_t arg = 0;
    for (std::size_t s : candidates) {
      if (t - s < m) continue;
      const double v = f[s] + cost(s, t) + beta;
      if (v < best) best = v, arg = s;
    }
    f[t] = best;
    last[t] = arg;
    // Pruning (Killick et al. 2012, theorem 3.1 with K = 0): a start s whose
    // F[s] + cost(s, t) already exceeds F[t] can never be optimal later.
    std::vector<std::size_t> kept;
    kept.reserve(candidates.size() + 1);
    for (std::size_t s : candidates)
      if (t - s < m || f[s] + cost(s, t) <= f[t]) kept.push_back(s);
    if (t + m <= n) kept.push_back(t);  // a segment may still start here
    candidates = std::move(kept);
  }
  std::vector<std::size_t> out;
  for (std::size_t t = n; t > 0; t = last[t])
    if (last[t] > 0) out.push_back(last[t]);
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace perfgate::stats
