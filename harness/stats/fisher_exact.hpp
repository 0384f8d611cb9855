#pragma once
// Fisher's exact test of a 2x2 table (Fisher 1935, "The logic of inductive
// inference"; the conditional test given both margins). perfgate uses it for
// failed trials: rows are candidate and baseline, columns failed and ok.

namespace perfgate::stats {

struct FisherExact {
  double p_greater = 1;    // P(X >= a): the first row has more in the first column than chance says
  double p_less = 1;       // P(X <= a)
  double p_two_sided = 1;  // sum of the tables no more likely than the observed one
  double odds_ratio = 1;   // (a d) / (b c): the sample odds ratio (0 or infinite at the edges, NaN for 0/0)
};

// Table [[a, b], [c, d]] of non-negative counts; X is a under the
// hypergeometric law of the margins. Equals scipy.stats.fisher_exact(table,
// alternative=...) including its relative tolerance of 1e-7 when deciding
// which tables are "no more likely" for the two-sided p. An empty table, or
// one whose margins leave one possible table, gives p = 1 everywhere.
FisherExact fisher_exact(long long a, long long b, long long c, long long d);

}  // namespace perfgate::stats
