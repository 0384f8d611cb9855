"""Helpers for perfgate's integration tests: the real binary against real workloads.

Environment:
  PERFGATE_BIN         the perfgate executable (default /work/main/build/perfgate)
  PERFGATE_SOURCE_DIR  the repository root     (default /work/main)

Every test gets its own temporary directory (database, suites, artifacts) and a
unique marker string. Workloads that may outlive perfgate carry the marker in
their argv; whatever still runs with it at the end of a test is killed, so no
test leaves a process behind.

Workloads of the test suites run under `self.python`, a symlink to this
interpreter whose name does not start with "python": perfgate probes the torch
version (a ~2 s import) only for suites whose command starts with python*, and
most tests have nothing to gain from it. The smoke and parameter tests use a
plain `python3` command and so exercise the probe.
"""

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid
from pathlib import Path

PERFGATE_BIN = os.environ.get("PERFGATE_BIN") or "/work/main/build/perfgate"
SOURCE_DIR = Path(os.environ.get("PERFGATE_SOURCE_DIR") or "/work/main")
HERE = Path(__file__).resolve().parent
WORKLOADS = HERE / "workloads"

def schema_version():
    """The schema version this perfgate writes (harness/store/schema.hpp)."""
    text = (SOURCE_DIR / "harness" / "store" / "schema.hpp").read_text()
    return int(re.search(r"k_schema_version = (\d+);", text).group(1))


# Exit codes of every perfgate subcommand (docs: DESIGN.md "Exit codes").
EXIT_OK, EXIT_REGRESSION, EXIT_INPUT, EXIT_HARNESS = 0, 1, 2, 3


def workload(name):
    """Absolute path of a workload script in tests/integration/workloads."""
    p = WORKLOADS / name
    assert p.is_file(), p
    return str(p)


def yq(s):
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(str(s))


def flow_list(items):
    """A YAML flow sequence of double-quoted scalars."""
    return "[" + ", ".join(yq(i) for i in items) + "]"


def marked_pids(marker):
    """Pids of live (non-zombie) processes whose argv contains `marker`."""
    pids = []
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if marker.encode() in cmd:
            pids.append(int(d))
    return pids


def kill_marked(marker, wait_s=2.0):
    """SIGKILLs every process carrying `marker`; returns how many there were."""
    found = marked_pids(marker)
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + wait_s
    while marked_pids(marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    return len(found)


def wait_until(predicate, timeout_s, interval_s=0.02):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()


class Background:
    """A perfgate process started with Popen whose stderr lines are collected live."""

    def __init__(self, argv, cwd, env=None):
        self.stdout_file = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=self.stdout_file,
                                     stderr=subprocess.PIPE)
        self.lines = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for raw in self.proc.stderr:
            with self._lock:
                self.lines.append(raw.decode("utf-8", "replace"))

    def stderr(self):
        with self._lock:
            return "".join(self.lines)

    def wait_for_line(self, pattern, timeout_s):
        rx = re.compile(pattern)
        return wait_until(lambda: any(rx.search(l) for l in list(self.lines)) or self.proc.poll() is not None,
                          timeout_s) and any(rx.search(l) for l in list(self.lines))

    def wait(self, timeout_s):
        rc = self.proc.wait(timeout=timeout_s)
        self._reader.join(timeout=5)
        return rc

    def stdout(self):
        self.stdout_file.seek(0)
        return self.stdout_file.read().decode("utf-8", "replace")

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(timeout=5)
        if self.proc.stderr:
            self.proc.stderr.close()
        self.stdout_file.close()


