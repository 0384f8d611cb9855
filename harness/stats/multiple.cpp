#include "harness/stats/multiple.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>

namespace perfgate::stats {

namespace {

// Positions of the non-NaN p-values in ascending order of p. Like R's
// p.adjust, NaN entries (R's NA) are left out of the family: they do not
// count towards n and come back as NaN. Equal p-values get equal adjusted
// values whatever their order, so the sort need not be stable for the values;
// stable keeps the arithmetic order reproducible anyway.
std::vector<std::size_t> ascending_order(std::span<const double> p) {
  std::vector<std::size_t> order;
  order.reserve(p.size());
  for (std::size_t i = 0; i < p.size(); ++i)
    if (!std::isnan(p[i])) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p[a] < p[b]; });
  return order;
}

}  // namespace

std::vector<double> benjamini_hochberg(std::span<const double> p) {
  std::vector<double> adjusted(p.size(), std::numeric_limits<double>::quiet_NaN());
  const auto order = ascending_order(p);
  const auto n = static_cast<double>(order.size());
  // Step-up: the i-th smallest (1-based) becomes min over j >= i of n / j * p_(j),
  // a running minimum from the largest p down (R: cummin(n / i * p[o]) with o decreasing).
  double running_min = 1.0;
  for (std::size_t r = order.size(); r-- > 0;) {
    const double scaled = n / static_cast<double>(r + 1) * p[order[r]];
    running_min = std::min(running_min, scaled);
    adjusted[order[r]] = running_min;
  }
  return adjusted;
}

std::vector<double> holm(std::span<const double> p) {
  std::vector<double> adjusted(p.size(), std::numeric_limits<double>::quiet_NaN());
  const auto order = ascending_order(p);
  const auto n = order.size();
  // Step-down: the i-th smallest (1-based) becomes max over j <= i of
  // (n - j + 1) p_(j), capped at 1 (R: pmin(1, cummax((n - i + 1) * p[o]))).
  double running_max = 0.0;
  for (std::size_t r = 0; r < n; ++r) {
    const double scaled = static_cast<double>(n - r) * p[order[r]];
    running_max = std::max(running_max, scaled);
    adjusted[order[r]] = std::min(1.0, running_max);
  }
  return adjusted;
}

}  // namespace perfgate::stats
