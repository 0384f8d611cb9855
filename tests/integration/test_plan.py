"""The plan: dry runs, seeded trial order, --set / --only / --tag / --commit, and how
parameters reach a workload (argv, PERFGATE_PARAM_<NAME>, PERFGATE_PARAMS)."""

import itertools
import json
import re
import unittest
from pathlib import Path

from support import PERFGATE_BIN, SOURCE_DIR, PerfgateTestCase, flow_list, metric, workload

DRY_TRIAL = re.compile(r"^\s*(\d+)  (.+?)  repeat (\d+)$")
PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] (.+?) \(repeat (\d+)\)  ")


def dry_trials(stdout):
    """[(seq, label, repeat, command line)] from `run --dry-run` output."""
    lines = stdout.splitlines()
    out = []
    for i, line in enumerate(lines):
        m = DRY_TRIAL.match(line)
        if m:
            cmd = lines[i + 1].strip() if i + 1 < len(lines) else ""
            out.append((int(m.group(1)), m.group(2), int(m.group(3)), cmd))
    return out


class DryRunAndOrder(PerfgateTestCase):
    AS = [1, 2, 3]
    BS = ["x", "y"]
    REPEATS = 2

    def setUp(self):
        super().setUp()
        # 3 x 2 = 6 configurations, 2 repeats: 12 trials.
        self.suite = self.write_suite(f"""\
suite: order
defaults:
  repeats: {self.REPEATS}
  timeout: 20s
workloads:
  - name: w
    command: {flow_list([self.python, workload("steps.py"), "--steps", "2", "--throughput", "{a}", "--marker", self.marker + "-{b}"])}
    matrix:
      a: {json.dumps(self.AS)}
      b: {json.dumps(self.BS)}
""")

    def dry(self, *extra):
        r = self.perfgate("run", self.suite, "--dry-run", *extra)
        self.assertExit(r, 0, "run --dry-run")
        return r, dry_trials(r.stdout)

    def test_dry_run_lists_every_trial_and_touches_nothing(self):
        r, trials = self.dry("--seed", "7")
        self.assertIn("6 configuration(s), 12 trial(s)", r.stdout)
        self.assertIn("seed 7", r.stdout)
        self.assertEqual([t[0] for t in trials], list(range(1, 13)), r.stdout)
        expected = {(f"a={a} b={b}", rep) for a, b, rep in itertools.product(self.AS, self.BS, range(1, self.REPEATS + 1))}
        self.assertEqual({(label.split(" ", 1)[1] if label.startswith("w ") else label, rep) for _, label, rep, _ in trials},
                         expected, r.stdout)
        # Each trial's command has its own parameters substituted.
        for _, label, _, cmd in trials:
            a = re.search(r"a=(\S+)", label).group(1)
            b = re.search(r"b=(\S+)", label).group(1)
            self.assertIn(f"--throughput {a} ", cmd)
            self.assertIn(f"{self.marker}-{b}", cmd)
            self.assertNotIn("{", cmd)
        # Interleaved: every configuration's first repeat comes before any second repeat.
        reps = [rep for _, _, rep, _ in trials]
        self.assertEqual(reps, sorted(reps), "repeats should be interleaved round by round")
        # Nothing ran, nothing was written.
        self.assertFalse(self.db.exists(), "--dry-run created the database")
        self.assertFalse((self.tmp / "runs").exists(), "--dry-run created artifacts")
        self.assertEqual(sorted(p.name for p in self.tmp.iterdir()), ["bin", "suite.yaml"])

    def test_dry_run_shows_the_programs_a_run_would_start(self):
        # The shipped smoke suite names {perfgate_libexec}/perfgate-sim: the dry run
        # shows the path the run resolves (this build folder), not the placeholder.
        r = self.perfgate("run", SOURCE_DIR / "suites/smoke.yaml", "--dry-run")
        self.assertExit(r, 0, "run --dry-run of suites/smoke.yaml")
        sim = str(Path(PERFGATE_BIN).resolve().parent / "perfgate-sim")
        self.assertIn(sim + " ", r.stdout)
        self.assertNotIn("{perfgate_libexec}", r.stdout)

    def test_seed_decides_the_order(self):
        _, first = self.dry("--seed", "7")
        _, again = self.dry("--seed", "7")
        _, other = self.dry("--seed", "8")
        order = lambda ts: [(label, rep) for _, label, rep, _ in ts]
        self.assertEqual(order(first), order(again), "the same seed must give the same order")
        self.assertEqual(sorted(order(first)), sorted(order(other)))
        self.assertNotEqual(order(first), order(other), "a different seed should shuffle 6 configurations differently")

    def test_real_run_follows_the_dry_run_order(self):
        _, planned = self.dry("--seed", "11")
        r = self.perfgate("run", self.suite, "--seed", "11")
        self.assertExit(r, 0)
        done = [PROGRESS.match(l) for l in r.stderr.splitlines()]
        done = [(int(m.group(1)), m.group(3), int(m.group(4))) for m in done if m]
        self.assertEqual(done, [(seq, label, rep) for seq, label, rep, _ in planned], r.stderr)
        show = self.show_json()
        self.assertEqual(show["run"]["seed"], 11)
        self.assertEqual(len(show["configs"]), 6)
        self.assertEqual([t["seq"] for t in show["trials"]], list(range(12)))
        # The workload saw its parameter: throughput is the value of axis a.
        for c in show["configs"]:
            m = metric(c, "throughput")
            self.assertEqual(m["n"], 2)
            self.assertEqual(m["median"], float(c["params"]["a"]))


