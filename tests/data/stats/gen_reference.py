#!/usr/bin/python3
"""Reference values for tests/unit/stats (Mann-Whitney U, Hodges-Lehmann, p.adjust).

Run with Debian's interpreter (it has SciPy 1.10 and NumPy; a pyenv python
first on PATH usually has neither):

    /usr/bin/python3 tests/data/stats/gen_reference.py

Writes, next to this script:
  mann_whitney_reference.json  scipy.stats.mannwhitneyu (two-sided,
      use_continuity=True) with method='exact' and/or 'asymptotic' given
      explicitly, and Hodges-Lehmann shifts with their intervals;
  p_adjust_reference.json      R's p.adjust(p, "BH") / "holm" formulas in NumPy.

The Hodges-Lehmann shift is NumPy's median of all pairwise differences
y_j - x_i. Exact interval endpoints come from the null distribution of U
computed here independently of the C++ code, in exact integer arithmetic, as
the coefficients of the Gaussian binomial coefficient [n1 + n2 choose n1]_q
(the generating function of U), with coverage 1 - 2 P(U <= k - 1) and the
largest k reaching the level. Asymptotic endpoints use the normal
approximation with continuity and tie correction (same rule as the C++ code).
Data come from a seeded NumPy generator, so reruns give identical files.
"""

import json
import math
import os
import warnings
from fractions import Fraction

import numpy as np
import scipy
from scipy import stats

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(20240601)
LEVEL = 0.95


def distinct_sample(n, loc=100.0, scale=5.0):
    """n continuous values rounded to 1e-4; redrawn until no ties within."""
    while True:
        v = np.round(RNG.normal(loc, scale, n), 4)
        if len(np.unique(v)) == n:
            return [float(a) for a in v]


def has_ties(x, y):
    xy = np.concatenate([x, y])
    return len(np.unique(xy)) != len(xy)


def mwu(x, y, method):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zero variance: scipy divides by 0 on purpose
        r = stats.mannwhitneyu(x, y, use_continuity=True, alternative="two-sided", method=method)
    return float(r.statistic), float(r.pvalue)


# ---- exact null distribution of U, exact integers --------------------------------------------

def u_null_counts(m, n):
    """Number of orderings with U = u, for u = 0 .. m n: the coefficients of
    prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), by exact polynomial arithmetic."""
    poly = [1]
    for i in range(1, m + 1):
        grown = poly + [0] * (n + i)
        multiplied = [grown[k] - (grown[k - n - i] if k >= n + i else 0) for k in range(len(grown))]
        divided = [0] * len(multiplied)  # exact division by (1 - q^i)
        for k in range(len(multiplied)):
            divided[k] = multiplied[k] + (divided[k - i] if k >= i else 0)
        while len(divided) > 1 and divided[-1] == 0:
            divided.pop()
        poly = divided
    assert len(poly) == m * n + 1 and sum(poly) == math.comb(m + n, m)
    return poly


