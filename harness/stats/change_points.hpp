#pragma once
// Change points in a series of per-run values (history of one configuration
// and metric): E-divisive means (Matteson & James 2014, JASA 109:334) with a
// seeded permutation test, applied recursively (bisection) to find several.

#include <cstdint>
#include <span>
#include <vector>

namespace perfgate::stats {

struct ChangePointOptions {
  double significance = 0.01;  // a change point needs permutation p-value <= significance
  int permutations = 199;
  int min_segment = 4;  // fewest points on either side of a change (values below 2 act as 2)
  int max_change_points = 8;
  std::uint64_t seed = 1;  // the permutation test is reproducible
};

struct ChangePoint {
  std::size_t index = 0;  // first position of the new segment
  double p_value = 1;
  double before_median = 0;    // of the segment before, up to the previous change point
  double after_median = 0;     // of the segment after, up to the next change point
  double relative_change = 0;  // after / before - 1; NaN when before_median is 0
};

// Change points in order of position. Series shorter than 2 * min_segment have
// none, and so do constant series and series with a NaN or Inf. Candidates are
// tested strongest first (largest statistic) until max_change_points are
// found; a candidate that fails its test ends the search in its own segment
// only. A permutation test stops early once significance is out of reach
// (see change_points.cpp); reported change points always ran all permutations.
std::vector<ChangePoint> e_divisive(std::span<const double> x, const ChangePointOptions& opt = {});

}  // namespace perfgate::stats
