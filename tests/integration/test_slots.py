"""Device slots on one node through the real binary: 8 fake NPUs (the fake
npu-smi on PATH with the captured 8-card table), trials side by side, two
perfgate processes sharing the node, Ctrl-C and SIGKILL with 8 trials in
flight."""

import collections
import json
import os
import signal
import sqlite3
import time
import unittest
from pathlib import Path

from support import EXIT_HARNESS, SOURCE_DIR, PerfgateTestCase, wait_until

FAKES = SOURCE_DIR / "tests" / "integration" / "fakes"


class Slots(PerfgateTestCase):
    # The timings asserted are of sleeping trials with wide margins (8 slots
    # against a ratio of 3, two 3-second trials side by side under 5.5 s):
    # they held 5 runs of 5 with a busy loop per core, so this class runs in
    # parallel with the others.
    timeout_s = 240

    def setUp(self):
        super().setUp()
        self.record = self.tmp / "record.jsonl"

    def env8(self, **extra):
        env = self.env(TMPDIR=str(self.tmp), PERFGATE_FAKE_NPU_SMI_INFO="npu_smi_info_910B3_8card.txt", **extra)
        env["PATH"] = f"{FAKES}:{env['PATH']}"
        return env

    def probe_suite(self, sleeps, repeats, name="suite.yaml", samplers="[npu-smi]", timeout="60s"):
        return self.write_suite(f"""\
suite: slots
defaults: {{repeats: {repeats}, timeout: {timeout}, kill_grace: 2s, samplers: {samplers}, sample_interval: 200ms}}
workloads:
  - name: probe
    command: {self.command("slot_probe.py", "--sleep", "{nap_s}", "--record", str(self.record),
                           "--devices-arg", "{slot.devices}", "--marker", self.marker)}
    matrix: {{nap_s: [{", ".join(str(s) for s in sleeps)}]}}
""", name)

    def events(self):
        if not self.record.exists():
            return []
        return [json.loads(l) for l in self.record.read_text().splitlines() if l.strip()]

    def intervals(self):
        """Per trial directory: (start, end, the start event)."""
        starts, ends = {}, {}
        for e in self.events():
            (starts if e["event"] == "start" else ends)[e["trial_dir"]] = e
        return {d: (s["t"], ends[d]["t"] if d in ends else None, s) for d, s in starts.items()}

    def test_eight_npu_slots_run_side_by_side_on_their_own_cards(self):
        suite = self.probe_suite([1.0, 1.2], repeats=8)
        t0 = time.monotonic()
        r = self.perfgate("run", suite, "--slots", "npu:0-7", env=self.env8(), timeout=120)
        elapsed = time.monotonic() - t0
        self.assertExit(r, 0, "run on 8 slots")
        self.assertRegex(r.stderr, r"\[16/16\] probe nap_s=1\.\d \(repeat \d\) on npu \d  ok")
        show = self.show_json()
        trials = show["trials"]
        self.assertEqual(len(trials), 16)
        self.assertTrue(all(t["status"] == "ok" for t in trials), [t["error"] for t in trials])
        ivs = self.intervals()
        self.assertEqual(len(ivs), 16)
        by_dir = {t["log_dir"]: t for t in trials}
        for d, (_, _, start) in ivs.items():
            t = by_dir[d]
            # The stored slot is the one the process was given, in the environment and the placeholder.
            self.assertEqual(t["device_kind"], "npu")
            self.assertEqual(len(t["devices"]), 1)
            dev = str(t["devices"][0])
            self.assertEqual(start["visible"], dev, t)
            self.assertEqual(start["slot_devices"], dev)
            self.assertEqual(start["devices_arg"], dev)
            self.assertEqual(int(start["slot"]), t["slot"])
            self.assertTrue(t["host"])
        # No two trials on one card at once.
        per_dev = collections.defaultdict(list)
        for d, (s, e, _) in ivs.items():
            per_dev[by_dir[d]["devices"][0]].append((s, e))
        self.assertEqual(len(per_dev), 8, "every card was used")
        for dev, spans in per_dev.items():
            spans.sort()
            for (s1, e1), (s2, _) in zip(spans, spans[1:]):
                self.assertLessEqual(e1, s2 + 0.01, f"npu {dev}: two trials at once {spans}")
        # Side by side: the sum of the trials' times against the run's wall time.
        total = sum(t["wall_s"] for t in trials)
        self.assertGreater(total / elapsed, 3.0, f"{total:.1f} s of trials in {elapsed:.1f} s")
        # Each configuration's repeats landed on several cards.
        cards = collections.defaultdict(set)
        for t in trials:
            cards[t["config_id"]].add(t["devices"][0])
        self.assertTrue(all(len(c) >= 4 for c in cards.values()), cards)
        # The sampler recorded each trial's own card only.
        rows = self.query("SELECT DISTINCT t.log_dir, m.name FROM samples s JOIN metrics m ON m.id = s.metric_id "
                          "JOIN trials t ON t.id = s.trial_id WHERE m.name LIKE 'device.%'")
        self.assertTrue(rows, "npu-smi was sampled")
        for log_dir, name in rows:
            self.assertTrue(name.startswith(f"device.{by_dir[log_dir]['devices'][0]}."), (log_dir, name))
        # The stored slot shows in `show --format json` and survives a reload.
        self.assertEqual(self.query("SELECT count(DISTINCT devices) FROM trials"), [(8,)])

    def test_two_perfgates_on_one_node_wait_for_each_others_cards(self):
        a = self.probe_suite([1.5], repeats=3, name="a.yaml", samplers="[]")
        b = self.probe_suite([1.5], repeats=3, name="b.yaml", samplers="[]")
        first = self.start_perfgate("run", a, "--slots", "npu:0-1", env=self.env8(), db=self.tmp / "a.db")
        self.assertTrue(wait_until(lambda: len(self.events()) >= 2, 20), "the first perfgate never started its trials")
        second = self.start_perfgate("run", b, "--slots", "npu:0-1", env=self.env8(), db=self.tmp / "b.db")
        self.assertEqual(first.wait(60), 0, first.stderr())
        self.assertEqual(second.wait(60), 0, second.stderr())
        self.assertRegex(second.stderr(), r"slot \d: waiting for npu \d, held by another process")
        # Across both perfgates, never two trials on one card at once.
        per_dev = collections.defaultdict(list)
        for s, e, start in self.intervals().values():
            per_dev[start["visible"]].append((s, e))
        self.assertEqual(set(per_dev), {"0", "1"})
        self.assertEqual(sum(len(v) for v in per_dev.values()), 6)
        for dev, spans in per_dev.items():
            spans.sort()
            for (s1, e1), (s2, _) in zip(spans, spans[1:]):
                self.assertLessEqual(e1, s2 + 0.01, f"npu {dev} shared by two trials: {spans}")

    def start_eight_slow(self):
        """Quick and slow trials interleaved; returns once 8 slow ones hold every card (the
        quick ones that ran before have finished) with the number of quick trials done."""
        suite = self.probe_suite([0.2, 120], repeats=8, samplers="[npu-smi]", timeout="10m")
        bg = self.start_perfgate("run", suite, "--slots", "npu:0-7", "--seed", "3", env=self.env8())

        def slow_running():
            return sum(1 for s, e, st in self.intervals().values() if e is None and st["sleep"] > 100) >= 8
        self.assertTrue(wait_until(slow_running, 60), f"8 trials never ran at once:\n{bg.stderr()}")
        quick = [st for s, e, st in self.intervals().values() if st["sleep"] < 1]
        self.assertTrue(quick, "no quick trial ran first")
        self.assertTrue(wait_until(lambda: bg.stderr().count(" ok ") >= len(quick), 20), bg.stderr())
        return bg, len(quick)

    def test_ctrl_c_with_eight_trials_in_flight(self):
        bg, quick = self.start_eight_slow()
        sent = time.monotonic()
        bg.proc.send_signal(signal.SIGINT)
        rc = bg.wait(30)
        took = time.monotonic() - sent
        self.assertEqual(rc, EXIT_HARNESS, bg.stderr())
        self.assertLess(took, 10.0, "perfgate took too long to stop 8 trials")
        self.assertNoMarkedProcesses(grace_s=2.0)
        show = self.show_json()
        by_status = collections.Counter(t["status"] for t in show["trials"])
        # The finished trials are kept, the 8 in flight are interrupted, the rest never started.
        self.assertEqual(by_status, {"ok": quick, "interrupted": 8}, show["trials"])
        self.assertEqual(self.runs_json()[0]["status"], "interrupted")
        con = sqlite3.connect(self.db)
        try:
            self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
            self.assertEqual(con.execute("SELECT count(*) FROM trials WHERE status = 'running'").fetchone()[0], 0)
        finally:
            con.close()

    def test_sigkill_with_eight_in_flight_frees_the_cards(self):
        bg, quick = self.start_eight_slow()
        bg.proc.send_signal(signal.SIGKILL)
        self.assertEqual(bg.wait(10), -signal.SIGKILL)
        # The workloads go with their harness (parent-death signal from each slot's thread).
        self.assertNoMarkedProcesses(grace_s=5.0)
        self.assertEqual(self.query("SELECT count(*) FROM trials WHERE status = 'ok'"), [(quick,)])
        self.assertEqual(self.query("SELECT count(*) FROM trials WHERE status = 'running'"), [(8,)])
        # The cards are free at once for the next perfgate, which closes the abandoned run.
        quick = self.probe_suite([0.1], repeats=8, name="quick.yaml", samplers="[]")
        r = self.perfgate("run", quick, "--slots", "npu:0-7", env=self.env8())
        self.assertExit(r, 0)
        self.assertNotIn("waiting for", r.stderr)
        self.assertIn("marked 1 abandoned run(s)", r.stderr)
        runs = {run["id"]: run["status"] for run in self.runs_json()}
        self.assertEqual(runs, {1: "interrupted", 2: "completed"})

    def test_one_eight_card_trial_and_cpu_slots(self):
        suite = self.probe_suite([0.1], repeats=2, samplers="[]")
        r = self.perfgate("run", suite, "--slots", "npu:0-7/8", env=self.env8())
        self.assertExit(r, 0)
        visible = {e["visible"] for e in self.events()}
        self.assertEqual(visible, {"0,1,2,3,4,5,6,7"})
        self.record.unlink()
        cpus = sorted(os.sched_getaffinity(0))
        r = self.perfgate("run", suite, "--slots", f"cpu:{cpus[0]}-{cpus[-1]}/1" if len(cpus) > 1 else f"cpu:{cpus[0]}",
                          env=self.env8())
        self.assertExit(r, 0)
        for e in self.events():
            self.assertEqual(len(e["cpus"]), 1, e)
            self.assertEqual(e["slot_devices"], str(e["cpus"][0]))
            self.assertIsNone(e["visible"])

    def test_faults_with_eight_in_flight(self):
        # A hang, a crash, a signal, a flood and ordinary trials side by side: each ends as
        # in the serial executor and nothing of the others is lost.
        suite = self.write_suite(f"""\
suite: faults
defaults: {{repeats: 2, timeout: 3s, kill_grace: 1s, log_limit: 1MB}}
workloads:
  - name: hang
    command: {self.command("hang.py", "--child", "--marker", self.marker)}
  - name: crash
    command: {self.command("fail.py", "exit", "3", "crash")}
  - name: killed
    command: {self.command("fail.py", "signal", "9", "killed")}
  - name: flood
    command: {self.command("flood.py", "20000000")}
  - name: fine
    command: {self.command("steps.py", "--steps", "10", "--sleep", "0.05", "--marker", self.marker)}
""")
        t0 = time.monotonic()
        r = self.perfgate("run", suite, "--slots", "npu:0-7", env=self.env8(), timeout=120)
        elapsed = time.monotonic() - t0
        self.assertExit(r, 0, "some trials are fine")
        show = self.show_json()
        workload_of = {c["config_id"]: c["workload"] for c in show["configs"]}
        status = collections.defaultdict(list)
        for t in show["trials"]:
            status[workload_of[t["config_id"]]].append(t)
        self.assertEqual([t["status"] for t in status["hang"]], ["timed_out"] * 2)
        self.assertTrue(all(t["wall_s"] < 5.5 for t in status["hang"]), status["hang"])
        self.assertEqual([t["status"] for t in status["crash"]], ["failed"] * 2)
        self.assertTrue(all("exited with code 3" in t["error"] and "FATAL crash" in t["error"] for t in status["crash"]))
        self.assertEqual([t["signal"] for t in status["killed"]], [9, 9])
        self.assertTrue(all(t["status"] == "ok" and "was cut to" in t["notes"] for t in status["flood"]), status["flood"])
        self.assertTrue(all(t["status"] == "ok" and t["steps"] == 10 for t in status["fine"]), status["fine"])
        # The two hangs time out side by side, not one after another.
        self.assertLess(elapsed, 3 * 2 + 5)
        self.assertNoMarkedProcesses(grace_s=2.0)
        # Each trial had its own card; the crash's stderr is its own.
        self.assertEqual(len({tuple(t["devices"]) for t in show["trials"]}), 8)
        for t in status["crash"]:
            self.assertNotIn("killed", (Path(t["log_dir"]) / "stderr.log").read_text())

    def test_a_soak_runs_its_workloads_side_by_side(self):
        suite = self.write_suite(f"""\
suite: soak-slots
defaults: {{repeats: 1, warmup: none}}
workloads:
  - name: a
    command: {self.command("deadline.py")}
  - name: b
    command: {self.command("deadline.py")}
""")
        r = self.perfgate("soak", suite, "--duration", "3s", "--window", "1s", "--slots", "npu:0-1", env=self.env8(),
                          timeout=60)
        self.assertExit(r, 0, "soak")
        # Side by side: each trial started before the other ended (read from
        # the trials' own start times and lengths, not from perfgate's wall
        # time, which a loaded or instrumented machine stretches).
        spans = self.query("select started_at, started_at + wall_s from trials order by started_at")
        self.assertEqual(len(spans), 2, spans)
        (start_a, end_a), (start_b, _) = spans
        self.assertGreater(end_a - start_a, 2.5, spans)  # a soak of 3 s
        self.assertLess(start_b, end_a - 1.5, f"the second trial began after the first had (nearly) ended: {spans}")
        self.assertIn("soak ETA", r.stderr)
        show = self.show_json()
        self.assertEqual(sorted(t["devices"][0] for t in show["trials"]), [0, 1])
        self.assertTrue(all(t["status"] == "ok" for t in show["trials"]), show["trials"])

    def test_a_slow_card_is_a_finding(self):
        suite = self.write_suite(f"""\
suite: cards
defaults: {{repeats: 8, timeout: 60s, metrics: {{primary: slept_s}}}}
workloads:
  - name: probe
    command: {self.command("slot_probe.py", "--sleep", "{nap_s}", "--record", str(self.record),
                           "--slow-device", "2", "--marker", self.marker)}
    matrix: {{nap_s: [0.2, 0.3]}}
""")
        r = self.perfgate("run", suite, "--slots", "npu:0-3", env=self.env8(), timeout=120)
        self.assertExit(r, 0)
        show = self.show_json()
        self.assertEqual(len(show["slow_devices"]), 1, show["slow_devices"])
        slow = show["slow_devices"][0]
        self.assertEqual((slow["device_kind"], slow["devices"]), ("npu", "2"))
        self.assertAlmostEqual(slow["median_worse"], 0.5, delta=0.1)
        text = self.perfgate("show", "latest")
        self.assertRegex(text.stdout, r"npu 2 on \S+: its \d+ trials were all slower than the same configurations")

    def test_bad_slots_are_input_errors(self):
        suite = self.probe_suite([0.1], repeats=1, samplers="[]")
        for bad, words in (("npu:0-6/2", "left over"), ("npu", "KIND:DEVICES"), ("mlu:0-1", "env:")):
            r = self.perfgate("run", suite, "--slots", bad, env=self.env8())
            self.assertExit(r, 2, bad)
            self.assertIn(words, r.stderr)
        self.assertFalse(self.db.exists() and self.query("SELECT * FROM runs"), "nothing ran")


if __name__ == "__main__":
    unittest.main()
