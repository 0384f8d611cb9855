#!/usr/bin/env python3
"""A Google Benchmark file of SIZE bytes cut inside its last entry.

Writes a gbench JSON file of many small iteration entries (about 230 bytes
each, 1,000 benchmark names) up to SIZE bytes, cuts it inside an entry, as a
benchmark binary killed mid-write leaves it, and runs `perfgate import` on it
R times into a fresh SQLite database each. Prints the medians of wall time
and peak RSS (wait4 rusage of perfgate), the samples stored (every complete
entry's real_time and cpu_time: 2 per entry) and the note perfgate gave.

usage: gbench_truncated.py PERFGATE_BIN [--bytes 1000000000] [--repeats 3]
"""
import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import tempfile
import time


def write_file(path, size_bytes):
    """Returns the number of complete entries before the cut."""
    head = json.dumps({"context": {"date": "2026-12-02", "host_name": "bench", "executable": "bm",
                                   "num_cpus": 2, "library_build_type": "release"}})[:-1]
    written = 0
    entries = 0
    with open(path, "w") as f:
        f.write(head + ', "benchmarks": [\n')
        while written < size_bytes:
            e = json.dumps({"name": f"BM_Case/{entries % 1000}/iteration_{entries}",
                            "run_name": f"BM_Case/{entries % 1000}", "run_type": "iteration",
                            "repetitions": 1, "repetition_index": 0, "threads": 1, "iterations": 1000,
                            "real_time": 1234.5 + entries % 7, "cpu_time": 1200.25,
                            "time_unit": "ns"}) + ",\n"
            f.write(e)
            written += len(e)
            entries += 1
        cut = f.tell() - len(e) // 2  # inside the last entry
    os.truncate(path, cut)
    return entries - 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("perfgate")
    ap.add_argument("--bytes", type=int, default=1_000_000_000)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    perfgate = os.path.abspath(a.perfgate)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "cut.json")
        complete = write_file(path, a.bytes)
        walls, rss, stored, note = [], [], None, ""
        for r in range(a.repeats):
            run_dir = os.path.join(tmp, f"run{r}")
            os.mkdir(run_dir)
            start = time.monotonic()
            p = subprocess.Popen([perfgate, "import", "--format", "gbench", "--suite", "cut", "--commit",
                                  "abc", "--branch", "main", "-q", path], cwd=run_dir,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            out = p.stdout.read()
            _, status, usage = os.wait4(p.pid, 0)
            walls.append(time.monotonic() - start)
            rss.append(usage.ru_maxrss / 1024.0)
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"perfgate import failed:\n{out[-2000:]}")
            db = sqlite3.connect(os.path.join(run_dir, "results", "perfgate.db"))
            stored = db.execute("select count(*) from samples").fetchone()[0]
            db.close()
            note = next((line.strip() for line in out.splitlines() if "not valid JSON" in line), "(no note)")
            os.remove(os.path.join(run_dir, "results", "perfgate.db"))
        print(f"file: {os.path.getsize(path):,} bytes, {complete:,} complete entries before the cut")
        print(f"wall median: {statistics.median(walls):.2f} s over {a.repeats} runs ({', '.join(f'{w:.2f}' for w in walls)})")
        print(f"peak RSS median: {statistics.median(rss):.0f} MB")
        print(f"samples stored: {stored:,} (expected {2 * complete:,})")
        print(f"note: {note[:300]}")
        if stored != 2 * complete:
            raise SystemExit("entries before the cut were lost")


if __name__ == "__main__":
    main()