def hl_exact_k(m, n, level):
    counts = u_null_counts(m, n)
    total = sum(counts)
    cdf, acc = [], 0
    for c in counts:
        acc += c
        cdf.append(Fraction(acc, total))
    pairs = m * n
    k, coverage = 1, 1 - 2 * cdf[0]
    for c in range(2, (pairs + 1) // 2 + 1):
        cov = 1 - 2 * cdf[c - 1]
        if cov < level:
            break
        k, coverage = c, cov
    return k, float(coverage)


def hl_asymptotic_k(x, y, level):
    m, n = len(x), len(y)
    big_n = m + n
    _, t = np.unique(np.concatenate([x, y]), return_counts=True)
    tie_term = float((t ** 3 - t).sum())
    var = m * n / 12 * ((big_n + 1) - tie_term / (big_n * (big_n - 1)))
    if var <= 0:
        var = m * n / 12 * (big_n + 1)
    sd = math.sqrt(var)
    pairs = m * n
    k = math.floor(pairs / 2 + 0.5 + sd * stats.norm.ppf((1 - level) / 2))
    k = min(max(k, 1), (pairs + 1) // 2)
    coverage = max(0.0, 1 - 2 * stats.norm.cdf((k - 0.5 - pairs / 2) / sd))
    return k, float(coverage)


def hodges_lehmann(x, y, level=LEVEL):
    diffs = np.sort(np.subtract.outer(np.asarray(y), np.asarray(x)).ravel())
    m, n = len(x), len(y)
    exact = not has_ties(x, y) and m <= 50 and n <= 50
    k, coverage = hl_exact_k(m, n, level) if exact else hl_asymptotic_k(x, y, level)
    return {
        "x": list(x), "y": list(y), "level": level, "exact": exact,
        "shift": float(np.median(diffs)),
        "k": k, "low": float(diffs[k - 1]), "high": float(diffs[m * n - k]),
        "coverage": coverage,
    }


# ---- cases --------------------------------------------------------------------------------

def mann_whitney_cases():
    cases = []

    def add(name, x, y, methods):
        for method in methods:
            u, p = mwu(x, y, method)
            cases.append({"name": name, "x": list(x), "y": list(y), "method": method,
                          "ties": bool(has_ties(x, y)), "u": u, "p": p})

    # Textbook example of the SciPy documentation (Shier 2004): U = 17, p = 1/9 exact.
    add("shier_2004_ages", [19, 22, 16, 29, 24], [20, 11, 17, 12], ["exact", "asymptotic"])

    # Small samples without ties, every size 1..12 against itself and against other sizes,
    # some with a location shift so that small p-values are covered too.
    for n1 in range(1, 13):
        for n2 in sorted({1, 2, 3, n1, max(1, n1 - 3), n1 + 2, 12}):
            for shift in (0.0, 6.0):
                while True:
                    x = distinct_sample(n1)
                    y = distinct_sample(n2, loc=100.0 + shift)
                    if not has_ties(x, y):
                        break
                add(f"small_{n1}v{n2}_shift{shift:g}", x, y, ["exact", "asymptotic"])

    # Complete separation: the smallest exact p-values, 2 / C(n1 + n2, n1).
    for n1, n2 in [(3, 4), (8, 8), (10, 10), (12, 5)]:
        x = [float(i) for i in range(n1)]
        y = [float(100 + i) for i in range(n2)]
        add(f"separated_{n1}v{n2}", x, y, ["exact", "asymptotic"])
        add(f"separated_{n2}v{n1}_reversed", y, x, ["exact", "asymptotic"])

    # Ties (between and within samples): asymptotic with tie correction.
    for n1, n2, hi in [(5, 5, 4), (8, 6, 5), (10, 10, 6), (12, 9, 3), (20, 25, 10), (4, 7, 2)]:
        while True:
            x = [float(v) for v in RNG.integers(0, hi, n1)]
            y = [float(v) for v in RNG.integers(1, hi + 1, n2)]
            if has_ties(x, y):
                break
        add(f"ties_{n1}v{n2}", x, y, ["asymptotic"])
    # Half-unit ties: U lands on .5 values.
    add("half_ties", [1.0, 2.0, 2.0, 3.5, 5.0], [2.0, 3.5, 4.0, 6.0, 7.0, 7.0], ["asymptotic"])

    # Larger samples: 15 vs 20 (pooled trials) and 50 vs 50, both methods.
    for n1, n2, shift in [(15, 20, 0.0), (15, 20, 3.0), (20, 15, 1.5), (50, 50, 0.0), (50, 50, 2.0),
                          (50, 50, 4.0), (30, 45, 1.0)]:
        while True:
            x = distinct_sample(n1)
            y = distinct_sample(n2, loc=100.0 + shift)
            if not has_ties(x, y):
                break
        add(f"large_{n1}v{n2}_shift{shift:g}", x, y, ["exact", "asymptotic"])
    # Larger than our exact limit: asymptotic only.
    add("large_80v120", distinct_sample(80), distinct_sample(120, loc=101.0), ["asymptotic"])

    # Identical samples (every value tied across the samples): p = 1.
    same = distinct_sample(10)
    add("identical_10", same, list(same), ["asymptotic"])
    # Every value equal: zero variance, p = 1.
    add("all_equal", [3.0] * 6, [3.0] * 7, ["asymptotic"])
    # n = 1 per side.
    add("one_each", [1.0], [2.0], ["exact", "asymptotic"])
    return cases


def hodges_lehmann_cases():
    cases = []
    for n1, n2 in [(1, 1), (2, 3), (3, 3), (4, 4), (5, 5), (5, 8), (6, 6), (7, 9), (8, 8), (10, 10),
                   (12, 7)]:
        while True:
            x = distinct_sample(n1)
            y = distinct_sample(n2, loc=103.0)
            if not has_ties(x, y):
                break
        cases.append(hodges_lehmann(x, y))
    cases.append(hodges_lehmann(distinct_sample(10), distinct_sample(10, loc=101.0), level=0.90))
    # Asymptotic: ties, and sizes beyond the exact range.
    x = [float(v) for v in RNG.integers(0, 8, 12)]
    y = [float(v) for v in RNG.integers(2, 10, 14)]
    cases.append(hodges_lehmann(x, y))
    cases.append(hodges_lehmann(distinct_sample(60), distinct_sample(55, loc=102.0)))
    return cases


def r_p_adjust(p, method):
    """R's p.adjust (stats package) for "BH" and "holm", without NA."""
    p = np.asarray(p, dtype=float)
    n = len(p)
    if n == 0:
        return []
    if method == "BH":
        i = np.arange(n, 0, -1)
        o = np.argsort(-p, kind="stable")
        ro = np.argsort(o, kind="stable")
        return [float(v) for v in np.minimum(1, np.minimum.accumulate(n / i * p[o]))[ro]]
    if method == "holm":
        i = np.arange(1, n + 1)
        o = np.argsort(p, kind="stable")
        ro = np.argsort(o, kind="stable")
        return [float(v) for v in np.minimum(1, np.maximum.accumulate((n - i + 1) * p[o]))[ro]]
    raise ValueError(method)


def p_adjust_cases():
    families = [
        [0.01, 0.02, 0.03, 0.04, 0.05],
        [0.05, 0.04, 0.03, 0.02, 0.01],
        [0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216],
        [0.5],
        [0.02, 0.02, 0.02, 0.5],
        [0.9, 0.8, 0.95, 0.01],
        [1.0, 1.0, 0.0],
    ]
    for size in (3, 17, 40):
        families.append([float(v) for v in np.round(RNG.uniform(0, 1, size) ** 3, 6)])
    return [{"p": f, "bh": r_p_adjust(f, "BH"), "holm": r_p_adjust(f, "holm")} for f in families]


def main():
    header = {"generator": "tests/data/stats/gen_reference.py", "scipy": scipy.__version__,
              "numpy": np.__version__}
    with open(os.path.join(HERE, "mann_whitney_reference.json"), "w") as f:
        json.dump({**header, "mann_whitney": mann_whitney_cases(), "hodges_lehmann": hodges_lehmann_cases()},
                  f, indent=1)
        f.write("\n")
    with open(os.path.join(HERE, "p_adjust_reference.json"), "w") as f:
        json.dump({**header, "p_adjust": p_adjust_cases()}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
