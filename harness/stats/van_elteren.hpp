#pragma once
// A test of one shift shared by several independent two-sample comparisons:
// van Elteren's stratified Wilcoxon rank-sum test (van Elteren 1960, "On the
// combination of independent two sample tests of Wilcoxon", Bull. Int. Stat.
// Inst. 37:351-361; Lehmann 1975, Nonparametrics, section 3.3). Each stratum
// (a configuration of a gate) is ranked on its own, and its U statistic
// enters the sum with weight 1 / (N_i + 1), which makes the test locally most
// powerful against a shift common to every stratum. A 2x slowdown of twelve
// configurations with 3 trials a side is invisible to any one of their exact
// tests (p >= 0.1 each) and overwhelming together.

#include <span>
#include <vector>

namespace perfgate::stats {

struct StratumSamples {
  std::span<const double> x;  // baseline
  std::span<const double> y;  // candidate
};

struct VanElteren {
  double z = 0;  // > 0 when y tends to be larger than x
  double p_two_sided = 1;
  double p_greater = 1;  // y larger
  double p_less = 1;     // y smaller
  int strata = 0;        // strata that entered (both sides non-empty, some spread)
};

// Normal approximation of the weighted sum, without continuity correction
// (the sum of several strata is nearly continuous). A single stratum gives
// scipy.stats.mannwhitneyu(y, x, method="asymptotic", use_continuity=False).
// Strata with an empty side or no spread at all carry no information and are
// left out; with none left every p is 1.
VanElteren van_elteren(std::span<const StratumSamples> strata);

// Stouffer's combination of independent z statistics, sum(z_i) / sqrt(k)
// (Stouffer et al. 1949, The American Soldier, vol. 1), two-sided. Empty: p = 1.
struct Stouffer {
  double z = 0;
  double p_two_sided = 1;
};
Stouffer stouffer(std::span<const double> z);

// The standard normal deviate whose two-sided p is `p_two_sided`, with the
// sign of `sign`: how a t (or any) test enters Stouffer's sum. p = 0 gives
// +-40 (beyond any double's tail), p = 1 gives 0.
double normal_deviate(double p_two_sided, double sign);

}  // namespace perfgate::stats
