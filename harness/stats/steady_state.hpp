#pragma once
// Where a trial's step series reaches its steady state, and what kind of
// series it is (`warmup: auto`). Adapted from Barrett, Bolz-Tereick,
// Killick, Mount & Tratt 2017, "Virtual Machine Warmup Blows Hot and Cold"
// (OOPSLA): change points by PELT on the series, segments judged equivalent
// when their levels differ by less than a relative tolerance (or the noise),
// and the steady state starting where the trailing run of segments
// equivalent to the last one starts. Two adaptations to short training series:
// leading compile steps (graph capture, kernel compilation: 3x and more the
// steady level) are cut first and reported on their own, so one 10-100x step
// does not dominate the change-point costs; and "no steady state" means the
// trailing equivalent run is too short to summarise (under a quarter of the
// series after the compile steps, or fewer than min_steady steps).

#include <cstddef>
#include <span>
#include <string_view>

namespace perfgate::stats {

enum class SeriesClass { Flat, Warmup, Slowdown, NoSteadyState };
std::string_view to_string(SeriesClass c);

struct SteadyStateOptions {
  double penalty_per_log_n = 6;     // PELT penalty: this many log(n), in noise units (tests/bench/warmup_accuracy)
  double equivalence_rel = 0.02;    // segments within 2 % of each other are one level...
  double equivalence_sigmas = 1.0;  // ...or within this many noise standard deviations
  double compile_factor = 3;        // a leading step this many times the steady median is a compile step
  std::size_t max_compile_steps = 10;
  std::size_t min_steady = 5;      // fewest steady steps that still make a steady state
  double min_steady_share = 0.25;  // of the series after the compile steps
  std::size_t min_segment = 3;
  double clip_sigmas = 3;  // a step further than this from its neighbours' median is a spike, clipped
};

struct SteadyState {
  SeriesClass kind = SeriesClass::Flat;
  std::size_t compile_steps = 0;  // leading steps cut as compile steps
  std::size_t steady_start = 0;   // index of the first steady step (after the compile steps)
  std::size_t change_points = 0;  // PELT's, after the compile steps
  double steady_median = 0;       // of x[steady_start, end)
};

// The classification of one series (in step order). Fewer than
// 2 * min_segment + compile steps is Flat with nothing cut but compile steps.
SteadyState classify_steady_state(std::span<const double> x, const SteadyStateOptions& opt = {});

}  // namespace perfgate::stats
