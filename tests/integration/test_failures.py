"""Workloads that cannot start or that fail: recorded per trial, the run goes on."""

import os
import signal
import unittest

from support import EXIT_HARNESS, PerfgateTestCase, flow_list, metric


class BrokenWorkloads(PerfgateTestCase):
    def setUp(self):
        super().setUp()
        self.missing = self.tmp / "no-such-binary"
        self.not_exec = self.tmp / "not-executable.sh"
        self.not_exec.write_text("#!/bin/sh\necho hi\n")
        os.chmod(self.not_exec, 0o644)
        self.no_shebang = self.tmp / "no-shebang"
        self.no_shebang.write_text("echo hi\n")
        os.chmod(self.no_shebang, 0o755)

    def by_workload(self, show):
        """{workload name: [trials]} using the configs of the run."""
        names = {c["config_id"]: c["workload"] for c in show["configs"]}
        out = {}
        for t in show["trials"]:
            out.setdefault(names[t["config_id"]], []).append(t)
        return out

    def test_missing_and_non_executable_binaries_fail_their_trials_only(self):
        suite = self.write_suite(f"""\
suite: broken
defaults:
  repeats: 2
  timeout: 20s
workloads:
  - name: good
    command: {self.command("steps.py", "--steps", "3")}
  - name: missing
    command: {flow_list([str(self.missing), "--x"])}
  - name: not-exec
    command: {flow_list([str(self.not_exec)])}
  - name: not-on-path
    command: [perfgate-no-such-command-on-path, --x]
  - name: no-shebang
    command: {flow_list([str(self.no_shebang)])}
""")
        r = self.perfgate("run", suite)
        self.assertExit(r, 0, "some trials ran fine, so the run succeeded")
        self.assertIn("8 of 10 trials failed", r.stderr)

        show = self.show_json()
        self.assertEqual(show["run"]["status"], "completed")
        self.assertEqual(show["trials_ok"], 2)
        self.assertEqual(show["trials_failed"], 8)
        per = self.by_workload(show)
        self.assertEqual([t["status"] for t in per["good"]], ["ok", "ok"])
        for t in per["good"]:
            self.assertEqual(t["steps"], 3)
            self.assertEqual(t["exit_code"], 0)
        expectations = {
            "missing": [str(self.missing), "does not exist"],
            "not-exec": [str(self.not_exec), "not executable"],
            "not-on-path": ["perfgate-no-such-command-on-path", "not found"],
            "no-shebang": [str(self.no_shebang), "Exec format error"],
        }
        for name, words in expectations.items():
            self.assertEqual(len(per[name]), 2, name)
            for t in per[name]:
                self.assertEqual(t["status"], "failed", (name, t))
                for w in words:
                    self.assertIn(w, t["error"], (name, t["error"]))
        # The failed configurations say why in the summary as well, and have no metrics.
        for c in show["configs"]:
            if c["workload"] == "good":
                self.assertEqual(metric(c, "throughput")["n"], 2)
            else:
                self.assertEqual(c["trials_failed"], 2)
                self.assertEqual(len(c["failures"]), 2)
                self.assertFalse([m for m in c["metrics"] if not m["harness_metric"]], c["metrics"])
        # The terminal table of `show` lists the failures.
        r = self.perfgate("show", "latest")
        self.assertExit(r, 0)
        self.assertIn("not executable", r.stdout)

    def test_every_trial_failing_is_a_harness_error(self):
        suite = self.write_suite(f"""\
suite: all-broken
defaults:
  repeats: 2
workloads:
  - name: missing
    command: {flow_list([str(self.missing)])}
  - name: crashing
    command: {self.command("fail.py", "exit", "3")}
""")
        r = self.perfgate("run", suite)
        self.assertExit(r, EXIT_HARNESS)
        self.assertIn("every trial", r.stderr)
        runs = self.runs_json()
        self.assertEqual(len(runs), 1)
        self.assertEqual(runs[0]["status"], "failed")
        self.assertEqual(runs[0]["trials_ok"], 0)
        self.assertEqual(runs[0]["trials_failed"], 4)
        show = self.show_json()
        self.assertEqual(set(t["status"] for t in show["trials"]), {"failed"})


class FailingWorkloads(PerfgateTestCase):
    def run_one(self, *args):
        suite = self.write_suite(f"""\
suite: failing
defaults:
  repeats: 1
  timeout: 20s
workloads:
  - name: good
    command: {self.command("steps.py", "--steps", "2")}
  - name: bad
    command: {self.command("fail.py", *args)}
""")
        r = self.perfgate("run", suite)
        self.assertExit(r, 0)
        show = self.show_json()  # must work whatever the workload printed
        names = {c["config_id"]: c["workload"] for c in show["configs"]}
        bad = [t for t in show["trials"] if names[t["config_id"]] == "bad"]
        good = [t for t in show["trials"] if names[t["config_id"]] == "good"]
        self.assertEqual(len(bad), 1)
        self.assertEqual([t["status"] for t in good], ["ok"])
        return r, show, bad[0]

    def assertStderrTail(self, error, tag):
        self.assertIn(f"FATAL {tag}: boom", error)
        self.assertIn("stderr line 14", error)
        # Only the last lines, not the whole stream.
        self.assertNotIn("stderr line 0\n", error + "\n")

    def test_non_zero_exit(self):
        r, show, t = self.run_one("exit", "7", self.marker)
        self.assertEqual(t["status"], "failed")
        self.assertEqual(t["exit_code"], 7)
        self.assertEqual(t["signal"], 0)
        self.assertIn("exited with code 7", t["error"])
        self.assertStderrTail(t["error"], self.marker)
        # The step it reported before failing is counted, but a failed trial is not summarised.
        self.assertEqual(t["steps"], 1)
        bad_cfg = [c for c in show["configs"] if c["workload"] == "bad"][0]
        self.assertEqual(bad_cfg["trials_failed"], 1)
        self.assertTrue(any(f"FATAL {self.marker}: boom" in f for f in bad_cfg["failures"]), bad_cfg["failures"])
        self.assertIn("failed", r.stderr)

    def test_stderr_that_is_not_utf8(self):
        # Workloads do print binary junk; the failure is still recorded and every report still works.
        r, show, t = self.run_one("exit", "1", self.marker, "--binary")
        self.assertEqual(t["status"], "failed")
        self.assertIn(f"FATAL {self.marker}: boom", t["error"])
        self.assertIn("binary", t["error"])
        for fmt in ("table", "markdown"):
            self.assertExit(self.perfgate("show", "latest", "--format", fmt), 0, fmt)

    def test_killed_by_signal(self):
        for sig in (signal.SIGKILL, signal.SIGSEGV):
            with self.subTest(sig=sig.name):
                if self.db.exists():
                    for p in self.tmp.glob("perfgate.db*"):
                        p.unlink()
                _, _, t = self.run_one("signal", str(int(sig)), self.marker)
                self.assertEqual(t["status"], "failed")
                self.assertEqual(t["signal"], int(sig))
                self.assertIn(f"signal {int(sig)}", t["error"])
                self.assertStderrTail(t["error"], self.marker)


if __name__ == "__main__":
    unittest.main()
