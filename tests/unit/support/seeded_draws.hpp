#pragma once
// Draws for generated test and benchmark data, from mt19937_64 (whose output
// the standard fixes) by formulas written out here, so the data are the same
// with every standard library (std's distributions are not). The harness
// itself draws from stats::SplitMix64.

#include <cmath>
#include <numbers>
#include <random>

namespace perfgate::test {

// Uniform in (0, 1) from the top 53 bits.
inline double uniform01(std::mt19937_64& gen) { return (static_cast<double>(gen() >> 11) + 0.5) * 0x1.0p-53; }

// Standard normal by Box-Muller (Box & Muller 1958), one value per two draws.
inline double std_normal(std::mt19937_64& gen) {
  const double u1 = uniform01(gen), u2 = uniform01(gen);
  return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
}

}  // namespace perfgate::test
