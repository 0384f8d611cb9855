#pragma once
// Change points in the mean of a series by PELT, Pruned Exact Linear Time
// (Killick, Fearnhead & Eckley 2012, "Optimal detection of changepoints with
// a linear computational cost", JASA 107:1590-1598): the segmentation that
// minimises the sum of segment costs plus a penalty per change point, found
// exactly by dynamic programming, with candidates pruned once they can no
// longer be optimal. The cost of a segment is its sum of squared deviations
// from its mean over sigma^2 (a normal mean-change model, sigma known), so
// the penalty reads in units of "noise": a change of d sigma over m points
// pays when m d^2 / 2 exceeds it, roughly.

#include <cstddef>
#include <span>
#include <vector>

namespace perfgate::stats {

struct PeltOptions {
  double penalty = 0;  // per change point, in cost units; <= 0: 2 log(n) (BIC-like)
  double sigma = 0;    // noise standard deviation; <= 0: estimated (noise_sigma)
  std::size_t min_segment = 2;
};

// First positions of the new segments, increasing; empty for a series with no
// change (or shorter than 2 * min_segment, or of zero noise and no change).
std::vector<std::size_t> pelt_mean(std::span<const double> x, const PeltOptions& opt = {});

// A standard deviation of the noise that level shifts do not inflate: the
// median absolute first difference / (0.6745 sqrt 2) (a MAD of differences,
// as the changepoint literature estimates it; Fryzlewicz 2014). 0 for fewer
// than 3 points.
double noise_sigma(std::span<const double> x);

}  // namespace perfgate::stats
