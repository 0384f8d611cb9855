#pragma once
// Steps far above their neighbours in a long series (soak runs): a
// checkpoint, a GC pause, a collective timeout.

#include <cstddef>
#include <span>
#include <vector>

namespace perfgate::stats {

struct Stall {
  std::size_t index = 0;  // position in the series
  double value = 0;
  double baseline = 0;  // rolling median around it
  double ratio = 0;     // value / baseline
};

// Points far above their rolling median (a window of `window` points
// centred on each): value > factor * median and value - median > mad_k *
// MAD-scale of the window. Steps that stall for a checkpoint, a GC pause, a
// collective timeout.
std::vector<Stall> find_stalls(std::span<const double> y, std::size_t window = 51, double factor = 3.0,
                               double mad_k = 6.0);

}  // namespace perfgate::stats
