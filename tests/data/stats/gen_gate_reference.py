#!/usr/bin/python3
"""Reference values for the gate's statistics beyond Mann-Whitney
(tests/unit/stats/test_fisher_exact.cpp, test_van_elteren.cpp, test_two_level.cpp).

Run with Debian's interpreter (SciPy 1.10, NumPy):

    /usr/bin/python3 tests/data/stats/gen_gate_reference.py

Writes gate_reference.json next to this script:
  fisher       scipy.stats.fisher_exact(table, alternative=...) for tables of
               failed / ok trials (candidate row first), odds ratio included;
  van_elteren  one stratum: scipy.stats.mannwhitneyu(y, x,
               method="asymptotic", use_continuity=False) (van Elteren's
               statistic reduces to it); several strata: the weighted sum of
               1/(N_i + 1) (U_i - n m / 2) over sqrt(sum w_i^2 var U_i) with the
               tie-corrected variance, from scipy.stats.rankdata ranks;
  prediction   the classical prediction test of a new run's mean against k
               earlier runs of equal size: t = (m_c - mean m_j) / (s_m
               sqrt(1 + 1/k)), two-sided p from scipy.stats.t with k - 1
               degrees of freedom (what stats::two_level_test reduces to
               with equal trials per run and no prior);
  trigamma_inverse  x with scipy.special.polygamma(1, x) = y, by brentq;
  bartlett     scipy.stats.bartlett(*samples) with each sample's variance
               (ddof 1) and degrees of freedom, from a generator of its own so
               the cases above keep their data.
Data come from a seeded NumPy generator, so reruns give identical files.
"""

import json
import math
import os

import numpy as np
from scipy import optimize, special, stats

HERE = os.path.dirname(os.path.abspath(__file__))
RNG = np.random.default_rng(20261201)


def fisher_cases():
    tables = [(3, 2, 0, 10), (0, 5, 0, 10), (5, 0, 0, 10), (1, 4, 1, 9), (2, 3, 4, 26), (0, 3, 2, 7),
              (10, 90, 2, 98), (7, 3, 3, 7), (1, 0, 0, 1), (0, 0, 3, 4), (4, 16, 4, 16), (30, 70, 50, 150)]
    out = []
    for a, b, c, d in tables:
        row = {"table": [a, b, c, d]}
        for alt in ("greater", "less", "two-sided"):
            odds, p = stats.fisher_exact([[a, b], [c, d]], alternative=alt)
            row[alt] = p
        row["odds_ratio"] = None if (isinstance(odds, float) and math.isnan(odds)) else (
            "inf" if math.isinf(odds) else odds)
        out.append(row)
    return out


def van_elteren_stat(strata):
    num = 0.0
    var = 0.0
    for x, y in strata:
        n, m = len(x), len(y)
        N = n + m
        ranks = stats.rankdata(np.concatenate([y, x]))
        u_y = ranks[:m].sum() - m * (m + 1) / 2
        _, counts = np.unique(np.concatenate([x, y]), return_counts=True)
        tie = float(((counts ** 3) - counts).sum())
        v = n * m / 12.0 * ((N + 1) - tie / (N * (N - 1)))
        if v <= 0:
            continue
        w = 1.0 / (N + 1)
        num += w * (u_y - n * m / 2.0)
        var += w * w * v
    z = num / math.sqrt(var)
    return z, 2 * stats.norm.sf(abs(z))


def van_elteren_cases():
    out = []
    for n, m, shift in [(9, 3, 0.0), (5, 5, 1.0), (15, 5, -0.5), (3, 3, 2.0)]:
        x = np.round(RNG.normal(10, 1, n), 2)
        y = np.round(RNG.normal(10 + shift, 1, m), 2)
        res = stats.mannwhitneyu(y, x, alternative="two-sided", method="asymptotic", use_continuity=False)
        z, p = van_elteren_stat([(x, y)])
        assert abs(p - res.pvalue) < 1e-12, (p, res.pvalue)
        out.append({"strata": [[x.tolist(), y.tolist()]], "z": z, "p": res.pvalue})
    for k, shift in [(3, 0.8), (12, 2.0), (5, 0.0), (4, -1.0)]:
        strata = []
        for i in range(k):
            n, m = int(RNG.integers(3, 10)), int(RNG.integers(3, 8))
            base = RNG.normal(50 * (i + 1), 2.0, n)
            cand = RNG.normal(50 * (i + 1) + 2.0 * shift, 2.0, m)
            strata.append((np.round(base, 1), np.round(cand, 1)))  # rounding makes ties
        z, p = van_elteren_stat(strata)
        out.append({"strata": [[x.tolist(), y.tolist()] for x, y in strata], "z": z, "p": p})
    return out


def prediction_cases():
    out = []
    for k, n, tau, shift in [(3, 5, 1.0, 0.0), (3, 5, 1.0, 4.0), (5, 4, 0.5, 2.0), (2, 6, 2.0, -3.0), (10, 3, 1.0, 1.0)]:
        runs = []
        for _ in range(k):
            r = RNG.normal(0, tau)
            runs.append(np.round(100 + r + RNG.normal(0, 1, n), 3))
        rc = RNG.normal(0, tau)
        cand = np.round(100 + shift + rc + RNG.normal(0, 1, n), 3)
        means = np.array([r.mean() for r in runs])
        s_m = means.std(ddof=1)
        diff = cand.mean() - means.mean()
        t = diff / (s_m * math.sqrt(1 + 1 / k))
        p = 2 * stats.t.sf(abs(t), k - 1)
        # Only cases where the run spread exceeds what the trials explain
        # (tau^2 estimate above zero), where the formula applies unchanged.
        within = np.mean([r.var(ddof=1) for r in runs + [cand]])
        if s_m ** 2 <= within / n:
            continue
        out.append({"runs": [r.tolist() for r in runs], "cand": cand.tolist(), "diff": diff, "t": t, "df": k - 1, "p": p})
    return out


def trigamma_inverse_cases():
    out = []
    for y in [0.05, 0.3, 1.0, 1.6449340668482264, 3.0, 10.0, 100.0]:
        x = optimize.brentq(lambda v: special.polygamma(1, v) - y, 1e-8, 1e8, xtol=1e-14, rtol=1e-14)
        out.append({"y": y, "x": x})
    return out


def bartlett_cases():
    rng = np.random.default_rng(1937)
    out = []
    for sizes, sds in [([5, 5, 5], [1, 1, 1]), ([3, 3, 3, 3, 3, 3], [1, 1, 1, 1, 1, 1]), ([4, 7, 10], [1, 2, 4]),
                       ([6, 6], [1, 3]), ([3] * 40, [1] * 40), ([3] * 30, [1] * 15 + [3] * 15), ([20, 8, 12, 5], [2, 2, 2, 2])]:
        samples = [rng.normal(10, sd, n) for n, sd in zip(sizes, sds)]
        res = stats.bartlett(*samples)
        out.append({"var": [float(x.var(ddof=1)) for x in samples], "df": [len(x) - 1 for x in samples],
                    "statistic": float(res.statistic), "p": float(res.pvalue)})
    return out


def main():
    ref = {"fisher": fisher_cases(), "van_elteren": van_elteren_cases(), "prediction": prediction_cases(),
           "trigamma_inverse": trigamma_inverse_cases(), "bartlett": bartlett_cases()}
    with open(os.path.join(HERE, "gate_reference.json"), "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    print({k: len(v) for k, v in ref.items()})


if __name__ == "__main__":
    main()