class ParametersAndOverrides(PerfgateTestCase):
    def test_set_only_tag_commit(self):
        # `python3` on purpose: this suite also goes through perfgate's python/torch fingerprint probe.
        suite = self.write_suite(f"""\
suite: params
defaults:
  repeats: 1
  timeout: 30s
workloads:
  - name: echo
    command: [python3, {json.dumps(workload("echo_params.py"))}, "{{bucket_mb}}", "{{graph_mode}}"]
    matrix:
      graph_mode: [eager, graph]
      bucket_mb: [25]
""")
        r = self.perfgate("run", suite, "--set", "bucket_mb=5,25", "--set", "repeats=3", "--only", "graph_mode=graph",
                          "--tag", "nightly", "--commit", "abc123")
        self.assertExit(r, 0)
        self.assertIn("2 configuration(s) x repeats = 6 trial(s)", r.stderr)
        self.assertIn("[6/6]", r.stderr)
        self.assertNotIn("[7/", r.stderr)

        # A later, untagged run must not be what latest:nightly finds.
        r2 = self.perfgate("run", suite, "--only", "graph_mode=eager", "--commit", "def456")
        self.assertExit(r2, 0)
        self.assertIn("1 configuration(s) x repeats = 1 trial(s)", r2.stderr)
        self.assertEqual(self.show_json("latest")["run"]["git_commit"], "def456")

        show = self.show_json("latest:nightly")
        run = show["run"]
        self.assertEqual(run["id"], 1)
        self.assertEqual(run["git_commit"], "abc123")
        self.assertEqual(run["tags"], ["nightly"])
        self.assertIn("--only graph_mode=graph", run["command_line"])
        self.assertEqual(len(show["trials"]), 6)
        self.assertEqual(show["trials_ok"], 6)
        self.assertEqual(sorted(c["params"]["bucket_mb"] for c in show["configs"]), [5, 25])
        for c in show["configs"]:
            bucket = c["params"]["bucket_mb"]
            self.assertEqual(c["params"]["graph_mode"], "graph")
            self.assertEqual(c["trials_ok"], 3)
            for name in ("argv_bucket_mb", "env_bucket_mb", "json_bucket_mb"):
                m = metric(c, name)
                self.assertEqual(m["n"], 3, name)
                self.assertEqual([t["value"] for t in m["trials"]], [float(bucket)] * 3, (name, c["label"]))
            self.assertEqual([t["value"] for t in metric(c, "graph_mode_agrees")["trials"]], [1.0] * 3)
            self.assertEqual(metric(c, "throughput")["n"], 3)

        # Exactly what arrived, from the workload's own record in each trial directory.
        by_config = {c["config_id"]: c["params"] for c in show["configs"]}
        for t in show["trials"]:
            seen = json.loads((Path(t["log_dir"]) / "seen.json").read_text())
            params = by_config[t["config_id"]]
            self.assertEqual(seen["argv"], [str(params["bucket_mb"]), "graph"])
            self.assertEqual(seen["env"].get("PERFGATE_PARAM_BUCKET_MB"), str(params["bucket_mb"]))
            self.assertEqual(seen["env"].get("PERFGATE_PARAM_GRAPH_MODE"), "graph")
            self.assertEqual(seen["params"], {"bucket_mb": params["bucket_mb"], "graph_mode": "graph"})
            self.assertEqual(seen["trial_dir"], t["log_dir"])
            self.assertTrue(seen["metrics"].startswith(t["log_dir"]))

    def test_only_that_matches_nothing_is_an_input_error(self):
        suite = self.write_suite(f"""\
suite: params
workloads:
  - name: echo
    command: {self.command("steps.py", "--steps", "1", "--touch", str(self.tmp / "ran"))}
    matrix:
      graph_mode: [eager, graph]
""")
        r = self.perfgate("run", suite, "--only", "graph_mode=both")
        self.assertExit(r, 2)
        r = self.perfgate("run", suite, "--set", "bukcet_mb=5")
        self.assertExit(r, 2)
        self.assertIn("bukcet_mb", r.stderr)
        self.assertFalse((self.tmp / "ran").exists())
        self.assertFalse(self.db.exists())


if __name__ == "__main__":
    unittest.main()
