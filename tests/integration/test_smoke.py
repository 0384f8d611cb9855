"""The shipped smoke suite end to end: run, runs, show in every format."""

import re
import unittest

from support import EXIT_INPUT, SOURCE_DIR, PerfgateTestCase, metric


class SmokeSuite(PerfgateTestCase):
    """suites/smoke.yaml run from the repository root into a temporary database."""

    def test_run_and_report(self):
        self.assertTrue((SOURCE_DIR / "suites" / "smoke.yaml").is_file())
        r = self.perfgate("run", "suites/smoke.yaml", cwd=SOURCE_DIR, timeout=150)
        self.assertExit(r, 0, "perfgate run suites/smoke.yaml")
        self.assertIn("[12/12]", r.stderr)

        # runs: table and JSON both know the run and that it completed.
        r = self.perfgate("runs")
        self.assertExit(r, 0)
        rows = [l for l in r.stdout.splitlines() if re.match(r"\s*1\s+smoke\s", l)]
        self.assertEqual(len(rows), 1, r.stdout)
        self.assertIn("completed", rows[0])
        runs = self.runs_json()
        self.assertEqual(len(runs), 1)
        self.assertEqual(runs[0]["suite"], "smoke")
        self.assertEqual(runs[0]["status"], "completed")
        self.assertEqual(runs[0]["trials_ok"], 12)
        self.assertEqual(runs[0]["trials_failed"], 0)
        # Artifacts go next to the database, never into the repository's results/.
        self.assertTrue(runs[0]["artifacts_dir"].startswith(str(self.tmp)), runs[0]["artifacts_dir"])

        show = self.show_json("latest")
        self.assertEqual(show["run"]["status"], "completed")
        self.assertEqual(show["trials_ok"], 12)
        self.assertEqual(len(show["trials"]), 12)
        self.assertTrue(all(t["status"] == "ok" for t in show["trials"]), show["trials"])

        # One configuration per matrix point: graph_mode x fusion on perfgate-sim.
        configs = show["configs"]
        self.assertEqual(sorted((c["params"]["graph_mode"], c["params"]["fusion"]) for c in configs),
                         [("eager", "off"), ("eager", "on"), ("graph", "off"), ("graph", "on")])
        for c in configs:
            self.assertEqual(c["workload"], "sim")
            self.assertEqual(c["trials_ok"], 3)
            for name in ("throughput", "step_time_ms"):
                m = metric(c, name)
                self.assertEqual(m["n"], 3, (c["label"], name))
                self.assertEqual(len(m["trials"]), 3)
                self.assertEqual(sorted(t["repeat"] for t in m["trials"]), [0, 1, 2])
                values = [t["value"] for t in m["trials"]]
                self.assertTrue(all(isinstance(v, float) and v > 0 for v in values), values)
                # 20 steps, 3 of them warm-up.
                self.assertTrue(all(t["n_steps"] == 20 and t["n_steady"] == 17 for t in m["trials"]), m["trials"])
                ci = m["ci"]
                self.assertIsNotNone(ci["low"])
                self.assertLessEqual(ci["low"], m["median"])
                self.assertLessEqual(m["median"], ci["high"])
                self.assertAlmostEqual(m["median"], sorted(values)[1], places=9)
            self.assertEqual(metric(c, "throughput")["unit"], "samples/s")
            self.assertEqual(metric(c, "throughput")["better"], "higher")
            self.assertEqual(metric(c, "step_time_ms")["better"], "lower")
            self.assertIsNotNone(c["first_step_ms"])
            self.assertGreater(c["first_step_ms"], 0)

        # The same run by id and by `latest` are the same document.
        self.assertEqual(self.show_json(str(show["run"]["id"])), show)

        # Markdown: a pipe table with a header separator and a row per metric.
        r = self.perfgate("show", "latest", "--format", "markdown")
        self.assertExit(r, 0)
        lines = r.stdout.splitlines()
        header = [l for l in lines if l.startswith("| workload |")]
        self.assertEqual(len(header), 1, r.stdout)
        sep = lines[lines.index(header[0]) + 1]
        self.assertRegex(sep, r"^\|(\s*:?-{3,}:?\s*\|)+$")
        def cells(line):  # an escaped pipe (backslash, bar) is text inside a cell
            return len(re.findall(r"(?<!\\)\|", line))
        ncols = cells(header[0])
        body = [l for l in lines[lines.index(header[0]) + 2:] if l.startswith("|")]
        self.assertTrue(any("throughput" in l for l in body), r.stdout)
        self.assertTrue(any("step_time_ms" in l for l in body), r.stdout)
        self.assertTrue(all(cells(l) == ncols for l in body), r.stdout)
        facts = [l for l in body if "| facts |" in l]
        self.assertTrue(facts and all("ranks=2 " in l for l in facts), r.stdout)

        # The default table names the run and its metrics too.
        r = self.perfgate("show", "latest")
        self.assertExit(r, 0)
        self.assertIn("throughput", r.stdout)
        self.assertIn("smoke", r.stdout)

        # Unknown runs are input errors.
        for selector in ("99", "latest:no-such-tag", "yesterday"):
            r = self.perfgate("show", selector)
            self.assertExit(r, EXIT_INPUT, f"show {selector}")
            self.assertIn("error", r.stderr)
            self.assertEqual(r.stdout, "")
        # So is an unknown format.
        r = self.perfgate("show", "latest", "--format", "yaml")
        self.assertExit(r, EXIT_INPUT)

    def test_show_without_database(self):
        r = self.perfgate("show", "latest")
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("no database", r.stderr)
        self.assertFalse(self.db.exists(), "show must not create a database")
        # Every read-only command: a database that does not exist is an input error, never a new empty file.
        for args in (["runs"], ["gate", "--run", "latest", "--baseline", "1"], ["dashboard", "--out", str(self.tmp / "dash")]):
            r = self.perfgate(*args)
            self.assertExit(r, EXIT_INPUT)
            self.assertIn("no database", r.stderr)
            self.assertFalse(self.db.exists(), f"{args[0]} must not create a database")


if __name__ == "__main__":
    unittest.main()
