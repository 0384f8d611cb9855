#include "harness/stats/steady_state.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "harness/stats/descriptive.hpp"
#include "harness/stats/pelt.hpp"

namespace perfgate::stats {

std::string_view to_string(SeriesClass c) {
  switch (c) {
    case SeriesClass::Flat:
      return "flat";
    case SeriesClass::Warmup:
      return "warm-up";
    case SeriesClass::Slowdown:
      return "slowdown";
    case SeriesClass::NoSteadyState:
      return "no steady state";
  }
  return "?";
}

namespace {

// Spikes (a GC pause, a checkpoint write) are single steps far off their
// neighbours; a mean-change cost would pay a change point for each. Each step
// is pulled to within clip_sigmas of the median of its 5-step neighbourhood,
// which follows a level shift within two steps and ignores an isolated spike.
std::vector<double> clip_spikes(std::span<const double> x, double sigma, double clip_sigmas) {
  std::vector<double> y(x.begin(), x.end());
  if (!(sigma > 0) || x.size() < 5) return y;
  const double bound = clip_sigmas * sigma;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const std::size_t a = i < 2 ? 0 : std::min(i - 2, x.size() - 5);
    double w[5];
    std::copy(x.begin() + static_cast<std::ptrdiff_t>(a), x.begin() + static_cast<std::ptrdiff_t>(a + 5), w);
    std::nth_element(w, w + 2, w + 5);
    y[i] = std::clamp(x[i], w[2] - bound, w[2] + bound);
  }
  return y;
}

// The noise a segment mean sees. Step times are autocorrelated (a slow step
// is followed by a slow one: frequency, cache, a neighbour's load), and the
// variance of a mean of n AR(1) steps is sigma^2 (1 + rho) / (1 - rho) / n,
// not sigma^2 / n. From the residuals around a first segmentation's medians:
// their robust spread and lag-1 autocorrelation give the long-run sigma.
double long_run_sigma(std::span<const double> y, const std::vector<std::size_t>& cps) {
  std::vector<double> r(y.size());
  std::size_t a = 0;
  for (std::size_t k = 0; k <= cps.size(); ++k) {
    const std::size_t b = k < cps.size() ? cps[k] : y.size();
    const double level = median(y.subspan(a, b - a));
    for (std::size_t i = a; i < b; ++i) r[i] = y[i] - level;
    a = b;
  }
  std::vector<double> abs_r(r.size());
  for (std::size_t i = 0; i < r.size(); ++i) abs_r[i] = std::fabs(r[i]);
  const double sd = median(abs_r) / 0.6744897501960817;
  if (!(sd > 0)) return 0;
  double num = 0, den = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const double v = std::clamp(r[i], -3 * sd, 3 * sd);  // a residual spike does not set rho
    den += v * v;
    if (i > 0) num += v * std::clamp(r[i - 1], -3 * sd, 3 * sd);
  }
  const double rho = den > 0 ? std::clamp(num / den, 0.0, 0.9) : 0.0;
  return sd * std::sqrt((1 + rho) / (1 - rho));
}

}  // namespace

SteadyState classify_steady_state(std::span<const double> x, const SteadyStateOptions& opt) {
  SteadyState r;
  const std::size_t n = x.size();
  if (n == 0) return r;
  // Compile steps: leading steps far above the level of the series' second
  // half (where a warm-up is over in any series worth summarising).
  const double tail_median = median(x.subspan(n / 2));
  while (r.compile_steps < std::min(opt.max_compile_steps, n / 4) && tail_median > 0 &&
         x[r.compile_steps] > opt.compile_factor * tail_median)
    ++r.compile_steps;
  auto rest = x.subspan(r.compile_steps);
  r.steady_start = r.compile_steps;
  r.steady_median = rest.empty() ? 0 : median(rest);
  const std::size_t m = rest.size();
  if (m < 2 * opt.min_segment) return r;

  const auto y = clip_spikes(rest, noise_sigma(rest), opt.clip_sigmas);
  PeltOptions po;
  po.sigma = noise_sigma(y);
  po.min_segment = opt.min_segment;
  po.penalty = opt.penalty_per_log_n * std::log(static_cast<double>(m));
  auto cps = pelt_mean(y, po);
  // A second pass with the long-run sigma: short-term differences understate
  // the noise of autocorrelated series, and every wobble would be a change.
  const double sigma = std::max(po.sigma, long_run_sigma(y, cps));
  if (sigma > po.sigma) {
    po.sigma = sigma;
    cps = pelt_mean(y, po);
  }
  r.change_points = cps.size();
  if (cps.empty()) return r;  // flat

  // Segments and their levels (medians: a spike does not move a level).
  std::vector<std::size_t> bounds = {0};
  bounds.insert(bounds.end(), cps.begin(), cps.end());
  bounds.push_back(m);
  std::vector<double> level;
  for (std::size_t i = 0; i + 1 < bounds.size(); ++i)
    level.push_back(median(rest.subspan(bounds[i], bounds[i + 1] - bounds[i])));
  const double last = level.back();
  auto equivalent = [&](double a, double b) {
    return std::fabs(a - b) <= std::max(opt.equivalence_rel * std::fabs(b), opt.equivalence_sigmas * sigma);
  };
  std::size_t first_steady = level.size() - 1;
  while (first_steady > 0 && equivalent(level[first_steady - 1], last)) --first_steady;
  const std::size_t start = bounds[first_steady];
  r.steady_start = r.compile_steps + start;
  r.steady_median = median(rest.subspan(start));
  if (first_steady == 0) return r;  // every segment one level: flat
  const std::size_t steady = m - start;
  if (steady < opt.min_steady || static_cast<double>(steady) < opt.min_steady_share * static_cast<double>(m)) {
    r.kind = SeriesClass::NoSteadyState;
    return r;
  }
  // Before the steady run the series was slower (a warm-up) or faster (it
  // slowed down): the segment just before it says which.
  r.kind = level[first_steady - 1] > last ? SeriesClass::Warmup : SeriesClass::Slowdown;
  return r;
}

}  // namespace perfgate::stats
