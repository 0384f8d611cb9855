"""Output abuse: floods of stdout/stderr, runaway lines, garbage in the metric channels; big input files."""

import os
import subprocess
import threading
import time
import unittest
from pathlib import Path

from support import PERFGATE_BIN, SOURCE_DIR, PerfgateTestCase, metric

MB = 1024 * 1024


def idle_rss_mb():
    """perfgate's peak RSS doing nothing (`perfgate --version`), in MB.

    Under the sanitizers (scripts/sanitize.sh sets PERFGATE_SANITIZED) the
    instrumented binary alone is ~120 MB resident (59 MB of code, 41 MB of
    relocated data), so a memory bound there is a bound on what perfgate
    adds to that; a plain build is judged against the bound itself.
    """
    if os.environ.get("PERFGATE_SANITIZED") != "1":
        return 0.0
    proc = subprocess.Popen([PERFGATE_BIN, "--version"], stdout=subprocess.DEVNULL)
    _, _, ru = os.wait4(proc.pid, 0)
    return ru.ru_maxrss / 1024.0


def run_measured(argv, cwd, timeout_s=120):
    """Runs perfgate; returns (returncode, stdout, stderr, peak RSS of perfgate itself in MB, wait4 ru_maxrss in MB).

    The first number is perfgate's own high-water mark (VmHWM of its /proc entry,
    polled until it exits); the second comes from wait4 and is the larger of
    perfgate and every child it reaped (workloads included): an upper bound.
    """
    out_path, err_path = Path(cwd) / "perfgate.out", Path(cwd) / "perfgate.err"
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        hwm_kb = [0]
        done = threading.Event()

        def poll():
            while not done.is_set():
                try:
                    for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                        if line.startswith("VmHWM:"):
                            hwm_kb[0] = max(hwm_kb[0], int(line.split()[1]))
                except (OSError, ValueError):
                    pass
                time.sleep(0.01)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        deadline = time.monotonic() + timeout_s
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, status, ru = os.wait4(proc.pid, 0)
                break
            time.sleep(0.01)
        done.set()
        poller.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    return (proc.returncode, out_path.read_text(errors="replace"), err_path.read_text(errors="replace"),
            hwm_kb[0] / 1024.0, ru.ru_maxrss / 1024.0)


class OutputFloods(PerfgateTestCase):
    def flood_suite(self, nbytes, stream="stdout", shape="lines", log_limit="1MB"):
        return self.write_suite(f"""\
suite: flood
defaults:
  repeats: 1
  timeout: 60s
  log_limit: {log_limit}
workloads:
  - name: flood
    command: {self.command("flood.py", str(nbytes), stream, shape)}
""")

    def test_100mb_of_stdout(self):
        suite = self.flood_suite(100 * MB)
        rc, out, err, hwm_mb, maxrss_mb = run_measured([PERFGATE_BIN, "--db", str(self.db), "run", str(suite)],
                                                      cwd=str(self.tmp))
        self.assertEqual(rc, 0, err)
        self.assertGreater(hwm_mb, 1, "could not read perfgate's VmHWM")
        idle_mb = idle_rss_mb()
        self.assertLess(hwm_mb - idle_mb, 100, f"perfgate's own peak RSS was {hwm_mb:.0f} MB ({idle_mb:.0f} idle)")
        self.assertLess(maxrss_mb - idle_mb, 100,
                        f"peak RSS of perfgate (and its children) was {maxrss_mb:.0f} MB ({idle_mb:.0f} idle)")

        show = self.show_json()
        t = show["trials"][0]
        self.assertEqual(t["status"], "ok")
        self.assertEqual(t["steps"], 5)
        self.assertIn("stdout was", t["notes"])
        log = Path(t["log_dir"]) / "stdout.log"
        size = log.stat().st_size
        self.assertLess(size, 2 * MB, f"stdout.log is {size} bytes with log_limit 1MB")
        self.assertGreaterEqual(size, 1 * MB)
        data = log.read_bytes()
        self.assertIn(b"[perfgate: output truncated", data)
        self.assertTrue(data.startswith(b"flood flood"), data[:40])
        # The end of the stream is kept after the note.
        self.assertTrue(data.rstrip().endswith(b"FLOOD-END"), data[-40:])
        self.assertEqual(metric(show["configs"][0], "throughput")["median"], 500.0)

    def test_default_log_cap_of_16_mib(self):
        suite = self.write_suite(f"""\
suite: flood
defaults: {{repeats: 1, timeout: 60s}}
workloads:
  - name: flood
    command: {self.command("flood.py", str(24 * MB), "stderr")}
""")
        r = self.perfgate("run", suite)
        self.assertExit(r, 0)
        t = self.show_json()["trials"][0]
        self.assertEqual(t["status"], "ok")
        size = (Path(t["log_dir"]) / "stderr.log").stat().st_size
        self.assertGreaterEqual(size, 16 * MB)
        self.assertLess(size, 16 * MB + 256 * 1024, f"stderr.log is {size} bytes")
        self.assertIn("stderr was", t["notes"])

    def test_runaway_protocol_line(self):
        # 64 MB on one line that starts with the protocol prefix and never ends.
        suite = self.flood_suite(64 * MB, "stdout", "oneline")
        rc, out, err, hwm_mb, _ = run_measured([PERFGATE_BIN, "--db", str(self.db), "run", str(suite)], cwd=str(self.tmp))
        self.assertEqual(rc, 0, err)
        idle_mb = idle_rss_mb()
        self.assertLess(hwm_mb - idle_mb, 100, f"perfgate's own peak RSS was {hwm_mb:.0f} MB ({idle_mb:.0f} idle)")
        t = self.show_json()["trials"][0]
        self.assertEqual(t["status"], "ok")
        self.assertEqual(t["malformed_lines"], 1, t)
        self.assertIn("longer than 1 MiB", t["notes"])
        self.assertEqual(t["steps"], 5)