class PerfgateTestCase(unittest.TestCase):
    maxDiff = None
    # Read by ctest_entries.py (statically): every test class is a ctest entry
    # with its own timeout. One that asserts timing effects says so and runs
    # with at most one other test beside it; one that would read another
    # test's load coming and going as an effect (runs measured one after
    # another, a soak's windows over time) also says `alone` and runs alone.
    measures_time = False
    alone = False
    timeout_s = 120

    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="perfgate-it-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.db = self.tmp / "perfgate.db"
        # Device locks of this test only: tests run side by side, and two of
        # them on "npu 0" must not wait for each other.
        old_lock_dir = os.environ.get("PERFGATE_LOCK_DIR")
        os.environ["PERFGATE_LOCK_DIR"] = str(self.tmp / "locks")
        self.addCleanup(lambda: os.environ.pop("PERFGATE_LOCK_DIR") if old_lock_dir is None
                        else os.environ.__setitem__("PERFGATE_LOCK_DIR", old_lock_dir))
        self.marker = "pgmark" + uuid.uuid4().hex
        # Cleanups run last-in first-out: processes die before their directory goes.
        self.addCleanup(kill_marked, self.marker)
        bindir = self.tmp / "bin"
        bindir.mkdir()
        self.python = str(bindir / "wl-python")
        os.symlink(sys.executable, self.python)
        self.assertTrue(os.access(PERFGATE_BIN, os.X_OK), f"perfgate binary not found at {PERFGATE_BIN}")

    # -- running perfgate ---------------------------------------------------

    def env(self, **extra):
        e = dict(os.environ)
        e.update(extra)
        return e

    def perfgate(self, *args, cwd=None, timeout=120, env=None, db=True):
        """Runs perfgate to completion; returns the CompletedProcess (text)."""
        argv = [PERFGATE_BIN]
        if db:
            argv += ["--db", str(self.db if db is True else db)]
        argv += [str(a) for a in args]
        return subprocess.run(argv, cwd=str(cwd or self.tmp), env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, errors="replace", timeout=timeout)

    def start_perfgate(self, *args, cwd=None, env=None, db=True):
        argv = [PERFGATE_BIN]
        if db:
            argv += ["--db", str(self.db if db is True else db)]
        argv += [str(a) for a in args]
        bg = Background(argv, cwd=str(cwd or self.tmp), env=env)
        self.addCleanup(bg.close)
        return bg

    def assertExit(self, r, code, msg=""):
        self.assertEqual(r.returncode, code,
                         f"{msg}\nexit {r.returncode}, expected {code}\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}")

    def show_json(self, selector="latest", db=True):
        r = self.perfgate("show", selector, "--format", "json", db=db)
        self.assertExit(r, 0, "show --format json")
        return json.loads(r.stdout)

    def runs_json(self, db=True):
        r = self.perfgate("runs", "--format", "json", "--limit", "100", db=db)
        self.assertExit(r, 0, "runs --format json")
        return json.loads(r.stdout)

    # -- suites -------------------------------------------------------------

    def write_suite(self, text, name="suite.yaml"):
        p = self.tmp / name
        p.write_text(text)
        return p

    def command(self, script, *args):
        """A YAML flow list: [<wl-python>, <workload script>, args...]."""
        return flow_list([self.python, workload(script), *args])

    # -- database -----------------------------------------------------------

    def query(self, sql, params=(), db=None):
        con = sqlite3.connect(f"file:{db or self.db}?mode=ro", uri=True, timeout=5)
        try:
            return con.execute(sql, params).fetchall()
        finally:
            con.close()

    # -- processes ----------------------------------------------------------

    def assertNoMarkedProcesses(self, grace_s=1.0, marker=None):
        """Nothing carrying the marker runs any more (a SIGKILLed process may need a moment to go)."""
        marker = marker or self.marker
        wait_until(lambda: not marked_pids(marker), grace_s)
        left = marked_pids(marker)
        details = []
        for pid in left:
            try:
                details.append(f"{pid}: " + Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
            except OSError:
                pass
        self.assertEqual(left, [], "workload processes outlived perfgate:\n" + "\n".join(details))


def trials_by_status(show):
    out = {}
    for t in show["trials"]:
        out.setdefault(t["status"], []).append(t)
    return out


def fact(config, name):
    """A setting the configuration's trials reported (world size, batch): one value, or a list when they differ."""
    facts = config.get("facts", {})
    if name not in facts:
        raise AssertionError(f"fact {name} not in {sorted(facts)}")
    return facts[name]


def metric(config, name):
    for m in config["metrics"]:
        if m["metric"] == name:
            return m
    raise AssertionError(f"metric {name} not in {[m['metric'] for m in config['metrics']]}")


# -- effects measured side by side ----------------------------------------------
#
# A test that asserts an effect (graph mode is cheaper than eager, a slower
# build is slower) compares trials of one run, interleaved, so whatever the
# machine did during the run fell on both sides alike. Each repeat of the run
# holds one trial of every configuration, close together in time: the pair
# (fast, slow) of one repeat is one measurement of the effect, and the pairs'
# spread is the test's own measured noise.


def sign_test_interval(values, confidence=0.90):
    """The distribution-free interval for the median of `values` from the sign
    test (Hollander & Wolfe, Nonparametric Statistical Methods, 3rd ed., 3.6),
    covering it with at least `confidence` (checked against SciPy's binomial):
    the k-th smallest and k-th largest values, with k the largest for which
    P(Binomial(n, 1/2) < k) <= (1 - confidence) / 2. With 5 values it is
    [min, max] at 93.75 %; with 10 the 2nd and 9th at 97.9 %."""
    from math import comb
    v = sorted(values)
    n = len(v)
    if n == 0:
        raise ValueError("no values")
    alpha_half = (1 - confidence) / 2
    k, tail = 0, 0.0
    while k < n // 2:
        nxt = tail + comb(n, k) / 2 ** n
        if nxt > alpha_half:
            break
        tail, k = nxt, k + 1
    k = max(k, 1)
    return v[k - 1], v[n - k]


def _median(values):
    v = sorted(values)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


class Effect:
    """`slow` is at least `at_least` times `fast` in `metric`: per repeat of a run,
    the ratio of the two configurations' trial values (configurations chosen by
    their parameters). `metric` is a metric's name, or (name, function) where
    the function makes a trial's value from its metrics by name."""

    def __init__(self, what, fast, slow, metric, at_least):
        self.what, self.fast, self.slow, self.at_least = what, fast, slow, at_least
        self.metric_name, self.value_of = (metric, None) if isinstance(metric, str) else metric

    def _config(self, show, params):
        found = [c for c in show["configs"] if all(str(c["params"].get(k)) == str(v) for k, v in params.items())]
        if len(found) != 1:
            raise AssertionError(f"{len(found)} configurations with {params} in {[c['params'] for c in show['configs']]}")
        return found[0]

    def _by_repeat(self, config):
        per_metric = {m["metric"]: {t["repeat"]: t["value"] for t in m.get("trials", [])} for m in config["metrics"]}
        if self.value_of is None:
            metric(config, self.metric_name)  # raises, naming the metrics there are
            return per_metric[self.metric_name]
        repeats = set.intersection(*(set(v) for v in per_metric.values())) if per_metric else set()
        return {k: self.value_of({name: v[k] for name, v in per_metric.items()}) for k in repeats}

    def ratios(self, show):
        fast = self._by_repeat(self._config(show, self.fast))
        slow = self._by_repeat(self._config(show, self.slow))
        return [slow[k] / fast[k] for k in sorted(fast) if k in slow and fast[k] > 0]

    def judge(self, ratios):
        """'pass', 'fail' or 'undecided', and the figures that say why."""
        if not ratios:
            return "fail", f"{self.what}: no pair of trials with {self.metric_name}"
        lo, hi = sign_test_interval(ratios)
        med = _median(ratios)
        figures = (f"{self.what}: {self.metric_name} {med:.3f}x (interval {lo:.3f}-{hi:.3f} over {len(ratios)} "
                   f"interleaved pairs), needs at least {self.at_least}x")
        if lo >= self.at_least:
            return "pass", figures
        if hi < self.at_least or hi <= 1:
            return "fail", figures
        return "undecided", figures


def assert_effects(test, measure, effects, repeats):
    """Runs `measure(repeats)` (one perfgate run, configurations interleaved; it
    returns the show JSON) and asserts every effect from its pairs. An effect
    whose interval reaches both sides of its floor (the run's noise too high to
    decide) is measured once more, as a second run, and judged on the pairs of
    both: its median must reach the floor and its interval exclude no change.
    The output says when that happened and why. Returns the first run's show."""
    show = measure(repeats)
    ratios = [e.ratios(show) for e in effects]
    verdicts = [e.judge(r) for e, r in zip(effects, ratios)]
    failed = [f for v, f in verdicts if v == "fail"]
    if failed:
        test.fail("effect smaller than the documented floor:\n  " + "\n  ".join(failed))
    undecided = [i for i, (v, _) in enumerate(verdicts) if v == "undecided"]
    if not undecided:
        return show
    sys.stderr.write("noise too high to decide, measuring once more:\n  " +
                     "\n  ".join(verdicts[i][1] for i in undecided) + "\n")
    again = measure(repeats)
    final = []
    for i in undecided:
        e = effects[i]
        pooled = ratios[i] + e.ratios(again)
        lo, _ = sign_test_interval(pooled)
        _, figures = e.judge(pooled)
        sys.stderr.write(f"  then {figures}\n")
        if not (_median(pooled) >= e.at_least and lo > 1):
            final.append(figures)
    if final:
        test.fail("effect not shown after measuring twice:\n  " + "\n  ".join(final))
    return show
