"""Timeouts, process groups, Ctrl-C / SIGTERM and SIGKILL of perfgate itself."""

import signal
import sqlite3
import time
import unittest
from pathlib import Path

from support import EXIT_HARNESS, PerfgateTestCase, marked_pids, kill_marked, wait_until


class Timeouts(PerfgateTestCase):
    # Asserts durations (a timeout and its grace, within seconds).
    measures_time = True

    def run_hang(self, *hang_args, extra_workload=True, timeout="1s"):
        good = f"""
  - name: after
    command: {self.command("steps.py", "--steps", "2")}""" if extra_workload else ""
        suite = self.write_suite(f"""\
suite: hang
order: sequential
defaults:
  repeats: 1
  timeout: {timeout}
  kill_grace: 0.5s
workloads:
  - name: hang
    command: {self.command("hang.py", "--marker", self.marker, *hang_args)}{good}
""")
        t0 = time.monotonic()
        r = self.perfgate("run", suite, timeout=60)
        elapsed = time.monotonic() - t0
        show = self.show_json()
        names = {c["config_id"]: c["workload"] for c in show["configs"]}
        trials = {names[t["config_id"]]: t for t in show["trials"]}
        return r, elapsed, trials

    def test_sleeping_forever_times_out(self):
        r, elapsed, trials = self.run_hang()
        self.assertExit(r, 0, "one workload timed out, the other ran")
        t = trials["hang"]
        self.assertEqual(t["status"], "timed_out")
        self.assertIn("timed out", t["error"])
        self.assertGreaterEqual(t["wall_s"], 0.9)
        self.assertLess(t["wall_s"], 3.0)
        self.assertEqual(trials["after"]["status"], "ok")
        self.assertLess(elapsed, 15)
        self.assertNoMarkedProcesses(grace_s=0.5)

    def test_term_ignoring_main_process_is_killed(self):
        r, elapsed, trials = self.run_hang("--ignore-term")
        self.assertExit(r, 0)
        t = trials["hang"]
        self.assertEqual(t["status"], "timed_out")
        # timeout 1 s + grace 0.5 s, then SIGKILL.
        self.assertLess(t["wall_s"], 3.0)
        self.assertLess(elapsed, 15)
        self.assertNoMarkedProcesses(grace_s=0.5)

    def test_term_ignoring_child_goes_with_the_group(self):
        r, elapsed, trials = self.run_hang("--child")
        self.assertExit(r, 0)
        t = trials["hang"]
        self.assertTrue((Path(t["log_dir"]) / "child-ready").exists(), "the TERM-ignoring child never started")
        self.assertEqual(t["status"], "timed_out")
        self.assertLess(t["wall_s"], 3.5)
        self.assertLess(elapsed, 15)
        self.assertNoMarkedProcesses(grace_s=0.5)

    def test_child_left_behind_by_a_finished_workload_is_killed(self):
        # The workload ends by itself, leaving its child: the timeout is far off, as
        # starting two Pythons took over a second beside eight busy loops.
        r, elapsed, trials = self.run_hang("--child", "--exit-after", "0.2", extra_workload=False, timeout="30s")
        self.assertExit(r, 0)
        t = trials["hang"]
        self.assertTrue((Path(t["log_dir"]) / "child-ready").exists(), "the TERM-ignoring child never started")
        self.assertEqual(t["status"], "ok")
        self.assertIn("outlived", t["notes"])
        self.assertLess(elapsed, 15)
        self.assertNoMarkedProcesses(grace_s=0.5)