class MalformedMetrics(PerfgateTestCase):
    def test_garbage_is_counted_and_good_lines_are_kept(self):
        suite = self.write_suite(f"""\
suite: garbage
defaults: {{repeats: 2, timeout: 30s}}
workloads:
  - name: garbage
    command: {self.command("garbage.py")}
""")
        r = self.perfgate("run", suite)
        self.assertExit(r, 0)
        show = self.show_json()
        self.assertEqual(len(show["trials"]), 2)
        for t in show["trials"]:
            self.assertEqual(t["status"], "ok")
            self.assertEqual(t["steps"], 4, t)
            # 4 bad lines in the file (garbage, half object, array, cut-off last line) + 2 on stdout.
            self.assertEqual(t["malformed_lines"], 6, t)
            self.assertIn("malformed", t["notes"])
            self.assertRegex(t["notes"], r"\b6 malformed")
            self.assertRegex(t["notes"], r"(metrics file|stdout) line \d+: not valid JSON")
        c = show["configs"][0]
        self.assertEqual(metric(c, "throughput")["n"], 2)
        self.assertEqual(metric(c, "throughput")["median"], 200.0)
        self.assertEqual(metric(c, "step_time_ms")["median"], 5.0)
        for m in (metric(c, "throughput"), metric(c, "step_time_ms")):
            self.assertTrue(all(tr["n_steps"] == 4 for tr in m["trials"]), m["trials"])
        # The half summary on stdout did not create a first_step_ms of 7.
        self.assertEqual(c["first_step_ms"], 5.0)
        # The terminal report surfaces the notes.
        r = self.perfgate("show", "latest")
        self.assertIn("malformed", r.stdout)


if __name__ == "__main__":
    unittest.main()


def bench_module(name):
    """A generator of tests/bench (the benchmarks and these tests build the same inputs)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, SOURCE_DIR / "tests" / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class BigInputFiles(PerfgateTestCase):
    """Input files far bigger than people write, read whole with bounded memory.

    The full sizes (a 1 GB Google Benchmark file, timings over repeats) are
    benchmarks (tests/bench/gbench_truncated.py, suite_load.py; docs/fuzzing.md);
    these are the same inputs at sizes a test can afford.
    """
    timeout_s = 300

    def test_10_mb_suite_is_planned(self):
        suite = self.tmp / "many.yaml"
        bench_module("suite_load").many_workloads(suite, n=62_000)
        size = suite.stat().st_size
        self.assertGreater(size, 10_000_000)
        rc, out, err, hwm_mb, _ = run_measured(
            [PERFGATE_BIN, "--db", str(self.db), "run", str(suite), "--dry-run", "--only", "workload=w61999"],
            cwd=str(self.tmp), timeout_s=240)
        self.assertEqual(rc, 0, err[-2000:])
        # The plan lists every workload's settings, then the one trial kept.
        first_line = out.split("\n", 1)[0]
        self.assertIn("1 trial(s)", first_line)
        self.assertTrue("/bin/true --index 61999 " in out and "--index 61998 " not in out, "the plan's trial")
        # Measured: 541 MB plain, mostly yaml-cpp's tree of the whole file;
        # 893 MB above the instrumented binary's idle 115 under the sanitizers
        # (each small node carries a redzone).
        idle_mb = idle_rss_mb()
        bound_mb = 1500 if os.environ.get("PERFGATE_SANITIZED") == "1" else 900
        self.assertLess(hwm_mb - idle_mb, bound_mb,
                        f"perfgate's peak RSS was {hwm_mb:.0f} MB ({idle_mb:.0f} idle) for a {size:,}-byte suite")

    def test_cut_gbench_file_keeps_every_complete_entry_in_bounded_memory(self):
        # Two files cut inside their last entry (a benchmark binary killed
        # mid-write), one ten times the other: the reader streams, so the
        # bigger file costs only the samples it stores, not its size.
        gbench = bench_module("gbench_truncated")
        peaks_mb = {}
        for size in (6_000_000, 60_000_000):
            path = self.tmp / f"cut-{size}.json"
            complete = gbench.write_file(str(path), size)
            db = self.tmp / f"cut-{size}.db"
            rc, out, err, hwm_mb, _ = run_measured(
                [PERFGATE_BIN, "--db", str(db), "import", "--format", "gbench", "--suite", "cut", "--commit", "abc",
                 "--branch", "main", str(path)], cwd=str(self.tmp), timeout_s=240)
            self.assertEqual(rc, 0, err[-2000:])
            self.assertGreater(hwm_mb, 1, "could not read perfgate's VmHWM")
            peaks_mb[size] = hwm_mb
            # Every complete entry's real_time and cpu_time, and a note that
            # names where the file was cut.
            self.assertEqual(self.query("select count(*) from samples", db=db)[0][0], 2 * complete)
            self.assertIn("not valid JSON", out + err)
        grown_mb = peaks_mb[60_000_000] - peaks_mb[6_000_000]
        self.assertLess(grown_mb, 27, f"54 MB more of file cost {grown_mb:.0f} MB more memory: {peaks_mb}")
