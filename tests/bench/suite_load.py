#!/usr/bin/env python3
"""How long perfgate takes to load large suites, and how much memory.

    tests/bench/suite_load.py PERFGATE_BIN [OTHER_PERFGATE_BIN] [--repeats R]

Writes two suites into a temporary folder and has each binary plan them
(`perfgate run SUITE --dry-run --only ...`: load and validate the whole
suite, expand it, keep one workload or one value of an axis, print that
plan to /dev/null), R times each, the binaries taking turns so that a machine's
drift falls on both alike. Prints per suite and binary the median CPU time
(user + system, steadier than wall time on a shared machine), the median
wall time and the median peak RSS (wait4's ru_maxrss), and the ratio of the
CPU medians when two binaries are given.

  many-workloads  about 10 MB of YAML: 60,000 workloads of one configuration
  big-matrix      one workload whose matrix of four axes of ten values makes
                  10,000 configurations (the most a workload may have)
"""

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path


def many_workloads(path, n=60_000):
    with open(path, "w") as f:
        f.write("suite: many\ndefaults: {repeats: 1}\nworkloads:\n")
        for i in range(n):
            f.write(f"  - name: w{i}\n    command: [/bin/true, --index, \"{i}\", --comment, "
                    f"\"padding to make the file about ten megabytes in all, {i:08d}\"]\n"
                    f"    params: {{index: {i}}}\n")


def big_matrix(path):
    axes = "".join(f"      {a}: [{', '.join(str(v) for v in range(10))}]\n" for a in "abcd")
    Path(path).write_text("suite: big\nworkloads:\n  - name: w\n"
                          "    command: [/bin/true, \"{a}\", \"{b}\", \"{c}\", \"{d}\"]\n"
                          f"    matrix:\n{axes}")


def measure(binary, suite, db, only):
    t0 = time.monotonic()
    proc = subprocess.Popen([binary, "--db", db, "run", suite, "--dry-run", "--only", only], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{binary} failed on {suite}: {err}")
    return wall, ru.ru_maxrss / 1024.0, ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binaries", nargs="+", help="one or two perfgate executables")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="perfgate-suite-load-") as tmp:
        suites = {"many-workloads": Path(tmp) / "many.yaml", "big-matrix": Path(tmp) / "big.yaml"}
        only = {"many-workloads": "workload=w0", "big-matrix": "a=0"}
        many_workloads(suites["many-workloads"])
        big_matrix(suites["big-matrix"])
        db = str(Path(tmp) / "unused.db")
        print(f"many-workloads: {suites['many-workloads'].stat().st_size / 1e6:.1f} MB of YAML")
        for name, suite in suites.items():
            results = {b: [] for b in args.binaries}
            for _ in range(args.repeats):
                for b in args.binaries:
                    results[b].append(measure(b, str(suite), db, only[name]))
            medians = {}
            for b, rs in results.items():
                wall = statistics.median(r[0] for r in rs)
                rss = statistics.median(r[1] for r in rs)
                cpu = statistics.median(r[2] for r in rs)
                medians[b] = cpu
                cpus = ", ".join(f"{r[2]:.2f}" for r in rs)
                print(f"{name:15} {b}: CPU median {cpu:.2f} s ({cpus}), wall median {wall:.2f} s, "
                      f"peak RSS median {rss:.0f} MB")
            if len(args.binaries) == 2:
                a, b = args.binaries
                print(f"{name:15} CPU ratio {a} / {b}: {medians[a] / medians[b]:.2f}")


if __name__ == "__main__":
    main()
