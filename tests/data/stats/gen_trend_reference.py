#!/usr/bin/python3
"""Reference values for tests/unit/stats/test_trend.cpp (Theil-Sen, Mann-Kendall).

Run with Debian's interpreter (it has SciPy 1.10 and NumPy; a pyenv python
first on PATH usually has neither):

    /usr/bin/python3 tests/data/stats/gen_trend_reference.py

Writes trend_reference.json next to this script:
  theil_sen     scipy.stats.theilslopes(y, x, alpha=level, method='joint'):
                slope, intercept (median of y - slope x, the definition in
                harness/stats/trend.hpp) and the interval (low, high). SciPy's
                default intercept, median(y) - slope median(x) ('separate'),
                is kept as intercept_separate for information. NaN (no pair
                with distinct x, or a negative tie-corrected variance) is
                written as null.
  mann_kendall  S = sum_{i<j} sign(y_j - y_i) by brute force in NumPy;
                Var(S) = [n(n-1)(2n+5) - sum t(t-1)(2t+5)] / 18 over groups of
                t equal values of y; z = (S - sign(S)) / sqrt(Var(S)) (continuity
                correction); p = erfc(|z| / sqrt 2); tau-b = S / sqrt(N0 (N0 - T))
                with N0 = n(n-1)/2, T = sum t(t-1)/2. Constant y: z = 0, p = 1,
                tau = 0 (SciPy: NaN). Cross-checked against
                scipy.stats.kendalltau(range(n), y): tau-b always, and the p of
                method='asymptotic', which has no continuity correction, against
                the same formula without it.
Data come from a seeded NumPy generator, so reruns give identical files.
"""

import json
import math
import os
import warnings

import numpy as np
import scipy
from scipy import stats

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(20240715)


def num(v):
    v = float(v)
    return None if math.isnan(v) else v


def floats(a):
    return [float(v) for v in a]


# ---- Theil-Sen ----------------------------------------------------------------------------------

def theil_sen_case(name, x, y, level=0.95):
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # all x equal / empty slopes: SciPy warns and returns NaN
        joint = stats.theilslopes(y, x, alpha=level, method="joint")
        separate = stats.theilslopes(y, x, alpha=level, method="separate")
    dx = x[:, None] - x[None, :]
    pairs = int((dx > 0).sum())
    return {
        "name": name, "x": floats(x), "y": floats(y), "level": level, "pairs": pairs,
        "slope": num(joint.slope), "intercept": num(joint.intercept),
        "low": num(joint.low_slope), "high": num(joint.high_slope),
        "intercept_separate": num(separate.intercept),
    }


