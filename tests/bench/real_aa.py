#!/usr/bin/python3
"""A real A/A benchmark of the gate: nothing changes, so every regression is false.

Runs one suite of real workloads (perfgate-sim in eager and graph mode, and
gbench_demo, a Google Benchmark program built by the project) as --runs
separate `perfgate run`s, one after another, and gates every run from the
4th on against the 3 before it (`tag:aa,last:3,include:all`, the shipped
policy, so an underpowered gate runs more candidate trials as it would in
CI). Next to it, Google Benchmark's own compare.py (Debian's
libbenchmark-tools, run with /usr/bin/python3 and python3-scipy) compares
each run's first gbench trial with the previous run's on the same JSON files,
as people use it: U test at alpha 0.05.

    /usr/bin/python3 tests/bench/real_aa.py [--runs 12] [--build build] [--work DIR]
                                            [--sleep SECONDS] [--host-probe] [--keep]

Prints, per gate, its outcome and what it flagged; then the totals. The noise
here is whatever this machine does between runs (other tenants, clocks,
memory placement): nothing is simulated.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
COMPARE_PY = Path("/usr/share/benchmark/compare.py")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--work")
    ap.add_argument("--sleep", type=float, default=0.0, help="seconds between runs")
    ap.add_argument("--host-probe", action="store_true", help="time the host probe beside each trial")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    build = Path(a.build).resolve()
    perfgate, sim, gbench = build / "perfgate", build / "perfgate-sim", build / "gbench_demo"
    for p in (perfgate, sim, gbench):
        if not p.exists():
            sys.exit(f"real_aa: {p} not found: build the project first (scripts/test.sh or cmake --build {build})")
    if not COMPARE_PY.exists():
        sys.exit("real_aa: /usr/share/benchmark/compare.py not found: install libbenchmark-tools (scripts/setup.sh does)")
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="perfgate-aa-"))
    work.mkdir(parents=True, exist_ok=True)
    db = work / "aa.db"
    probe = "\n  host_probe: on" if a.host_probe else ""
    suite = work / "aa.yaml"
    suite.write_text(f"""\
suite: aa
description: nothing changes between runs
defaults:
  repeats: 5
  warmup: {{steps: 3}}
  timeout: 2m{probe}
workloads:
  - name: sim
    command: [{json.dumps(str(sim))}, --graph-mode, "{{graph_mode}}", --ranks, "1", --steps, "30"]
    metrics: {{parser: jsonl, primary: step_time_ms}}
    matrix: {{graph_mode: [eager, graph]}}
  - name: gbench
    command: [{json.dumps(str(gbench))}, --benchmark_repetitions=10, --benchmark_min_time=0.02]
    metrics: {{parser: gbench}}
""")
    env = dict(os.environ, PATH="/usr/bin:/bin:" + os.environ.get("PATH", ""))

    def pg(*args):
        return subprocess.run([str(perfgate), "--db", str(db), *map(str, args)], capture_output=True, text=True,
                              env=env, cwd=work)

    gates = []
    cp_pairs = cp_flagged = cp_total = 0
    previous_json = None
    started = time.monotonic()
    for k in range(1, a.runs + 1):
        r = pg("run", suite, "--tag", "aa", "-q")
        if r.returncode != 0:
            sys.exit(f"run {k} failed ({r.returncode}):\n{r.stderr}")
        run_id = json.loads(pg("runs", "--format", "json", "--limit", "1").stdout)[0]["id"]
        show = json.loads(pg("show", run_id, "--format", "json").stdout)
        gbench_configs = {c["config_id"] for c in show["configs"] if c["workload"] == "gbench"}
        first_gbench = next(Path(t["log_dir"]) / "gbench.json" for t in show["trials"]
                            if t["config_id"] in gbench_configs and t["status"] == "ok")
        if previous_json is not None:
            out = subprocess.run(["/usr/bin/python3", str(COMPARE_PY), "--no-color", "benchmarks", str(previous_json),
                                  str(first_gbench)], capture_output=True, text=True)
            # U test lines: "<name>_pvalue   0.0002   0.0002   U Test, Repetitions: 10 vs 10"
            ps = [float(m.group(1)) for m in re.finditer(r"_pvalue\s+([0-9.]+)\s+[0-9.]+\s+U Test", out.stdout)]
            cp_pairs += 1
            cp_total += len(ps)
            flagged = sum(p < 0.05 for p in ps)
            cp_flagged += flagged
            cp_any = flagged > 0
        previous_json = work / f"gbench-run{k}.json"
        shutil.copy(first_gbench, previous_json)
        if k >= 4:
            js = work / f"gate-{k}.json"
            g = pg("gate", "--run", run_id, "--baseline", "tag:aa,last:3,include:all", "--json", js, "--no-store")
            rep = json.loads(js.read_text())
            regressions = [f"{c['workload']} {c['label']} {c['metric']} {100 * c['change']:+.1f}%"
                           for c in rep["comparisons"] if c["verdict"] == "regression"]
            inconclusive = sum(c["verdict"] == "inconclusive" for c in rep["comparisons"])
            gates.append({"run": run_id, "exit": g.returncode, "outcome": rep["outcome"], "regressions": regressions,
                          "comparisons": len(rep["comparisons"]), "inconclusive": inconclusive,
                          "trials_added": rep["adaptive"]["trials_added"], "probe": rep["host_probe"]["notes"],
                          "compare_py_flagged": flagged, "compare_py_any": cp_any})
            print(f"run {run_id:3}: gate {rep['outcome']:<12} exit {g.returncode}  {len(regressions)} regression(s) of "
                  f"{len(rep['comparisons'])}, {inconclusive} inconclusive, {rep['adaptive']['trials_added']} trials added;"
                  f" compare.py: {flagged} of {len(ps)} at p < 0.05"
                  + (f"; {'; '.join(regressions)}" if regressions else "")
                  + (f"; probe: {rep['host_probe']['notes'][0]}" if rep["host_probe"]["notes"] else ""), flush=True)
        if a.sleep > 0 and k < a.runs:
            time.sleep(a.sleep)
    n = len(gates)
    false_gates = sum(1 for g in gates if g["regressions"])
    flagged = sum(len(g["regressions"]) for g in gates)
    compared = sum(g["comparisons"] for g in gates)
    print()
    print(f"{a.runs} runs in {time.monotonic() - started:.0f} s; {n} gates against the 3 runs before each"
          f"{' (host probe on)' if a.host_probe else ''}")
    print(f"perfgate: {false_gates} of {n} gates raised a false regression ({flagged} of {compared} comparisons), "
          f"{sum(g['inconclusive'] for g in gates)} comparisons inconclusive, "
          f"{sum(g['trials_added'] for g in gates)} candidate trials added")
    print(f"compare.py (U test, alpha 0.05) on consecutive runs' gbench JSON: {cp_flagged} of {cp_total} comparisons "
          f"flagged, something in {sum(1 for g in gates if g['compare_py_any'])} of {n} pairs (of {cp_pairs} compared)")
    if not a.keep and not a.work:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"kept {work}")


if __name__ == "__main__":
    main()
