#include "harness/stats/step_series.hpp"

#include <algorithm>
#include <cmath>

#include "harness/stats/descriptive.hpp"

namespace perfgate::stats {

StepSeries::StepSeries(WarmupRule rule, std::uint64_t reservoir_seed, SteadyStateOptions auto_options)
    : m_rule(rule), m_auto_options(auto_options), m_reservoir(reservoir_seed) {}

void StepSeries::keep_steady(double v) {
  // Running moments: exact over any number of values.
  m_moments.add(v);
  if (v > 0)
    m_inverse_sum += 1.0 / v;
  else
    m_all_positive = false;
  if (m_steady.size() < k_max_kept) {
    m_steady.push_back(v);
    return;
  }
  // Reservoir sampling (Vitter's algorithm R) over splitmix64: every value so
  // far is kept with the same probability.
  auto j = m_reservoir.next() % static_cast<std::uint64_t>(m_moments.n);
  if (j < k_max_kept) m_steady[static_cast<std::size_t>(j)] = v;
}

void StepSeries::add(double t_s, double v) {
  if (m_n_total == 0) m_first_value = v;
  ++m_n_total;
  if (!std::isfinite(v)) {
    ++m_n_nonfinite;
    return;
  }
  switch (m_rule.kind) {
    case WarmupRule::Kind::None:
      keep_steady(v);
      break;
    case WarmupRule::Kind::Steps:
      // Warm-up steps count per metric: the first N values of each.
      if (static_cast<double>(m_n_total - 1) >= m_rule.amount) keep_steady(v);
      break;
    case WarmupRule::Kind::Seconds:
      if (t_s >= m_rule.amount) keep_steady(v);
      break;
    case WarmupRule::Kind::Auto:
      if (m_resolved) {
        keep_steady(v);
        break;
      }
      m_head.push_back(v);
      if (m_head.size() >= (m_deferred ? 2 : 1) * k_auto_window) {
        auto s = classify(m_larger_is_slower);
        resolve(s.steady_start, s);
      }
      break;
  }
}

SteadyState StepSeries::classify(bool larger_is_slower) const {
  if (larger_is_slower) return classify_steady_state(m_head, m_auto_options);
  // Rates: larger is faster; the classifier reads times.
  std::vector<double> times;
  times.reserve(m_head.size());
  for (double v : m_head) times.push_back(v != 0 ? 1.0 / v : 0.0);
  auto s = classify_steady_state(times, m_auto_options);
  s.steady_median =
      s.steady_start < m_head.size() ? median(std::span<const double>(m_head).subspan(s.steady_start)) : 0;
  return s;
}

void StepSeries::resolve(std::size_t cut, const SteadyState& state) {
  if (m_resolved) return;
  m_resolved = true;
  m_steady_state = state;
  m_steady_state->steady_start = std::min(cut, m_head.size());
  for (std::size_t i = m_steady_state->steady_start; i < m_head.size(); ++i) keep_steady(m_head[i]);
  std::vector<double>().swap(m_head);
}

StepSummary StepSeries::finish(bool larger_is_slower) {
  StepSummary r;
  r.n_total = m_n_total;
  r.n_nonfinite = m_n_nonfinite;
  r.first_value = m_first_value;
  if (m_rule.kind == WarmupRule::Kind::Auto) {
    if (!m_resolved) {
      auto s = classify(larger_is_slower);
      resolve(s.steady_start, s);
    }
    r.steady_state = m_steady_state;
  }
  const long long n = m_moments.n;
  r.n_steady = n;
  if (n == 0) return r;
  std::sort(m_steady.begin(), m_steady.end());
  r.mean = m_moments.mean;
  r.median = quantile_sorted(m_steady, 0.5);
  r.p90 = quantile_sorted(m_steady, 0.9);
  r.p99 = quantile_sorted(m_steady, 0.99);
  r.min = m_moments.min;
  r.max = m_moments.max;
  r.stddev = m_moments.stddev();
  r.harmonic = m_all_positive && m_inverse_sum > 0 ? static_cast<double>(n) / m_inverse_sum : m_moments.mean;
  r.sampled = static_cast<std::size_t>(n) > m_steady.size();
  std::vector<double>().swap(m_steady);
  return r;
}

}  // namespace perfgate::stats
