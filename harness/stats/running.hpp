#pragma once
// Two small things several modules need, written once: running moments of a
// series seen one value at a time, and a fixed seeded random source.

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace perfgate::stats {

// Welford's running moments (Welford 1962, Technometrics 4(3)): count, mean,
// sum of squared deviations and extremes, stable for long series with a
// large mean, without keeping the values.
struct RunningMoments {
  long long n = 0;
  double mean = 0, m2 = 0, min = 0, max = 0;

  void add(double v) {
    ++n;
    const double d = v - mean;
    mean += d / static_cast<double>(n);
    m2 += d * (v - mean);
    min = n == 1 ? v : std::min(min, v);
    max = n == 1 ? v : std::max(max, v);
  }
  double variance() const { return n > 1 ? m2 / static_cast<double>(n - 1) : 0; }
  double stddev() const { return std::sqrt(variance()); }
};

// The SplitMix64 finaliser (Steele, Lea & Flood 2014, "Fast splittable
// pseudorandom number generators", OOPSLA): spreads nearby inputs (a seed
// and segment bounds) over unrelated 64-bit values.
constexpr std::uint64_t splitmix64_mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// SplitMix64 as a generator: fixed and tiny, so a seeded draw is the same on
// every platform and call, and several times cheaper than mt19937_64. The
// one seeded random source of perfgate: trial order, permutation and
// bootstrap draws, reservoirs and subsamples (perfgate-sim, a workload,
// keeps its own).
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : m_state(seed) {}
  std::uint64_t next() {
    const std::uint64_t z = splitmix64_mix(m_state);
    m_state += 0x9e3779b97f4a7c15ull;
    return z;
  }
  // Uniform in (0, 1) from the top 53 bits.
  double uniform01() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1.0p-53; }
  // Uniform integer in [0, bound), bound > 0, unbiased: the lowest
  // 2^64 mod bound raw values are drawn again, so every residue is equally
  // likely (a redraw has probability below bound / 2^64). Written out, not
  // std::uniform_int_distribution, whose mapping differs between standard
  // libraries: a recorded seed must give the same draws everywhere.
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t reject_below = (0 - bound) % bound;  // 2^64 mod bound
    for (;;) {
      const std::uint64_t r = next();
      if (r >= reject_below) return r % bound;
    }
  }

 private:
  std::uint64_t m_state;
};

}  // namespace perfgate::stats
