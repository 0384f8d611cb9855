#!/usr/bin/env python3
"""Dashboard at scale: a database of 1,000 runs and a 5-million-sample soak.

Builds the database once (cached with --db; about two minutes on 2 cores):
a soak replaying 1.25M step records of 4 metrics (5M samples) and 1,000 runs
of a 2 x 2 sweep with 3 repeats (12 trials each), whose step time moves up 5 %
from run 500 on, and a gate every 100 runs. Then times `perfgate dashboard`
(median of --repeats), reports the size of what it wrote, and loads the
largest pages (the trend of the sweep and the soak) in headless Chromium,
reporting the time until the page marked itself ready (document.body
data-ready-ms, from navigation start), median of --repeats.

usage: dashboard_scale.py PERFGATE_BIN [--db FILE] [--runs 1000] [--soak-records 1250000] [--repeats 3]
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor


def build(perfgate, db, work, runs, soak_records):
    data = os.path.join(work, "soak.jsonl")
    with open(data, "w") as f:
        for i in range(soak_records):
            f.write('{"step": %d, "t_s": %.2f, "step_time_ms": %.3f, "throughput": %.1f, "loss": %.5f, '
                    '"host_rss_mb": %.1f}\n' % (i, i * 0.05, 50.0 + (i % 7) * 0.1 + (5 if i > soak_records // 2 else 0),
                                                640.0 - (i % 5), 2.0 - i * 1e-7, 800.0 + i * 1e-4))
    soak = os.path.join(work, "soak.yaml")
    with open(soak, "w") as f:
        f.write("suite: soak\ndefaults: {repeats: 1}\nworkloads:\n"
                f"  - name: replay\n    command: [cp, {data}, \"{{metrics_file}}\"]\n")
    subprocess.run([perfgate, "--db", db, "soak", soak, "-q", "--duration", "1h", "--window", "60s"], check=True,
                   stdout=subprocess.DEVNULL)
    # Two copies of one suite, same name and parameters, reading different
    # files: the configurations stay the same while their numbers step up 5 %.
    suites = {}
    for level in ("base", "slow"):
        os.makedirs(os.path.join(work, level))
        for a in (25, 50):
            for w in (2, 4):
                with open(os.path.join(work, level, f"m-{a}-{w}.jsonl"), "w") as f:
                    for i in range(20):
                        ms = (10 + a / 25 + w) * (1.05 if level == "slow" else 1) * (1 + 0.01 * ((i * 7) % 5 - 2))
                        f.write('{"step": %d, "step_time_ms": %.3f, "throughput": %.2f}\n' % (i, ms, 64000 / ms))
        suites[level] = os.path.join(work, f"sweep-{level}.yaml")
        with open(suites[level], "w") as f:
            f.write("suite: sweep\ndefaults: {repeats: 3, warmup: {steps: 2}}\nworkloads:\n  - name: train\n"
                    f"    command: [cp, \"{work}/{level}/m-{{bucket_mb}}-{{num_workers}}.jsonl\", \"{{metrics_file}}\"]\n"
                    "    matrix: {bucket_mb: [25, 50], num_workers: [2, 4]}\n")

    def one(i):
        suite = suites["slow" if i >= runs // 2 else "base"]
        subprocess.run([perfgate, "--db", db, "--db-timeout", "60s", "run", suite, "-q",
                        "--tag", f"n{i}", "--commit", f"{i:08x}"], check=True, stdout=subprocess.DEVNULL)

    t0 = time.perf_counter()
    for start in range(0, runs, 100):
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(one, range(start, min(runs, start + 100))))
        subprocess.run([perfgate, "--db", db, "gate", "--run", "latest", "--baseline", "tag:n0", "--format", "json"],
                       stdout=subprocess.DEVNULL)
        print(f"  {min(runs, start + 100)} runs ({time.perf_counter() - t0:.0f} s)", flush=True)


def ready_ms(url, profile):
    r = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
                        "--dump-dom", url], capture_output=True, text=True, timeout=120)
    m = re.search(r"<body[^>]*data-ready-ms=\"(\d+)\"", r.stdout)
    if not m:
        raise SystemExit(f"{url} never became ready: {r.stderr[-1000:]}")
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("perfgate")
    ap.add_argument("--db")
    ap.add_argument("--runs", type=int, default=1000)
    ap.add_argument("--soak-records", type=int, default=1_250_000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    perfgate = os.path.abspath(a.perfgate)
    work = tempfile.mkdtemp(prefix="perfgate-dashscale-", dir=os.getcwd())
    try:
        db = os.path.abspath(a.db) if a.db else os.path.join(work, "perfgate.db")
        if not os.path.exists(db):
            print(f"building {db}: {a.runs} runs and a soak of {a.soak_records * 4:,} samples")
            build(perfgate, db, work, a.runs, a.soak_records)
        walls, sizes = [], []
        out = os.path.join(work, "dash")
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            subprocess.run([perfgate, "--db", db, "dashboard", "--out", out, "-q"], check=True, stdout=subprocess.DEVNULL)
            walls.append(time.perf_counter() - t0)
            sizes.append(sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(out) for f in fs))
        largest = max((os.path.getsize(os.path.join(out, "data", f)), f) for f in os.listdir(os.path.join(out, "data")))
        print(f"perfgate dashboard: median {statistics.median(walls):.2f} s (min {min(walls):.2f}, max {max(walls):.2f}), "
              f"{statistics.median(sizes) / 1e6:.1f} MB written, largest data file {largest[1]} {largest[0] / 1e6:.2f} MB")
        index = "file://" + os.path.join(out, "index.html")
        text = open(os.path.join(out, "data", "index.js")).read()
        index_data = json.loads(text[text.index(", ") + 2:text.rindex(");")])
        soak_id = next((r["id"] for r in index_data["runs"] if r["kind"] == "soak"), None)
        pages = {"trend (1000 runs x 4 configs)": "#/trend/sweep?metric=step_time_ms",
                 "runs list": "#/runs", "overview": "#/overview"}
        if soak_id:
            pages["soak (5M samples)"] = f"#/soak/{soak_id}"
        for name, anchor in pages.items():
            times = [ready_ms(index + anchor, os.path.join(work, f"chrome{i}")) for i in range(a.repeats)]
            print(f"ready in headless Chromium, {name}: median {statistics.median(times)} ms "
                  f"(min {min(times)}, max {max(times)})")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
