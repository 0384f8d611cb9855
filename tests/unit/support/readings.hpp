#pragma once
// Looking up one series in a sampler's readings, for the sampling tests.

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "harness/sampling/sampler.hpp"

namespace perfgate::test {

// The value of `metric` among `readings`; nullopt when the sampler gave none.
inline std::optional<double> value(const std::vector<sampling::Reading>& readings, const std::string& metric) {
  auto it =
      std::find_if(readings.begin(), readings.end(), [&](const sampling::Reading& x) { return x.metric == metric; });
  if (it == readings.end()) return std::nullopt;
  return it->value;
}

}  // namespace perfgate::test