def theil_sen_cases():
    cases = []
    add = lambda *a, **k: cases.append(theil_sen_case(*a, **k))

    # Tiny series, by hand.
    add("two_points", [0.0, 2.0], [1.0, 5.0])
    add("three_points", [0.0, 1.0, 3.0], [1.0, 0.5, 4.0])
    add("five_with_y_ties", [1, 2, 3, 4, 5], [2.0, 2.0, 3.0, 3.0, 7.0])
    add("one_point", [1.0], [2.0])
    add("all_x_equal", [3.0] * 5, [1.0, 2.0, 3.0, 4.0, 5.0])
    add("constant_y", np.arange(20.0), [4.5] * 20)
    # Ties in x and y heavy enough that Sen's variance is negative: no interval.
    add("negative_variance", [0, 0, 0, 0, 1], [5, 5, 5, 5, 6])
    add("descending_x_order", [5, 4, 3, 2, 1, 0], [10.0, 8.5, 6.1, 3.9, 2.2, 0.1])

    # Small noisy series at several levels (SciPy reads alpha and 1 - alpha alike).
    for n in (6, 10, 25, 60):
        x = np.arange(n, dtype=float)
        y = np.round(3.0 + 0.2 * x + RNG.normal(0, 1, n), 4)
        for level in (0.95, 0.9, 0.99, 0.05, 0.5):
            add(f"noisy_{n}_level{level:g}", x, y, level)

    # Medium series: outliers, ties, repeated and irregular x, large offsets.
    for n in (100, 500, 1000, 2000):
        x = np.arange(n, dtype=float)
        y = 50.0 + 0.01 * x + RNG.normal(0, 1, n)
        y[RNG.choice(n, n // 20, replace=False)] += 30.0  # 5 % stalls
        add(f"outliers_{n}", x, np.round(y, 4))
    x = np.arange(2000, dtype=float)
    add("quantized_y_2000", x, np.round(100 + 0.002 * x + RNG.normal(0, 1.5, 2000)))
    x = np.floor(np.arange(1500) / 3.0)  # every x three times
    add("repeated_x_1500", x, np.round(10 - 0.05 * x + RNG.normal(0, 2, 1500), 3))
    x = np.sort(np.round(RNG.uniform(0, 3600, 1200), 3))  # irregular sampling times
    add("irregular_x_1200", x, np.round(200 + 0.004 * x + RNG.standard_t(3, 1200), 4))
    x = 1.7e9 + 0.05 * np.arange(1800)  # Unix time at 20 steps/s
    add("unix_time_1800", x, np.round(1000 + 0.3 * (x - x[0]) + RNG.normal(0, 2, 1800), 3))
    # Heavy ties among the slopes themselves.
    x = np.arange(800, dtype=float)
    add("exact_line_800", x, 0.1 * x)  # slopes equal up to rounding
    x = np.arange(1000, dtype=float)
    add("line_plus_bit_1000", x, 2 * x + RNG.integers(0, 2, 1000))  # half the slopes exactly 2
    add("constant_y_600", np.arange(600.0), [7.0] * 600)  # every slope 0
    add("two_x_values_800", np.repeat([0.0, 1.0], 400), np.round(RNG.normal(0, 1, 800), 2))
    add("few_levels_1500", np.arange(1500.0), RNG.integers(0, 3, 1500).astype(float))

    # 4.5 M pairs: the selection's sampled brackets, not a direct sort.
    x = np.arange(3000, dtype=float)
    add("outliers_3000", x, np.round(5 + 0.003 * x + RNG.normal(0, 1, 3000) + 20 * (RNG.uniform(0, 1, 3000) < 0.02), 4))
    return cases


# ---- Mann-Kendall -------------------------------------------------------------------------------

def mann_kendall_reference(y):
    y = np.asarray(y, dtype=float)
    n = len(y)
    s = 0
    for i in range(n - 1):  # brute force, O(n^2)
        s += int(np.sign(y[i + 1:] - y[i]).sum())
    _, t = np.unique(y, return_counts=True)
    t = t.astype(np.int64)
    var = (n * (n - 1) * (2 * n + 5) - int((t * (t - 1) * (2 * t + 5)).sum())) / 18
    n0 = n * (n - 1) // 2
    tied = int((t * (t - 1) // 2).sum())
    if var > 0:
        z = (s - np.sign(s)) / math.sqrt(var)
        p = min(1.0, math.erfc(abs(z) / math.sqrt(2)))
        z_raw = s / math.sqrt(var)
    else:
        z, p, z_raw = 0.0, 1.0, 0.0
    tau = s / math.sqrt(n0) / math.sqrt(n0 - tied) if n0 - tied > 0 else 0.0
    if n >= 3 and n0 - tied > 0:
        ref = stats.kendalltau(np.arange(n), y, method="asymptotic")
        assert abs(ref.statistic - tau) <= 1e-12, (ref.statistic, tau)
        assert abs(ref.pvalue - min(1.0, math.erfc(abs(z_raw) / math.sqrt(2)))) <= 1e-9 * max(ref.pvalue, 1e-300), \
            (ref.pvalue, z_raw)
    return {"y": floats(y), "s": float(s), "z": float(z), "p": float(p), "tau": float(tau), "ties": tied > 0}


def mann_kendall_cases():
    cases = []

    def add(name, y):
        cases.append({"name": name, **mann_kendall_reference(y)})

    add("empty", [])
    add("one", [3.0])
    add("two_up", [1.0, 2.0])
    add("two_tied", [1.0, 1.0])
    add("three", [2.0, 1.0, 3.0])
    add("monotone_10", np.arange(10.0))
    add("reversed_10", np.arange(10.0)[::-1])
    add("ties_10", [1, 2, 2, 3, 1, 4, 4, 4, 5, 2])
    add("constant_12", [5.0] * 12)
    for n in (10, 20, 50, 100, 1000):
        add(f"noise_{n}", np.round(RNG.normal(0, 1, n), 6))
        add(f"trend_{n}", np.round(0.02 * np.arange(n) + RNG.normal(0, 1, n), 6))
    add("quantized_1000", np.round(RNG.normal(0, 1.2, 1000)))
    add("few_levels_3000", RNG.integers(0, 4, 3000).astype(float))
    add("weak_trend_5000", np.round(0.0002 * np.arange(5000) + RNG.normal(0, 1, 5000), 5))
    return cases


def dump(obj, f):
    """JSON with one case per line: compact (the series are long) yet diffable."""
    f.write("{\n")
    items = list(obj.items())
    for k, (key, val) in enumerate(items):
        if isinstance(val, list) and val and isinstance(val[0], dict):
            f.write(f" {json.dumps(key)}: [\n")
            f.write(",\n".join("  " + json.dumps(c, separators=(",", ":")) for c in val))
            f.write("\n ]")
        else:
            f.write(f" {json.dumps(key)}: {json.dumps(val)}")
        f.write(",\n" if k + 1 < len(items) else "\n")
    f.write("}\n")


def main():
    header = {"generator": "tests/data/stats/gen_trend_reference.py", "scipy": scipy.__version__,
              "numpy": np.__version__}
    with open(os.path.join(HERE, "trend_reference.json"), "w") as f:
        dump({**header, "theil_sen": theil_sen_cases(), "mann_kendall": mann_kendall_cases()}, f)


if __name__ == "__main__":
    main()