class Interrupts(PerfgateTestCase):
    # Asserts durations (a second Ctrl-C ends the trial within seconds).
    measures_time = True
    TRIALS = 4

    def start_slow_run(self):
        # Each trial takes ~1.2 s; 4 trials, one after another.
        suite = self.write_suite(f"""\
suite: slow
defaults:
  repeats: {self.TRIALS}
  timeout: 30s
  kill_grace: 1s
workloads:
  - name: slow
    command: {self.command("steps.py", "--steps", "12", "--sleep", "0.1", "--marker", self.marker)}
""")
        bg = self.start_perfgate("run", suite)
        self.assertTrue(bg.wait_for_line(r"^\[1/4\] .* ok ", 30),
                        f"first trial never finished:\n{bg.stderr()}")
        # The second trial's workload is running now.
        self.assertTrue(wait_until(lambda: marked_pids(self.marker), 10), "second trial never started")
        return bg

    def check_interrupted(self, sig):
        bg = self.start_slow_run()
        sent = time.monotonic()
        bg.proc.send_signal(sig)
        rc = bg.wait(15)
        took = time.monotonic() - sent
        self.assertEqual(rc, EXIT_HARNESS, bg.stderr())
        self.assertLess(took, 5.0, "perfgate took too long to stop")
        self.assertIn("interrupted", bg.stderr())
        self.assertNoMarkedProcesses()

        runs = self.runs_json()
        self.assertEqual(len(runs), 1)
        self.assertEqual(runs[0]["status"], "interrupted")
        self.assertEqual(runs[0]["trials_ok"], 1)
        show = self.show_json()
        statuses = [t["status"] for t in show["trials"]]
        self.assertEqual(statuses, ["ok", "interrupted"], show["trials"])
        first = show["trials"][0]
        self.assertEqual(first["steps"], 12)
        self.assertEqual(show["configs"][0]["metrics"][0]["n"], 1)
        # The store is sound and nothing is left "running".
        con = sqlite3.connect(self.db)
        try:
            self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            self.assertEqual(con.execute("SELECT count(*) FROM trials WHERE status = 'running'").fetchone()[0], 0)
        finally:
            con.close()

    def test_sigint_stops_the_run(self):
        self.check_interrupted(signal.SIGINT)

    def test_sigterm_stops_the_run(self):
        self.check_interrupted(signal.SIGTERM)

    def test_runs_and_show_agree_on_interrupted_trials(self):
        bg = self.start_slow_run()
        bg.proc.send_signal(signal.SIGINT)
        self.assertEqual(bg.wait(15), EXIT_HARNESS, bg.stderr())
        show = self.show_json()
        self.assertEqual((show["trials_ok"], show["trials_failed"], show["trials_interrupted"]), (1, 0, 1))
        # `runs` must not count the trial that was stopped by the user as a failure.
        run = self.runs_json()[0]
        self.assertEqual((run["trials_ok"], run["trials_failed"]), (1, 0), run)
        r = self.perfgate("runs")
        row = [l for l in r.stdout.splitlines() if "interrupted" in l][0].split()
        self.assertEqual(row[row.index("interrupted") + 1:row.index("interrupted") + 3], ["1", "0"], r.stdout)

    def test_second_ctrl_c_does_not_wait_for_the_grace_period(self):
        suite = self.write_suite(f"""\
suite: stubborn
defaults:
  repeats: 1
  timeout: 60s
  kill_grace: 30s
workloads:
  - name: stubborn
    command: {self.command("hang.py", "--ignore-term", "--ready-file", self.tmp / "ready", "--marker", self.marker)}
""")
        bg = self.start_perfgate("run", suite)
        # Once it ignores SIGTERM (a fixed 0.3 s was too short beside eight busy loops).
        self.assertTrue(wait_until(lambda: (self.tmp / "ready").exists(), 30), "workload never started")
        bg.proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        self.assertIsNone(bg.proc.poll(), "perfgate should still be granting the 30 s grace period")
        sent = time.monotonic()
        bg.proc.send_signal(signal.SIGINT)
        rc = bg.wait(20)
        self.assertLess(time.monotonic() - sent, 3.0, "a second Ctrl-C should end the trial at once")
        self.assertEqual(rc, EXIT_HARNESS, bg.stderr())
        self.assertNoMarkedProcesses()
        self.assertEqual(self.runs_json()[0]["status"], "interrupted")

    def test_sigkill_of_perfgate_leaves_a_sound_database(self):
        bg = self.start_slow_run()
        bg.proc.send_signal(signal.SIGKILL)
        self.assertEqual(bg.wait(10), -signal.SIGKILL)
        # The workload of the trial in flight may survive its harness; it is not our subject here.
        kill_marked(self.marker)

        con = sqlite3.connect(self.db)
        try:
            self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            run = con.execute("SELECT id, status FROM runs").fetchall()
            self.assertEqual(run, [(1, "running")])
            trials = con.execute("SELECT seq, status, steps FROM trials WHERE run_id = 1 ORDER BY seq").fetchall()
        finally:
            con.close()
        self.assertEqual(trials[0], (0, "ok", 12), trials)
        self.assertEqual([t[1] for t in trials[1:]], ["running"], trials)

        # The next run on the same database closes the abandoned one.
        quick = self.write_suite(f"""\
suite: quick
defaults: {{repeats: 1}}
workloads:
  - name: quick
    command: {self.command("steps.py", "--steps", "2")}
""", "quick.yaml")
        r = self.perfgate("run", quick)
        self.assertExit(r, 0)
        self.assertIn("abandoned", r.stderr)
        runs = {row["id"]: row for row in self.runs_json()}
        self.assertEqual(runs[1]["status"], "interrupted")
        self.assertEqual(runs[2]["status"], "completed")
        self.assertEqual(runs[1]["trials_ok"], 1)
        old = self.show_json("1")
        self.assertEqual([t["status"] for t in old["trials"]], ["ok", "interrupted"])
        self.assertIsNotNone(old["run"]["ended_at"])


if __name__ == "__main__":
    unittest.main()
