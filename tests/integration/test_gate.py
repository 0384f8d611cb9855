"""perfgate compare / gate / history: the real binary, real runs, real workloads.

Most tests drive workloads/noisy_steps.py, which *reports* step times drawn
around a known mean with seeded noise (about 1 % CV per trial, seeded by the
repeat, the run id and the workload name). A fresh database numbers its runs
from 1, so every value, and with it every verdict, is the same on every
machine and every run of this file: the statistical assertions cannot flake.
One test gates perfgate-sim, whose step times are measured, on a slowdown of
nearly 4x (eager launch cost 100 us -> 400 us); it asserts with wide margins.

Five tests express behaviour the current build gets wrong (each says what
it expects and why): test_adaptive_gate_from_another_directory,
test_short_baseline_is_not_topped_up_with_candidate_trials,
test_bad_format_is_refused_before_anything_is_stored,
test_failed_verdict_shows_the_baseline_median and
test_all_nan_candidate_fails_the_gate.

"The code got slower" is modelled without touching the suite's parameters: a
gate compares configurations (workload + parameters) that exist on both sides,
and a `--set` on a parameter makes a different configuration (see
test_changed_parameters_are_missing_not_compared). The workload instead reads
its slowdown, failures and NaNs from environment variables that perfgate passes
through (NOISY_SCALE, NOISY_FAIL, NOISY_NAN), and the sim test rewrites the
suite file's command between the runs.
"""

import json
import os
import pty
import re
import select
import sqlite3
import subprocess
import tempfile
import time
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

from support import (EXIT_HARNESS, EXIT_INPUT, EXIT_OK, EXIT_REGRESSION, PERFGATE_BIN, PerfgateTestCase, flow_list)

EXIT_INCONCLUSIVE = 4  # only with --strict
SIM = str(Path(PERFGATE_BIN).resolve().parent / "perfgate-sim")
ANSI = "\x1b["
# Left out of the inherited environment, so only a test sets them.
CONTROLLED_ENV = ("NOISY_SCALE", "NOISY_FAIL", "NOISY_NAN", "NOISY_KILL", "NO_COLOR")


class GateTestCase(PerfgateTestCase):
    # -- environment and commands -------------------------------------------

    def wl_env(self, **extra):
        """This process's environment without the knobs of noisy_steps.py (or NO_COLOR), plus `extra`."""
        e = {k: v for k, v in os.environ.items() if k not in CONTROLLED_ENV}
        e.update({k: str(v) for k, v in extra.items()})
        return e

    def pg(self, *args, cwd=None, **env):
        """perfgate with a controlled environment; keyword arguments are environment variables."""
        return self.perfgate(*args, cwd=cwd, env=self.wl_env(**env))

    def noisy_command(self, *extra):
        return self.command("noisy_steps.py", "--seed-from-env", "PERFGATE_REPEAT", "--seed-from-env", "PERFGATE_RUN_ID",
                            "--seed-from-env", "PERFGATE_WORKLOAD", "--scale-env", "NOISY_SCALE", "--fail-env",
                            "NOISY_FAIL", "--nan-env", "NOISY_NAN", "--kill-env", "NOISY_KILL", "--marker", self.marker,
                            *extra)

    def noisy_suite(self, name="gate", workloads=("steps",), repeats=5, params=None, extra_args=(), file="suite.yaml"):
        lines = [f"suite: {name}", f"defaults: {{repeats: {repeats}, warmup: {{steps: 1}}, timeout: 1m}}", "workloads:"]
        for w in workloads:
            lines += [f"  - name: {w}", f"    command: {self.noisy_command(*extra_args)}"]
            if params:
                lines.append(f"    params: {params}")
        return self.write_suite("\n".join(lines) + "\n", file)

    def run_suite(self, suite, *args, expect=EXIT_OK, cwd=None, **env):
        """`perfgate run SUITE -q ARGS` with environment `env`; returns the new run's id."""
        r = self.pg("run", suite, "-q", *args, cwd=cwd, **env)
        self.assertExit(r, expect, f"perfgate run {suite} {' '.join(map(str, args))}")
        return self.query("SELECT max(id) FROM runs")[0][0]

    def nightly_and_candidate(self, suite, nightly=3, **cand_env):
        """`nightly` runs tagged nightly, then a candidate run (also tagged nightly, as CI does) with `cand_env`."""
        base = [self.run_suite(suite, "--tag", "nightly") for _ in range(nightly)]
        cand = self.run_suite(suite, "--tag", "nightly", **cand_env)
        return base, cand

    # -- reports ---------------------------------------------------------------

    def gate_json(self, *args, expect=None, cwd=None, **env):
        """`perfgate gate ARGS --format json`: (process, report)."""
        r = self.pg("gate", *args, "--format", "json", cwd=cwd, **env)
        if expect is not None:
            self.assertExit(r, expect, "perfgate gate " + " ".join(map(str, args)))
        try:
            report = json.loads(r.stdout)
        except ValueError as e:
            self.fail(f"gate --format json printed no JSON ({e}); exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        return r, report

    def comparison(self, report, metric, workload=None):
        found = [c for c in report["comparisons"]
                 if c["metric"] == metric and (workload is None or c["workload"] == workload)]
        self.assertEqual(len(found), 1, f"{workload}/{metric} in {[(c['workload'], c['metric']) for c in report['comparisons']]}")
        return found[0]

    def verdicts(self, report, workload=None):
        return {c["metric"]: c["verdict"] for c in report["comparisons"] if workload is None or c["workload"] == workload}

    def stored_verdicts(self, gate_id):
        """(workload, metric) -> the stored verdict row, as a dict."""
        cols = ["workload", "metric", "verdict", "threshold", "n_base", "n_cand", "failed_base", "failed_cand",
                "base_median", "cand_median", "change", "p", "p_adjusted", "extra_trials", "added_trials", "note"]
        rows = self.query(
            "SELECT c.workload, m.name, v.verdict, v.threshold, v.n_base, v.n_cand, v.failed_base, v.failed_cand, "
            "v.base_median, v.cand_median, v.change, v.p, v.p_adjusted, v.extra_trials, v.added_trials, v.note "
            "FROM verdicts v JOIN configs c ON c.id = v.config_id JOIN metrics m ON m.id = v.metric_id "
            "WHERE v.gate_id = ?", (gate_id,))
        return {(r[0], r[1]): dict(zip(cols, r)) for r in rows}

    def gate_rows(self):
        cols = ["id", "run_id", "baseline", "baseline_runs", "policy", "outcome", "trials_added", "forced"]
        rows = self.query("SELECT id, run_id, baseline, baseline_runs, policy, outcome, trials_added, forced "
                          "FROM gates ORDER BY id")
        return [dict(zip(cols, r)) for r in rows]

    def trial_count(self, run_id):
        return self.query("SELECT count(*) FROM trials WHERE run_id = ?", (run_id,))[0][0]

    def assertStoredLikeReport(self, report):
        """The gate row and its verdicts in the database say what the JSON report says."""
        gates = [g for g in self.gate_rows() if g["id"] == report["gate_id"]]
        self.assertEqual(len(gates), 1, self.gate_rows())
        g = gates[0]
        self.assertEqual(g["run_id"], report["candidate"]["run"])
        self.assertEqual(g["baseline"], report["baseline"]["selector"])
        self.assertEqual(json.loads(g["baseline_runs"]), report["baseline"]["runs"])
        self.assertEqual(g["outcome"], report["outcome"])
        self.assertEqual(g["trials_added"], report["adaptive"]["trials_added"])
        stored = self.stored_verdicts(g["id"])
        self.assertEqual(len(stored), len(report["comparisons"]))
        for c in report["comparisons"]:
            s = stored[(c["workload"], c["metric"])]
            for key in ("verdict", "n_base", "n_cand", "failed_base", "failed_cand", "extra_trials", "added_trials",
                        "note"):
                self.assertEqual(s[key], c[key], (c["workload"], c["metric"], key))
            for key in ("threshold", "change", "p", "p_adjusted", "base_median", "cand_median"):
                if c[key] is None:
                    self.assertIsNone(s[key], (c["metric"], key))
                else:
                    self.assertAlmostEqual(s[key], c[key], places=9, msg=(c["metric"], key))
        return g


class GateVerdicts(GateTestCase):
    def test_a_a_passes_and_stores_its_verdicts(self):
        suite = self.noisy_suite()
        base, cand = self.nightly_and_candidate(suite)
        self.assertEqual(base + [cand], [1, 2, 3, 4])

        r = self.pg("gate", "--baseline", "tag:nightly")
        self.assertExit(r, EXIT_OK, "A/A gate")
        self.assertFalse([l for l in r.stdout.splitlines() if l.startswith(("regression", "failed"))], r.stdout)
        self.assertRegex(r.stdout.strip().splitlines()[-1], r"^PASS: ")

        r, report = self.gate_json("--baseline", "tag:nightly", expect=EXIT_OK)
        self.assertEqual(report["command"], "gate")
        self.assertEqual(report["candidate"]["run"], cand)
        # The candidate is tagged nightly too (the CI recipe): it is not its own baseline.
        self.assertEqual(report["baseline"]["runs"], [3, 2, 1])
        self.assertEqual(report["counts"]["regression"], 0)
        self.assertEqual(report["counts"]["failed"], 0)
        self.assertEqual(report["outcome"], "pass")
        for metric in ("step_time_ms", "throughput"):
            c = self.comparison(report, metric, "steps")
            self.assertEqual(c["verdict"], "unchanged", c)
            self.assertEqual((c["n_base"], c["n_cand"]), (15, 5))
            self.assertLess(abs(c["change"]), 0.02, c)
            self.assertLess(c["change_low"], c["change_high"])
            self.assertGreater(c["p"], 0.05, c)
        # Both gates stored, with every verdict.
        self.assertEqual(len(self.gate_rows()), 2)
        g = self.assertStoredLikeReport(report)
        self.assertEqual(g["policy"], "")
        self.assertEqual(g["forced"], 0)

        # --no-store records nothing; last:N narrows the pool.
        _, report = self.gate_json("--baseline", "tag:nightly,last:2", "--no-store", expect=EXIT_OK)
        self.assertEqual(report["baseline"]["runs"], [3, 2])
        self.assertNotIn("gate_id", report)
        self.assertEqual(self.comparison(report, "step_time_ms")["n_base"], 10)
        self.assertEqual(len(self.gate_rows()), 2)

    def test_a_b_slowdown_is_a_regression_in_every_report(self):
        suite = self.noisy_suite()
        _, cand = self.nightly_and_candidate(suite, NOISY_SCALE="1.15")  # the candidate's steps take 15 % longer
        md, junit, js = self.tmp / "gate.md", self.tmp / "junit.xml", self.tmp / "gate.json"
        r = self.pg("gate", "--baseline", "tag:nightly", "--markdown", md, "--junit", junit, "--json", js)
        self.assertExit(r, EXIT_REGRESSION, "A/B gate")
        self.assertRegex(r.stdout.strip().splitlines()[-1], r"^REGRESSION: \d+ regressions?")

        report = json.loads(js.read_text())
        self.assertEqual(report["outcome"], "regression")
        self.assertEqual(report["candidate"]["run"], cand)
        step = self.comparison(report, "step_time_ms", "steps")
        thr = self.comparison(report, "throughput", "steps")
        for c in (step, thr):
            self.assertEqual(c["verdict"], "regression", c)
            self.assertEqual((c["n_base"], c["n_cand"]), (15, 5))
            self.assertTrue(c["exact"])
            for key in ("p", "p_adjusted", "change", "change_low", "change_high", "base_median", "cand_median"):
                self.assertIsInstance(c[key], float, (c["metric"], key))
            self.assertLessEqual(c["p"], c["p_adjusted"])
            self.assertLessEqual(c["p_adjusted"], report["policy"]["fdr"])
            self.assertLessEqual(c["change_low"], c["change"])
            self.assertLessEqual(c["change"], c["change_high"])
        # Step time up about 15 %, throughput down about 13 % (1/1.15 - 1).
        self.assertGreater(step["change"], 0.10)
        self.assertLess(step["change"], 0.20)
        self.assertGreater(step["cand_median"], step["base_median"])
        self.assertLess(thr["change"], -0.09)
        self.assertGreater(thr["change"], -0.17)
        self.assertEqual(step["better"], "lower")
        self.assertEqual(thr["better"], "higher")
        regressions = report["counts"]["regression"]
        self.assertEqual(regressions, sum(c["verdict"] == "regression" for c in report["comparisons"]))
        self.assertGreaterEqual(regressions, 2)
        self.assertStoredLikeReport(report)

        # Markdown: the one-line verdict first.
        first = md.read_text().splitlines()[0]
        self.assertTrue(first.startswith("❌ **perfgate gate** — REGRESSION:"), first)
        self.assertIn(f"{regressions} regressions", first)
        self.assertEqual(md.read_text().count("| **regression** |"), regressions)

        # JUnit: one test case per comparison, a failure per regression.
        root = ET.parse(junit).getroot()
        self.assertEqual(root.tag, "testsuites")
        self.assertEqual(int(root.get("failures")), regressions)
        self.assertEqual(int(root.get("tests")), len(report["comparisons"]))
        cases = root.findall("./testsuite/testcase")
        self.assertEqual(len(cases), len(report["comparisons"]))
        failed = {c.get("name") for c in cases if c.find("failure") is not None}
        self.assertEqual(len([c for c in cases if c.find("failure") is not None]), regressions)
        self.assertTrue({"step_time_ms", "throughput"} <= failed, failed)

        # The JSON file names the gate row it was stored as.
        self.assertEqual(report["gate_id"], self.gate_rows()[-1]["id"])

    def test_changed_parameters_are_missing_not_compared(self):
        # A --set on a parameter is another configuration: nothing to compare it with.
        suite = self.noisy_suite(params="{mean_ms: 10}", extra_args=("--mean-ms", "{mean_ms}"))
        self.run_suite(suite, "--tag", "nightly")
        self.run_suite(suite, "--tag", "nightly")
        self.run_suite(suite, "--set", "mean_ms=11.5")
        r, report = self.gate_json("--baseline", "tag:nightly", "--no-store", expect=EXIT_OK)
        self.assertEqual(report["outcome"], "inconclusive")
        self.assertEqual(report["counts"]["regression"], 0)
        self.assertEqual({c["verdict"] for c in report["comparisons"]}, {"missing"})
        notes = {c["params"]["mean_ms"]: c["note"] for c in report["comparisons"] if c["metric"] == "step_time_ms"}
        self.assertEqual(set(notes), {10, 11.5}, notes)
        self.assertIn("not in the baseline", notes[11.5])
        self.assertIn("not in the candidate", notes[10])
        r = self.pg("gate", "--baseline", "tag:nightly", "--no-store", "--strict")
        self.assertExit(r, EXIT_INCONCLUSIVE)

    def test_compare_prints_the_table_and_json(self):
        suite = self.noisy_suite()
        _, cand = self.nightly_and_candidate(suite, NOISY_SCALE="1.15")
        r = self.pg("compare", "tag:nightly", cand)
        self.assertExit(r, EXIT_REGRESSION, "compare of a regression")
        self.assertNotIn(ANSI, r.stdout)  # not a terminal: no colour
        lines = r.stdout.splitlines()
        self.assertTrue(lines[0].startswith(f"perfgate compare: run {cand} "), lines[0])
        header = [l for l in lines if l.startswith("verdict ")]
        self.assertEqual(len(header), 1, r.stdout)
        for word in ("metric", "baseline", "candidate", "change", "p (adj)", "n base/cand"):
            self.assertIn(word, header[0])
        rows = {l.split()[3]: l.split()[0] for l in lines[lines.index(header[0]) + 1:] if len(l.split()) > 4}
        self.assertEqual(rows.get("step_time_ms"), "regression", r.stdout)
        self.assertEqual(rows.get("throughput"), "regression", r.stdout)
        self.assertRegex(lines[-1], r"^REGRESSION: ")

        r = self.pg("compare", "tag:nightly", cand, "--format", "json")
        self.assertExit(r, EXIT_REGRESSION)
        report = json.loads(r.stdout)
        self.assertEqual(report["command"], "compare")
        self.assertEqual(report["baseline"]["runs"], [3, 2, 1])
        self.assertEqual(self.comparison(report, "step_time_ms")["verdict"], "regression")
        self.assertNotIn("gate_id", report)
        # compare only looks: nothing stored.
        self.assertEqual(self.gate_rows(), [])

        # --bootstrap adds the median ratio with a seeded interval: the same seed, the same numbers.
        boot = []
        for _ in range(2):
            r = self.pg("compare", "tag:nightly", cand, "--format", "json", "--bootstrap", "500", "--bootstrap-seed", "7")
            self.assertExit(r, EXIT_REGRESSION)
            boot.append(json.loads(r.stdout))
        self.assertEqual(boot[0]["comparisons"], boot[1]["comparisons"])
        self.assertEqual(boot[0]["policy"]["bootstrap_resamples"], 500)
        self.assertEqual(boot[0]["policy"]["bootstrap_seed"], 7)
        c = self.comparison(boot[0], "step_time_ms")
        self.assertAlmostEqual(c["ratio"], c["cand_median"] / c["base_median"], places=9)
        self.assertLessEqual(c["ratio_low"], c["ratio"])
        self.assertLessEqual(c["ratio"], c["ratio_high"])
        self.assertGreater(c["ratio_low"], 1.05)  # 15 % slower, 1 % noise
        self.assertLess(c["ratio_high"], 1.25)
        self.assertIsNone(self.comparison(report, "step_time_ms")["ratio"])  # not asked for: null
        r = self.pg("compare", "tag:nightly", cand, "--bootstrap", "10")
        self.assertExit(r, EXIT_INPUT)

        # A/A through compare: a pass.
        r = self.pg("compare", "1", "2", "--format", "json", "--metric", "step_time_ms")
        self.assertExit(r, EXIT_OK)
        report = json.loads(r.stdout)
        self.assertEqual([c["metric"] for c in report["comparisons"]], ["step_time_ms"])

        # Markdown format, and no colour in any of them when NO_COLOR is set either.
        for args in (("compare", "tag:nightly", cand, "--format", "markdown"), ("gate", "--baseline", "tag:nightly")):
            r = self.pg(*args, NO_COLOR="1")
            self.assertExit(r, EXIT_REGRESSION)
            self.assertNotIn(ANSI, r.stdout + r.stderr)

    def run_on_tty(self, *args, **env):
        """perfgate with its stdout on a pseudo-terminal; returns (exit code, output)."""
        master, slave = pty.openpty()
        with tempfile.TemporaryFile() as err:
            p = subprocess.Popen([PERFGATE_BIN, "--db", str(self.db), *map(str, args)], cwd=self.tmp,
                                 env=self.wl_env(**env), stdin=subprocess.DEVNULL, stdout=slave, stderr=err)
            os.close(slave)
            out = b""
            deadline = time.monotonic() + 60
            try:
                while time.monotonic() < deadline:
                    ready, _, _ = select.select([master], [], [], 0.5)
                    if ready:
                        try:
                            chunk = os.read(master, 65536)
                        except OSError:  # EIO: the child closed the terminal
                            break
                        if not chunk:
                            break
                        out += chunk
                    elif p.poll() is not None:
                        break
            finally:
                os.close(master)
            rc = p.wait(timeout=30)
        return rc, out.decode("utf-8", "replace")

    def test_colour_only_on_a_terminal_without_no_color(self):
        suite = self.noisy_suite()
        _, cand = self.nightly_and_candidate(suite, NOISY_SCALE="1.15")
        rc, out = self.run_on_tty("compare", "tag:nightly", cand, TERM="xterm")
        self.assertEqual(rc, EXIT_REGRESSION, out)
        self.assertIn("\x1b[31m", out)  # regression rows in red on a terminal
        rc, out = self.run_on_tty("compare", "tag:nightly", cand, TERM="xterm", NO_COLOR="1")
        self.assertEqual(rc, EXIT_REGRESSION, out)
        self.assertIn("regression", out)
        self.assertNotIn(ANSI, out)
        rc, out = self.run_on_tty("compare", "tag:nightly", cand, TERM="dumb")
        self.assertNotIn(ANSI, out)


class GateSim(GateTestCase):
    measures_time = True
    alone = True
    def test_sim_dispatch_slowdown_is_a_regression(self):
        # Eager mode, one rank, a tiny model and a light data loader: the step is
        # almost only op launches, --dispatch-work of host work each, so four times
        # the work per launch makes the step nearly 4 times slower (work, which a
        # busy machine stretches alike in both runs). Asserted: a regression
        # (significant after correction) and at least +30 %. With 8 trials per side
        # and 2 metrics, up to 7 of the 64 baseline/candidate pairs may be inverted
        # and the adjusted p still stays below the FDR of 0.01.
        def sim_suite(dispatch_work):
            argv = [SIM, "--graph-mode", "eager", "--ranks", "1", "--steps", "10", "--layers", "4", "--width", "32",
                    "--act-mb", "0.5", "--grad-mb", "1", "--batch", "8", "--read-us", "50", "--decode-work", "10",
                    "--dispatch-work", str(dispatch_work)]
            return self.write_suite(f"""\
suite: sim-gate
defaults: {{repeats: 8, warmup: {{steps: 2}}, timeout: 2m}}
workloads:
  - name: sim
    command: {flow_list(argv)}
""")
        base = self.run_suite(sim_suite(100), "--tag", "nightly")
        cand = self.run_suite(sim_suite(400))  # the same suite and configuration; the "code" got slower
        r, report = self.gate_json("--baseline", "tag:nightly", "--metric", "step_time_ms", "--metric", "throughput")
        self.assertExit(r, EXIT_REGRESSION, "sim gate")
        self.assertEqual(report["baseline"]["runs"], [base])
        self.assertEqual(report["candidate"]["run"], cand)
        step = self.comparison(report, "step_time_ms", "sim")
        thr = self.comparison(report, "throughput", "sim")
        # A busy machine's hiccup in the baseline is left out (and counted) by the gate.
        self.assertEqual((step["n_base"] + step["base_left_out"], step["n_cand"]), (8, 8))
        self.assertEqual(step["verdict"], "regression", step)
        self.assertEqual(thr["verdict"], "regression", thr)
        self.assertGreater(step["change"], 0.30, step)
        self.assertGreater(step["cand_median"], 1.3 * step["base_median"])
        self.assertLess(thr["change"], -0.20, thr)
        self.assertStoredLikeReport(report)


class GateAdaptive(GateTestCase):
    def test_adaptive_confirms_a_regression_with_extra_trials(self):
        suite = self.noisy_suite(name="adapt")
        self.run_suite(suite, "--tag", "nightly")
        self.run_suite(suite, "--tag", "nightly")
        # Two candidate trials, 30 % slower: too few to test (min_trials 3).
        cand = self.run_suite(suite, "--set", "repeats=2", NOISY_SCALE="1.3")
        self.assertEqual(self.trial_count(cand), 2)
        # Judged as it stands (--underpowered warn: no trials launched), it is inconclusive
        # and says how many candidate trials would decide it.
        r, report = self.gate_json("--baseline", "tag:nightly", "--no-store", "--underpowered", "warn", expect=EXIT_OK)
        step = self.comparison(report, "step_time_ms")
        self.assertEqual(step["verdict"], "inconclusive")
        self.assertGreater(step["extra_trials"], 0)
        self.assertIn("at least 3 per side", step["note"])
        self.assertTrue(step["underpowered"])
        self.assertEqual(self.trial_count(cand), 2)

        # The adaptive gate runs more candidate trials (the slower build still) and confirms it.
        js = self.tmp / "adaptive.json"
        r = self.pg("gate", "--baseline", "tag:nightly", "--adaptive", "--max-trials", "10", "--json", js,
                    NOISY_SCALE="1.3")
        self.assertExit(r, EXIT_REGRESSION, "adaptive gate")
        report = json.loads(js.read_text())
        added = report["adaptive"]["trials_added"]
        self.assertTrue(report["adaptive"]["enabled"])
        self.assertGreaterEqual(added, 1)
        self.assertGreaterEqual(report["adaptive"]["rounds"], 1)
        self.assertEqual(self.trial_count(cand), 2 + added)  # the trials went into the candidate run
        self.assertLessEqual(self.trial_count(cand), 10)
        self.assertEqual(sorted(r[0] for r in self.query("SELECT repeat FROM trials WHERE run_id = ?", (cand,))),
                         list(range(2 + added)))
        self.assertEqual(self.query("SELECT count(*) FROM trials WHERE run_id = ? AND status = 'ok'", (cand,))[0][0],
                         2 + added)
        for metric in ("step_time_ms", "throughput"):
            c = self.comparison(report, metric)
            self.assertEqual(c["verdict"], "regression", c)
            self.assertEqual(c["n_cand"], 2 + added)
            self.assertEqual(c["added_trials"], added)
        self.assertIn(f"adaptive: {added} trial(s) added in {report['adaptive']['rounds']} round(s)",
                      report["headline"])
        # The table says it, in the headline and per comparison; the progress of the added trials is on stderr.
        self.assertIn(f"adaptive: {added} trial(s) added", r.stdout.strip().splitlines()[-1])
        step_row = [l for l in r.stdout.splitlines() if l.startswith("regression") and " step_time_ms " in l]
        self.assertEqual(len(step_row), 1, r.stdout)
        self.assertIn(f"{added} trial(s) added", step_row[0])
        self.assertEqual(len(re.findall(r"(?m)^\[\d+/\d+\] steps .* ok ", r.stderr)), added, r.stderr)
        g = self.assertStoredLikeReport(report)
        self.assertEqual(g["trials_added"], added)

        # Gated again, without --adaptive: the added trials count as the candidate's own.
        _, again = self.gate_json("--baseline", "tag:nightly", "--no-store", expect=EXIT_REGRESSION)
        self.assertEqual(self.comparison(again, "step_time_ms")["n_cand"], 2 + added)

    def test_adaptive_stops_at_max_trials(self):
        # 15 % CV on both sides and no real change: no number of trials decides
        # it within the cap, so the gate tops the candidate up to --max-trials.
        suite = self.noisy_suite(name="adapt-noisy", params="{cv: 0.15}", extra_args=("--cv", "{cv}"))
        self.run_suite(suite, "--tag", "nightly")
        self.run_suite(suite, "--tag", "nightly")
        cand = self.run_suite(suite, "--set", "repeats=2")
        r, report = self.gate_json("--baseline", "tag:nightly", "--adaptive", "--max-trials", "6", expect=EXIT_OK)
        self.assertEqual(report["outcome"], "inconclusive")
        self.assertEqual(self.trial_count(cand), 6)
        self.assertEqual(report["adaptive"]["trials_added"], 4)
        step = self.comparison(report, "step_time_ms")
        self.assertEqual(step["verdict"], "inconclusive")
        self.assertEqual((step["n_base"], step["n_cand"], step["added_trials"]), (10, 6, 4))
        self.assertIn("adaptive: 4 trial(s) added", report["headline"])
        self.assertEqual(self.gate_rows()[-1]["trials_added"], 4)
        # At the cap already: nothing more is launched, and --strict makes the open question exit 4.
        r, report = self.gate_json("--baseline", "tag:nightly", "--adaptive", "--max-trials", "6", "--strict")
        self.assertExit(r, EXIT_INCONCLUSIVE)
        self.assertEqual(report["adaptive"]["trials_added"], 0)
        self.assertEqual(self.trial_count(cand), 6)
        # --max-trials below 2 is a usage error.
        r = self.pg("gate", "--baseline", "tag:nightly", "--adaptive", "--max-trials", "1")
        self.assertExit(r, EXIT_INPUT)
        self.assertEqual(self.trial_count(cand), 6)

    def test_adaptive_gate_from_another_directory(self):
        # CI runs `perfgate run suites/x.yaml` from the checkout and may gate from
        # elsewhere; the adaptive gate must still find the candidate's suite.
        suite = self.noisy_suite(name="adapt-cwd")
        rel = suite.name
        self.run_suite(rel, "--tag", "nightly", cwd=self.tmp)
        self.run_suite(rel, "--tag", "nightly", cwd=self.tmp)
        cand = self.run_suite(rel, "--set", "repeats=2", cwd=self.tmp, NOISY_SCALE="1.3")
        elsewhere = self.tmp / "elsewhere"
        elsewhere.mkdir()
        r, report = self.gate_json("--baseline", "tag:nightly", "--adaptive", "--max-trials", "10", cwd=elsewhere,
                                   NOISY_SCALE="1.3")
        self.assertExit(r, EXIT_REGRESSION, "adaptive gate started in another directory than the run")
        self.assertGreater(self.trial_count(cand), 2)

    def test_short_baseline_is_not_topped_up_with_candidate_trials(self):
        # A baseline of one trial can never be tested (min_trials 3 per side) and
        # cannot be re-run: candidate trials cannot decide the comparison, so the
        # report must not promise that they would and --adaptive must not spend them.
        suite = self.noisy_suite(name="short", repeats=1)
        self.run_suite(suite)
        cand = self.run_suite(suite)
        # Underpowered, and no rerun helps: the gate fails (exit 1) and says to pool more runs.
        r, report = self.gate_json("--baseline", "1", "--no-store", expect=EXIT_REGRESSION)
        self.assertEqual(report["outcome"], "underpowered")
        step = self.comparison(report, "step_time_ms")
        self.assertEqual(step["verdict"], "inconclusive")
        self.assertIn("baseline is short", step["note"])
        self.assertLessEqual(step["extra_trials"], 0, "promises candidate trials that cannot decide: " + step["note"])
        self.assertEqual(step["trials_for_resolution"], -1)
        self.assertIn("pool more baseline runs", " ".join(report["warnings"]))
        self.assertEqual(self.trial_count(cand), 1)
        _, report = self.gate_json("--baseline", "1", "--adaptive", "--max-trials", "5", "--no-store",
                                   expect=EXIT_REGRESSION)
        self.assertEqual(report["adaptive"]["trials_added"], 0)
        self.assertEqual(self.trial_count(cand), 1)


class GateBadInput(GateTestCase):
    def test_unknown_runs_and_empty_baselines_are_input_errors(self):
        suite = self.noisy_suite(repeats=3)
        self.nightly_and_candidate(suite, nightly=1)
        for args, words in ((("gate", "--run", "99", "--baseline", "tag:nightly"), ["99"]),
                            (("gate", "--baseline", "42"), ["42"]),
                            (("compare", "1", "77"), ["77"]),
                            (("compare", "latest:nope", "2"), ["nope"]),
                            (("gate", "--baseline", "tag:nope"), ["tag:nope", "no completed run"]),
                            (("gate", "--baseline", "commit:abc123"), ["commit:abc123"]),
                            (("gate", "--baseline", "tag:nightly,colour:red"), ["colour"]),
                            (("gate", "--baseline", "2"), ["candidate run itself"]),
                            (("history", "--suite", "nope"), ["nope"]),
                            (("gate", "--baseline", "tag:nightly", "--metric", "no_such_metric"), ["nothing to compare"])):
            r = self.pg(*args)
            self.assertExit(r, EXIT_INPUT, " ".join(args))
            for w in words:
                self.assertIn(w, r.stderr, " ".join(args))
        # The first run has nothing before it.
        r = self.pg("gate", "--run", "1", "--baseline", "tag:nightly")
        self.assertExit(r, EXIT_INPUT)
        self.assertEqual(self.gate_rows(), [], "a refused gate stores nothing")
        # No database at all.
        r = self.perfgate("gate", "--baseline", "tag:nightly", db=self.tmp / "none.db", env=self.wl_env())
        self.assertExit(r, EXIT_INPUT)
        self.assertFalse((self.tmp / "none.db").exists())

    def test_bad_format_is_refused_before_anything_is_stored(self):
        # An unknown --format is a usage error (2): "nothing was run", so no gate
        # row and no report files either.
        suite = self.noisy_suite(repeats=3)
        self.nightly_and_candidate(suite, nightly=1)
        md = self.tmp / "gate.md"
        r = self.pg("gate", "--baseline", "tag:nightly", "--format", "yaml", "--markdown", md)
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("yaml", r.stderr)
        self.assertEqual(self.gate_rows(), [])
        self.assertFalse(md.exists())

    def move_to_another_machine(self, run_ids, field="cpu_model", value="Other CPU 9000"):
        """Edits the stored fingerprint (one comparable field, and the hash) of these runs."""
        con = sqlite3.connect(self.db, timeout=10)
        try:
            for rid in run_ids:
                (fp,) = con.execute("SELECT fingerprint FROM runs WHERE id = ?", (rid,)).fetchone()
                fp = json.loads(fp)
                fp[field] = value
                con.execute("UPDATE runs SET fingerprint = ?, fingerprint_hash = ? WHERE id = ?",
                            (json.dumps(fp), "0123456789abcdef", rid))
            con.commit()
        finally:
            con.close()

    def test_baseline_of_another_machine_is_refused_unless_forced(self):
        suite = self.noisy_suite()
        base, cand = self.nightly_and_candidate(suite)
        self.move_to_another_machine(base)
        r = self.pg("gate", "--baseline", "tag:nightly")
        self.assertExit(r, EXIT_INPUT, "baseline of another machine")
        self.assertIn("cpu_model", r.stderr)
        self.assertIn("Other CPU 9000", r.stderr)
        self.assertIn("--force", r.stderr)
        r = self.pg("compare", base[0], cand)
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("cpu_model", r.stderr)
        self.assertEqual(self.gate_rows(), [])

        r, report = self.gate_json("--baseline", "tag:nightly", "--force", expect=EXIT_OK)
        self.assertEqual(report["baseline"]["runs"], [3, 2, 1])
        self.assertTrue(any("cpu_model" in w for w in report["warnings"]), report["warnings"])
        self.assertEqual(self.gate_rows()[-1]["forced"], 1)
        r = self.pg("compare", base[0], cand, "--force")
        self.assertExit(r, EXIT_OK)
        self.assertIn("warning:", r.stdout)

    def test_runs_of_another_machine_are_left_out_of_a_pool(self):
        suite = self.noisy_suite()
        base, cand = self.nightly_and_candidate(suite)
        self.move_to_another_machine([base[0]], field="memory_gib", value=512)
        _, report = self.gate_json("--baseline", "tag:nightly", "--no-store", expect=EXIT_OK)
        self.assertEqual(report["baseline"]["runs"], [3, 2])
        self.assertTrue(any("memory_gib" in w and "skipped 1" in w for w in report["warnings"]), report["warnings"])
        self.assertEqual(self.comparison(report, "step_time_ms")["n_base"], 10)

    def test_malformed_policy_names_the_file_and_line(self):
        suite = self.noisy_suite(repeats=3)
        self.nightly_and_candidate(suite, nightly=1)
        cases = {
            "unknown-key.yaml": ("fdr: 0.01\nmin_trails: 3\n", 2, "min_trials"),
            "bad-threshold.yaml": ("fdr: 0.01\nmetrics:\n  - name: step_time_ms\n    threshold: -5%\n", 4, "threshold"),
            "bad-default.yaml": ("thresholds:\n  latency: fast\n", 2, "latency"),
            "bad-rule.yaml": ("metrics:\n  - name: step_time_ms\n    better: sideways\n", 3, "better"),
            "bad-fdr.yaml": ("description: x\nfdr: 2\n", 2, "fdr"),
        }
        for name, (text, line, word) in cases.items():
            path = self.tmp / name
            path.write_text(text)
            r = self.pg("gate", "--baseline", "tag:nightly", "--policy", path)
            self.assertExit(r, EXIT_INPUT, name)
            self.assertRegex(r.stderr, rf"{re.escape(name)}:{line}:\d+", name)
            self.assertIn(word, r.stderr, name)
        r = self.pg("gate", "--baseline", "tag:nightly", "--policy", self.tmp / "missing.yaml")
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("missing.yaml", r.stderr)
        self.assertEqual(self.gate_rows(), [])
        # A good policy is used and recorded.
        good = self.tmp / "good.yaml"
        good.write_text("fdr: 0.05\nmetrics:\n  - name: step_time_ms\n    threshold: 8%\n")
        r, report = self.gate_json("--baseline", "tag:nightly", "--policy", good, expect=EXIT_OK)
        self.assertEqual([c["metric"] for c in report["comparisons"]], ["step_time_ms"])
        self.assertAlmostEqual(report["comparisons"][0]["threshold"], 0.08)
        self.assertEqual(report["policy"]["fdr"], 0.05)
        self.assertEqual(self.gate_rows()[-1]["policy"], str(good))

    def test_candidate_whose_trials_failed(self):
        suite = self.noisy_suite(name="two", workloads=("a", "b"), repeats=3)
        self.run_suite(suite, "--tag", "nightly")
        # b fails in every trial, a is fine: the gate fails (1) with "failed" verdicts for b.
        part = self.run_suite(suite, NOISY_FAIL="b")
        self.assertEqual(self.query("SELECT count(*) FROM trials WHERE run_id = ? AND status = 'failed'", (part,))[0][0], 3)
        md, junit = self.tmp / "part.md", self.tmp / "part.xml"
        r, report = self.gate_json("--run", part, "--baseline", "tag:nightly", "--markdown", md, "--junit", junit)
        self.assertExit(r, EXIT_REGRESSION, "some configurations failed")
        self.assertEqual(report["outcome"], "regression")
        for metric in ("step_time_ms", "throughput"):
            c = self.comparison(report, metric, "b")
            self.assertEqual(c["verdict"], "failed", c)
            self.assertEqual((c["n_base"], c["n_cand"], c["failed_cand"]), (3, 0, 3))
            self.assertIn("every candidate trial failed", c["note"])
            self.assertIsNone(c["p"])
            # a: 3 trials a side, no change; whether the interval fits inside the threshold is not the point.
            self.assertIn(self.comparison(report, metric, "a")["verdict"], ("unchanged", "inconclusive"))
        self.assertEqual(set(self.verdicts(report, "b").values()), {"failed"})
        self.assertEqual(report["counts"]["regression"], 0)
        self.assertEqual(report["counts"]["failed"], len(self.verdicts(report, "b")))
        self.assertTrue(md.read_text().startswith("❌"))
        root = ET.parse(junit).getroot()
        self.assertEqual(int(root.get("failures")), report["counts"]["failed"])
        self.assertStoredLikeReport(report)

        # Every trial failed: every comparison failed, the harness could not do its work (3).
        full = self.run_suite(suite, NOISY_FAIL="all", expect=EXIT_HARNESS)
        r, report = self.gate_json("--run", full, "--baseline", "tag:nightly")
        self.assertExit(r, EXIT_HARNESS, "every comparison failed")
        self.assertEqual({c["verdict"] for c in report["comparisons"]}, {"failed"})
        self.assertEqual({c["workload"] for c in report["comparisons"]}, {"a", "b"})
        self.assertTrue(any("not completed" in w for w in report["warnings"]), report["warnings"])
        self.assertEqual(self.gate_rows()[-1]["run_id"], full)

    def test_failed_verdict_shows_the_baseline_median(self):
        # The baseline ran fine; only the candidate failed. Its row must not
        # claim the baseline measured 0 ms.
        suite = self.noisy_suite(repeats=3)
        self.run_suite(suite, "--tag", "nightly")
        self.run_suite(suite, NOISY_FAIL="all", expect=EXIT_HARNESS)
        r, report = self.gate_json("--baseline", "tag:nightly", "--no-store", expect=EXIT_HARNESS)
        c = self.comparison(report, "step_time_ms")
        self.assertEqual(c["verdict"], "failed")
        self.assertIsNotNone(c["base_median"])
        self.assertAlmostEqual(c["base_median"], 10.0, delta=0.5, msg=c)
        # Nothing to measure a change with: null, as the table's "-", not 0.
        self.assertIsNone(c["cand_median"], c)
        self.assertIsNone(c["change"], c)
        r = self.pg("gate", "--baseline", "tag:nightly", "--no-store")
        row = [l for l in r.stdout.splitlines() if l.startswith("failed") and "step_time_ms" in l]
        self.assertEqual(len(row), 1, r.stdout)
        self.assertNotRegex(row[0], r"\s0 ms\s", row[0])

    def test_single_trial_per_side_is_underpowered_or_inconclusive(self):
        suite = self.noisy_suite(repeats=1)
        self.run_suite(suite)
        cand = self.run_suite(suite)
        # No test can decide one trial against one: the gate cannot pass silently.
        r = self.pg("gate", "--baseline", "1")
        self.assertExit(r, EXIT_REGRESSION, "one trial per side")
        self.assertRegex(r.stdout.strip().splitlines()[-1], r"^UNDERPOWERED: ")
        self.assertEqual(self.trial_count(cand), 1, "a one-trial baseline is not topped up from the candidate side")
        # Said as a warning only, it is inconclusive and exits 0 (4 with --strict).
        r, report = self.gate_json("--baseline", "1", "--underpowered", "warn", expect=EXIT_OK)
        self.assertEqual(report["outcome"], "inconclusive")
        for metric in ("step_time_ms", "throughput"):
            c = self.comparison(report, metric)
            self.assertEqual(c["verdict"], "inconclusive")
            self.assertEqual((c["n_base"], c["n_cand"]), (1, 1))
            self.assertIsNone(c["p"])
            self.assertIsNone(c["change_low"])
            self.assertIsInstance(c["change"], float)
            self.assertIn("at least 3 per side", c["note"])
        self.assertStoredLikeReport(report)
        # --strict: inconclusive exits 4 (and still records the gate).
        n = len(self.gate_rows())
        r = self.pg("gate", "--baseline", "1", "--strict", "--underpowered", "warn")
        self.assertExit(r, EXIT_INCONCLUSIVE)
        self.assertEqual(len(self.gate_rows()), n + 1)
        self.assertEqual(self.gate_rows()[-1]["outcome"], "inconclusive")
        r = self.pg("compare", "1", cand, "--strict")
        self.assertExit(r, EXIT_INCONCLUSIVE)

    def test_zero_variance_is_unchanged(self):
        # Every step of every trial reports exactly 10 ms on both sides: all ties.
        suite = self.noisy_suite(repeats=4, params="{cv: 0}", extra_args=("--cv", "{cv}"))
        self.run_suite(suite, "--tag", "nightly")
        self.run_suite(suite)
        r, report = self.gate_json("--baseline", "tag:nightly", "--strict", expect=EXIT_OK)
        for metric in ("step_time_ms", "throughput", "first_step_ms"):
            c = self.comparison(report, metric)
            self.assertEqual(c["verdict"], "unchanged", c)
            self.assertEqual(c["change"], 0.0)
            self.assertEqual((c["change_low"], c["change_high"]), (0.0, 0.0))
            self.assertEqual(c["base_median"], c["cand_median"])
            self.assertIsInstance(c["p"], float)  # not NaN (null)
            self.assertGreaterEqual(c["p"], 0.5)
        self.assertEqual(self.comparison(report, "step_time_ms")["base_median"], 10.0)
        self.assertStoredLikeReport(report)

    def test_nan_values_get_a_verdict_not_a_crash(self):
        suite = self.noisy_suite(repeats=3)
        self.run_suite(suite, "--tag", "nightly")
        # Every third step NaN: left out of the trial values, which stay comparable.
        self.run_suite(suite, "--tag", "nightly", NOISY_NAN="every:3")
        r, report = self.gate_json("--baseline", "1", "--no-store", "--underpowered", "warn", expect=EXIT_OK)
        for metric in ("step_time_ms", "throughput"):
            self.assertEqual(self.comparison(report, metric)["verdict"], "unchanged")
        # Every step NaN: a verdict (or a message), not a crash, and valid JSON (no NaN literals).
        self.run_suite(suite, NOISY_NAN="all")
        for fmt in ("table", "markdown", "json"):
            r = self.pg("gate", "--baseline", "1", "--no-store", "--format", fmt)
            # step time and throughput failed (every value NaN); peak RSS, which the
            # harness measures, is still compared: a failed gate, not a harness error.
            self.assertExit(r, EXIT_REGRESSION, fmt)
            self.assertIn("step_time_ms", r.stdout)
            if fmt == "json":
                report = json.loads(r.stdout, parse_constant=lambda c: self.fail(f"{c} in the JSON report"))
                self.assertEqual(self.comparison(report, "step_time_ms")["verdict"], "failed")
                self.assertNotEqual(self.comparison(report, "peak_rss_mb")["verdict"], "failed")
        r, report = self.gate_json("--baseline", "tag:nightly")  # stored, too
        self.assertExit(r, EXIT_REGRESSION, "stored gate")
        self.assertStoredLikeReport(report)

    def test_all_nan_candidate_fails_the_gate(self):
        # A candidate that reports NaN for every step time is broken, like one
        # whose trials fail: gate.cpp's verdict for it is "failed" ("every
        # candidate value is NaN or infinite"), and the gate must not pass (exit 0).
        suite = self.noisy_suite(repeats=3)
        self.run_suite(suite, "--tag", "nightly")
        self.run_suite(suite, NOISY_NAN="all")
        r, report = self.gate_json("--baseline", "tag:nightly", "--no-store")
        for metric in ("step_time_ms", "throughput"):
            c = self.comparison(report, metric)
            self.assertEqual(c["verdict"], "failed", c)
            self.assertIn("NaN", c["note"])
        self.assertExit(r, EXIT_REGRESSION, "a candidate with NaN step times")


class History(GateTestCase):
    def test_history_finds_the_shift_and_nothing_in_a_flat_series(self):
        # 12 runs of the same suite and configurations; from the 7th run on the
        # "shifting" workload's steps take 10 % longer, the "flat" one's do not.
        lines = ["suite: hist", "defaults: {repeats: 3, warmup: {steps: 1}, timeout: 1m}", "workloads:",
                 "  - name: shifting", f"    command: {self.noisy_command()}",
                 # The last --scale-env wins: the flat workload reads a variable no run sets.
                 "  - name: flat", f"    command: {self.noisy_command('--scale-env', 'NOISY_FLAT_SCALE')}"]
        suite = self.write_suite("\n".join(lines) + "\n")
        ids = []
        for i in range(1, 13):
            ids.append(self.run_suite(suite, "--commit", f"c{i:02d}", NOISY_SCALE="1.10" if i >= 7 else "1.0"))
        r = self.pg("history", "--suite", "hist", "--metric", "step_time_ms", "--format", "json")
        self.assertExit(r, EXIT_OK, "history")
        h = json.loads(r.stdout)
        self.assertEqual(h["runs"], 12)
        series = {s["workload"]: s for s in h["series"]}
        self.assertEqual(set(series), {"shifting", "flat"})
        for s in series.values():
            self.assertEqual(s["metric"], "step_time_ms")
            self.assertEqual([p["run"] for p in s["points"]], ids)
            self.assertTrue(all(p["n"] == 3 for p in s["points"]))
        cps = series["shifting"]["change_points"]
        self.assertEqual(len(cps), 1, cps)
        cp = cps[0]
        self.assertEqual(cp["index"], 6)
        self.assertEqual(cp["run"], ids[6])
        self.assertEqual(cp["commit"], "c07")
        self.assertGreater(cp["change"], 0.07)
        self.assertLess(cp["change"], 0.13)
        self.assertGreater(cp["after"], cp["before"])
        self.assertTrue(cp["regression"])
        self.assertLessEqual(cp["p"], h["significance"])
        self.assertEqual(series["flat"]["change_points"], [])

        r = self.pg("history", "--suite", "hist", "--metric", "step_time_ms")
        self.assertExit(r, EXIT_OK)
        self.assertNotIn(ANSI, r.stdout)
        self.assertIn(f"run {ids[6]} (c07)", r.stdout)
        self.assertIn("2 series, 1 change point(s)", r.stdout)
        flat_row = [l for l in r.stdout.splitlines() if l.startswith("flat")]
        self.assertEqual(len(flat_row), 1)
        self.assertTrue(flat_row[0].rstrip().endswith("none"), flat_row)

        # --config narrows to one series; --limit 6 reads the newest six runs, all after the shift: no change.
        r = self.pg("history", "--suite", "hist", "--metric", "step_time_ms", "--config", "workload=shifting",
                    "--limit", "6", "--format", "json")
        self.assertExit(r, EXIT_OK)
        h = json.loads(r.stdout)
        self.assertEqual([s["workload"] for s in h["series"]], ["shifting"])
        self.assertEqual([p["run"] for p in h["series"][0]["points"]], ids[6:])
        self.assertEqual(h["series"][0]["change_points"], [])


if __name__ == "__main__":
    unittest.main()
