"""perfgate soak, soak-report and checklist through the real binary.

perfgate-sim's fault knobs prove the analysis: a flat run has no finding, a
leak is measured at its injected rate, a staircase slowdown is found where
and as large as it was injected, stalls are counted, a hang is a failed
trial with its process group killed. Durations are seconds, not hours: the
same code paths, shorter windows.
"""

import json
import os
import signal
import sqlite3
import subprocess
import time
import xml.etree.ElementTree as ET
from pathlib import Path

from support import PERFGATE_BIN, SOURCE_DIR, PerfgateTestCase, flow_list, marked_pids

SIM = str(Path(PERFGATE_BIN).resolve().parent / "perfgate-sim")


class SoakTestCase(PerfgateTestCase):
    def sim(self):
        """perfgate-sim under a name carrying the test's marker, so leftovers can be found."""
        link = self.tmp / "bin" / f"sim-{self.marker}"
        if not link.exists():
            os.symlink(SIM, link)
        return str(link)

    def soak_suite(self, args, samplers="[proc]"):
        """A soak suite of perfgate-sim with these arguments, sampled every 250 ms."""
        argv = [self.sim(), "--graph-mode", "graph", "--fusion", "on", "--ranks", "1", "--steps", "0",
                "--seconds", "{duration_s}", *args]
        return self.write_suite(f"""\
suite: soak-it
defaults: {{repeats: 1, warmup: {{steps: 5}}, samplers: {samplers}, sample_interval: 250ms}}
workloads:
  - name: sim
    command: {flow_list(argv)}
""", name=f"soak-{len(list(self.tmp.glob('soak-*.yaml')))}.yaml")

    def soak(self, args, duration, window="1s", extra=(), tag="soak", samplers="[proc]"):
        return self.perfgate("soak", self.soak_suite(args, samplers), "--duration", duration, "--window", window,
                             "--tag", tag, *extra, timeout=300)

    def report(self, run="latest", window="1s"):
        r = self.perfgate("soak-report", run, "--format", "json", "--window", window)
        self.assertExit(r, 0, "soak-report")
        return json.loads(r.stdout)

    @staticmethod
    def metric(trial, name):
        for m in trial["metrics"]:
            if m["metric"] == name:
                return m
        raise AssertionError(f"no {name} in {[m['metric'] for m in trial['metrics']]}")

    @staticmethod
    def findings(trial, kind=None):
        return [f for f in trial["findings"] if kind is None or f["kind"] == kind]


class SoakFindings(SoakTestCase):
    """What the analysis finds in a soak's measured step times and memory."""
    measures_time = True
    alone = True
    timeout_s = 300

    def test_flat_run_has_no_finding(self):
        # A flat workload: steps mostly storage latency (in-line loading, 32 reads of
        # 500 us, as in the staircase test below), which the host's speed does not
        # change. A memory-bound step (96 MB of activations) measured this VM's
        # neighbours instead: once, alone on a quiet machine (other processes 2-5 %
        # of a core, the probe steady), its last four seconds were 10 % slower, a
        # real level shift the analysis rightly reported. The step, 32 reads of
        # 1.5 ms (~58 ms), keeps a scheduler hiccup of a loaded 2-core machine (one
        # scheduling period, ~24 ms with three busy threads per two cores) and
        # this VM's own (CI once saw two steps of a 500 us read 62-68 ms late,
        # 3.5-3.8x, with perfgate's wake-up canary on time: one virtual CPU held
        # up, which the guest cannot see; /proc/stat's steal stays 0 here) below
        # the 3x that makes a stall.
        r = self.soak(["--num-workers", "0", "--read-us", "1500", "--decode-work", "0"], "12s")
        self.assertExit(r, 0, "soak")
        rep = self.report()
        (trial,) = rep["trials"]
        # Each failure message carries the whole trial: one failed once, alone, and
        # passed 9 reruns, quiet and beside two fuzzers.
        shown = json.dumps(trial, indent=1)
        self.assertEqual(trial["status"], "ok", "a soak trial still running at its deadline is ok\n" + shown)
        self.assertGreaterEqual(trial["wall_s"], 11.5, shown)
        self.assertLess(trial["wall_s"], 20, shown)
        self.assertEqual(trial["findings"], [], shown)
        step = self.metric(trial, "step_time_ms")
        self.assertGreaterEqual(step["windows"], 10, shown)
        self.assertIn("no findings", r.stdout, "the soak prints its analysis at the end\n" + r.stdout + r.stderr)

    def test_a_paused_machine_is_a_host_event_a_paused_workload_a_stall(self):
        # The flat soak above, paused for 400 ms four seconds in: once the whole
        # machine (perfgate and the workload stopped together, as when the
        # hypervisor deschedules a VM), once the workload alone (a checkpoint, a
        # GC pause). Both make one step ~15x its neighbours. The host sampler's
        # wake-up canary, inside perfgate, is as late as the machine's pause and
        # not at all for the workload's own.
        def soak_paused(whole_machine, name):
            suite = self.soak_suite(["--num-workers", "0", "--read-us", "500", "--decode-work", "0"])
            bg = self.start_perfgate("soak", suite, "--duration", "9s", "--window", "1s", "--tag", name)
            self.assertTrue(bg.wait_for_line(r"\[soak\] sim 0:00:0[4-7]", timeout_s=60), bg.stderr())
            (sim,) = [p for p in marked_pids(self.marker) if p != bg.proc.pid]
            stopped = [sim, bg.proc.pid] if whole_machine else [sim]
            paused_at = time.time()
            for pid in stopped:
                os.kill(pid, signal.SIGSTOP)
            time.sleep(0.4)
            for pid in reversed(stopped):
                os.kill(pid, signal.SIGCONT)
            self.assertEqual(bg.wait(120), 0, bg.stderr())
            (trial,) = self.report(f"latest:{name}")["trials"]
            # For a failure's message: when the pause fell in the trial, and the
            # longest steps and latest wake-ups recorded (seconds since its start).
            ((trial_id, started_at),) = self.query("SELECT id, started_at FROM trials ORDER BY id DESC LIMIT 1")
            top = "SELECT s.t_s, s.value FROM samples s JOIN metrics m ON m.id = s.metric_id " \
                  "WHERE s.trial_id = ? AND m.name = ? ORDER BY s.value DESC LIMIT 3"
            # The steps recorded around the pause, with their numbers: a gap
            # tells a lost line from a pause that fell between two steps
            # (once, the step spanning the pause was not among those stored).
            at_s = paused_at - started_at
            around = "SELECT s.step, s.t_s, s.value FROM samples s JOIN metrics m ON m.id = s.metric_id " \
                     "WHERE s.trial_id = ? AND m.name = 'step_time_ms' AND s.t_s BETWEEN ? AND ? ORDER BY s.step"
            trial["_pause"] = {"at_s": round(at_s, 3),
                               "longest_steps": self.query(top, (trial_id, "step_time_ms")),
                               "latest_wakeups": self.query(top, (trial_id, "host.wakeup_late_ms")),
                               "steps_around": self.query(around, (trial_id, at_s - 0.2, at_s + 0.8))}
            return trial

        machine = soak_paused(True, "machine")
        workload = soak_paused(False, "workload")
        dump = json.dumps({"machine": machine, "workload": workload}, indent=1)
        # The machine's pause: one stall, the host's, listed apart and not counted.
        self.assertEqual(self.findings(machine, "stalls"), [], dump)
        host = [e for e in machine["host_events"] if e["kind"] == "stalls"]
        self.assertEqual(len(host), 1, dump)
        self.assertIn("the machine paused", host[0]["summary"])
        self.assertTrue([e for e in host[0]["evidence"] if e["value"] >= 400], dump)
        self.assertEqual(self.metric(machine, "step_time_ms")["stalls"], 0, dump)
        late = self.metric(machine, "host.wakeup_late_ms")
        self.assertGreaterEqual(late["samples"], 20)
        # The workload's pause: a stall finding with the stretched step as evidence.
        (stall,) = self.findings(workload, "stalls")
        self.assertTrue([e for e in stall["evidence"] if e["value"] >= 400], dump)
        self.assertEqual([e for e in workload["host_events"] if e["kind"] == "stalls"], [], dump)

    def test_a_host_that_gets_busy_is_a_host_event_not_a_finding(self):
        # The flat soak of the test above, and a busy loop per core started a third
        # of the way in: the step slows because the machine did. The host sampler
        # names the demand (other processes' CPU, or on a full machine CPU pressure
        # and the trial's wait for a core) and the host probe (on by default in
        # soaks) slows with it, so whatever the step series shows is a host event,
        # never a workload finding, even when the steps answer seconds late.
        bg = self.start_perfgate("soak", self.soak_suite(["--layers", "16", "--act-mb", "96"]), "--duration", "18s",
                                 "--window", "1s", "--tag", "soak")
        self.assertTrue(bg.wait_for_line(r"\[soak\] sim 0:00:0[5-9]", timeout_s=60), bg.stderr())
        hogs = [subprocess.Popen(["/bin/sh", "-c", "while :; do :; done", self.marker]) for _ in range(2)]
        self.addCleanup(lambda: [h.kill() for h in hogs])
        self.assertEqual(bg.wait(120), 0, bg.stderr())
        for h in hogs:
            h.kill()
        (trial,) = self.report()["trials"]
        host = {m["metric"]: m for m in trial["metrics"] if m["metric"].startswith("host.")}
        self.assertEqual(trial["findings"], [], json.dumps({"findings": trial["findings"], "host": host}, indent=1))
        self.assertGreaterEqual(host["host.probe_ms"]["windows"], 10)
        # The host sampler saw the busy loops: other processes took more CPU, or (on a
        # machine already saturated) the trial's own threads waited longer for a core and
        # the kernel's CPU pressure rose (with two busy loops already running when the test
        # began: wait +19.8, other CPU +15, pressure 53 -> 100 %; with three: wait +18.4,
        # other CPU +14, pressure 87 -> 101 %).
        # Each can only rise as far as it has room: the trial's wait and the pressure
        # stop at 100 %, other processes' CPU at 100 % a core. On a machine saturated
        # before the loops began (eight busy loops and three other tests beside this
        # one: the trial already waited for a core 86 % of the time, and rose to 97 %),
        # 12 points are not there to be had; half the room left is.
        ceiling = {"host.other_cpu_pct": 100 * (os.cpu_count() or 1), "host.trial_cpu_wait_pct": 100,
                   "host.cpu_pressure_pct": 100}
        seen = {m: (host[m]["last_window"] - host[m]["first_window"],
                    max(2.0, min(12.0, 0.5 * (ceiling[m] - host[m]["first_window"]))))
                for m in ceiling if m in host}
        self.assertTrue(any(rise > needed for rise, needed in seen.values()), {"rise, needed": seen, "host": host})
        for event in trial["host_events"]:
            self.assertIn("host event", event["summary"])

    def test_staircase_is_found_where_and_as_large_as_injected(self):
        # The case: 1.2x from T on. The step is mostly storage latency
        # (in-line loading, 4 reads of 4 ms: waits the host's speed does not
        # change, few enough that wake-up delays stay small) with 0.6 ms of
        # compute, and the slowdown stretches the whole step. A step with more
        # compute measured this VM's neighbours instead: with 32 reads of 500 us
        # and 9 ms of compute, run alone in CI, a level shift moved the found step
        # to 19 s (+12 %); with 32 reads and 1.7 ms of compute, wake-up delays
        # shifted levels by 7-11 % in two runs of two.
        # 30 windows of ~55 steps give the change-point test its power (a 20 %
        # step against 6-7 % of window noise, 15 windows a side).
        r = self.soak(["--slowdown-at-s", "15", "--slowdown-factor", "1.2", "--num-workers", "0", "--batch", "4",
                       "--read-us", "4000", "--act-mb", "1", "--decode-work", "0"], "30s", window="1s")
        self.assertExit(r, 0, "soak")
        (trial,) = self.report(window="1s")["trials"]
        self.assertTrue([f for f in self.findings(trial, "staircase") if f["metric"] == "step_time_ms"],
                        json.dumps(trial, indent=1))
        # Within one window of where it was put (the sim's clock starts with its
        # first step, shortly after the process), and about its size.
        steps = self.metric(trial, "step_time_ms")["staircase"]
        near = [s for s in steps if abs(s["t_s"] - 15) <= 1.5]
        self.assertEqual(len(near), 1, steps)
        # 1.2x of the step up to the fault knobs is about +20 % of the whole step
        # (measured +20.1, +21.2, +23.3 % on a quiet machine, +26.4 % beside a busy
        # loop, +39.5 and +40.0 % beside two: the slowdown is a spin, and on a
        # full machine the spin's end waits for a core too).
        self.assertGreater(near[0]["change_pct"], 10, near)
        self.assertLess(near[0]["change_pct"], 50, near)

    def test_stalls_are_counted(self):
        # The flat soak's step (32 reads of 1.5 ms, ~58 ms) and a 300 ms stall every
        # 10 steps (~6x). A 7 ms compute step with 150 ms stalls every 40 counted
        # 19-46 stalls where 13 were injected, alone on this VM: bursts of 17-24 ms
        # steps (3x a 7 ms median) that neither the trial's wait for a core nor the
        # wake-up canary saw, as the flat test above describes.
        r = self.soak(["--num-workers", "0", "--read-us", "1500", "--decode-work", "0", "--stall-every", "10",
                       "--stall-ms", "300"], "12s")
        self.assertExit(r, 0, "soak")
        (trial,) = self.report()["trials"]
        stalls = self.findings(trial, "stalls")
        self.assertEqual(len(stalls), 1, json.dumps(trial, indent=1))
        expected = trial["steps"] // 10
        counted = self.metric(trial, "step_time_ms")["stalls"]
        self.assertGreaterEqual(counted, expected * 0.7, f"{counted} stalls counted, about {expected} injected")
        self.assertLessEqual(counted, expected * 1.3 + 1, json.dumps(trial, indent=1))
        self.assertTrue(stalls[0]["evidence"], "each stall comes with its time and value")
        # A busy machine adds stalls of its own; the injected ones are among the evidence.
        self.assertGreaterEqual(max(e["value"] for e in stalls[0]["evidence"]), 300)


class SoakMemory(SoakTestCase):
    """Memory growth against the rate injected per step: the rate is measured
    against the trial's own steps per second, so a busy machine moves both
    alike and the class runs beside other tests."""
    timeout_s = 120

    def test_leak_is_memory_growth_at_the_injected_rate(self):
        kb_per_step = 100
        r = self.soak(["--leak-kb-per-step", str(kb_per_step)], "10s")
        self.assertExit(r, 0, "soak")
        (trial,) = self.report()["trials"]
        # Steps per second while stepping, from the first step's record to the
        # last: the trial's wall time also holds the start and the end (2.5 %
        # of it on the plain build, quiet). Under ASan beside other tests the
        # leak once looked 1.24 times the rate so injected; with this one
        # it passed there.
        ((n, first_s, last_s),) = self.query(
            "SELECT COUNT(*), MIN(s.t_s), MAX(s.t_s) FROM samples s JOIN metrics m ON m.id = s.metric_id "
            "WHERE m.name = 'step_time_ms'")
        self.assertGreater(n, 20)
        steps_per_s = (n - 1) / (last_s - first_s)
        injected_mb_per_h = kb_per_step / 1024 * steps_per_s * 3600
        growth = self.findings(trial, "memory_growth")
        self.assertTrue(growth, json.dumps(trial, indent=1))
        # The workload's own RSS series and the proc sampler's both show it.
        by_metric = {f["metric"]: f["value"] for f in growth}
        self.assertIn("host.rss_mb", by_metric)
        for name, rate in by_metric.items():
            self.assertAlmostEqual(rate / injected_mb_per_h, 1.0, delta=0.2,
                                   msg=f"{name}: {rate:.0f} MB/h measured, {injected_mb_per_h:.0f} MB/h injected")


class SoakLifecycle(SoakTestCase):
    """How a soak starts, ends, hangs and is killed."""
    timeout_s = 240

    def test_hang_is_a_failed_trial_and_its_group_is_killed(self):
        started = time.monotonic()
        r = self.soak(["--hang-at-step", "30"], "60s", extra=("--hang-after", "3s"))
        took = time.monotonic() - started
        self.assertExit(r, 3, "the only trial failed")
        self.assertLess(took, 30, "the hang was ended long before the duration")
        (trial,) = self.report()["trials"]
        self.assertEqual(trial["status"], "failed")
        self.assertIn("hang: no step record for 3 s", trial["error"])
        hangs = self.findings(trial, "hang")
        self.assertEqual(len(hangs), 1)
        self.assertGreater(hangs[0]["value"], 0, "the time of the last step is the evidence")
        self.assertNoMarkedProcesses(grace_s=3)

    def test_deadline_reaches_the_workload_and_it_is_stopped_at_the_end(self):
        suite = self.write_suite(f"""\
suite: deadline
defaults: {{repeats: 1}}
workloads:
  - name: w
    command: {self.command("deadline.py", "--deadline-arg", "{deadline}", "--duration-arg", "{duration_s}")}
""")
        r = self.perfgate("soak", suite, "--duration", "3s", "-q", timeout=60)
        self.assertExit(r, 0, "soak")
        rows = self.query("SELECT started_at, wall_s, status, log_dir FROM trials")
        (started, wall, status, log_dir), = rows
        self.assertEqual(status, "ok")
        self.assertGreaterEqual(wall, 2.9)
        self.assertLess(wall, 10)
        seen = json.loads((Path(log_dir) / "stdout.log").read_text().splitlines()[0])
        self.assertAlmostEqual(float(seen["deadline_env"]), started + 3, delta=1.0)
        self.assertAlmostEqual(float(seen["deadline_arg"]), started + 3, delta=1.0)
        self.assertEqual(seen["duration_arg"], "3")

    def test_a_soak_that_never_stepped_is_a_finding_and_fails_a_hangs_check(self):
        # Shorter than --hang-after, so the trial is not stopped as a hang and ends "ok".
        suite = self.write_suite("""\
suite: silent
defaults: {repeats: 1}
workloads:
  - name: quiet
    command: [sleep, "{duration_s}"]
""")
        self.assertExit(self.perfgate("soak", suite, "--duration", "2s", "--hang-after", "1h", "-q", timeout=60), 0)
        (trial,) = self.report()["trials"]
        self.assertEqual((trial["status"], trial["steps"]), ("ok", 0))
        (f,) = self.findings(trial, "no_steps")
        self.assertIn("no step record in the whole", f["summary"])
        self.assertIn("reported no metrics", f["summary"], "the trial's note says why")
        checklist = self.write_suite("items:\n  - name: no hangs\n    check: hangs\n", name="silent-check.yaml")
        r = self.perfgate("checklist", checklist, "--run", "latest", "--format", "json")
        self.assertExit(r, 1, "a soak that measured nothing does not pass a hangs check")
        (item,) = json.loads(r.stdout)["items"]
        self.assertEqual((item["status"], item["measured"]), ("fail", 1), item)

    def wait_for_committed_steps(self, min_span_s, timeout_s, warmup_steps=5):
        """Steps after the warm-up committed to the database, once they span min_span_s."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                ((n, first, last),) = self.query(
                    "SELECT COUNT(*), MIN(s.t_s), MAX(s.t_s) FROM samples s JOIN metrics m ON m.id = s.metric_id "
                    "WHERE m.name = 'step_time_ms' AND s.step >= ?", (warmup_steps,))
            except sqlite3.OperationalError:  # the database or its tables are not there yet
                n = 0
            if n and last - first > min_span_s:
                return n
            time.sleep(0.2)
        self.fail(f"no committed steps spanning {min_span_s} s within {timeout_s} s")

    def test_a_killed_soak_keeps_what_was_committed(self):
        argv = [self.sim(), "--graph-mode", "graph", "--ranks", "1", "--steps", "0", "--seconds", "{duration_s}"]
        suite = self.write_suite(f"""\
suite: soak-kill
defaults: {{repeats: 1, warmup: {{steps: 5}}}}
workloads:
  - name: sim
    command: {flow_list(argv)}
""")
        bg = self.start_perfgate("soak", suite, "--duration", "60s", "--window", "1s")
        # Killed once the database holds steps after the warm-up more than 2.5 s
        # apart (so in at least two 1 s windows), however slowly a loaded
        # machine steps: wall time alone once left 9 steps in one window.
        committed = self.wait_for_committed_steps(min_span_s=2.5, timeout_s=90)
        os.kill(bg.proc.pid, 9)
        bg.wait(10)
        self.assertNoMarkedProcesses(grace_s=5)  # the workload died with perfgate (parent-death signal)
        rep = self.report()
        (trial,) = rep["trials"]
        step = self.metric(trial, "step_time_ms")
        # What was committed before the kill is all there.
        self.assertGreaterEqual(step["samples"], committed, json.dumps(trial, indent=1))
        self.assertGreaterEqual(step["windows"], 2, json.dumps(trial, indent=1))
        # The next perfgate on this host marks the abandoned run interrupted.
        again = self.write_suite("suite: other\nworkloads:\n  - name: w\n    command: [true]\n    repeats: 1\n", name="o.yaml")
        self.assertExit(self.perfgate("run", again, "-q"), 0)
        ((status,),) = self.query("SELECT status FROM runs WHERE suite = 'soak-kill'")
        self.assertEqual(status, "interrupted")
        self.assertEqual(len(self.report("1")["trials"]), 1, "the report still works on what was kept")

    def test_the_shipped_soak_suite_runs(self):
        # suites/soak.yaml: perfgate-sim and real PyTorch DDP training, each for the duration,
        # side by side on two (fake) NPU slots: the soak takes its duration once, not per workload.
        r = self.perfgate("soak", SOURCE_DIR / "suites/soak.yaml", "--duration", "12s", "--window", "2s",
                          "--tag", "soak", "--slots", "npu:0-1", timeout=300)
        self.assertExit(r, 0, "soak of suites/soak.yaml")
        rep = self.report(window="2s")
        by = {t["workload"]: t for t in rep["trials"]}
        self.assertEqual(set(by), {"sim", "torch-train"})
        self.assertGreater(by["sim"]["steps"], 10)
        # torch-train's steps depend on the machine's load: quiet, 20 in 12 s (10 of them
        # warm-up); beside three busy loops on 2 cores it got 37 % of a core and made
        # none, and during the whole test suite it printed nothing in 12 s (importing
        # torch). Its training is tested in test_torch_workloads; here, that the soak
        # ran it for the duration and stopped it as a success.
        for name, t in by.items():
            self.assertEqual(t["status"], "ok", t)
            self.assertGreaterEqual(t["wall_s"], 11, name)
            self.assertTrue(any(m["metric"] == "host.rss_mb" for m in t["metrics"]), "the suite samples the process tree")
        # Side by side, each for the duration: each trial started before the other ended
        # (from the store's clock, so a loaded machine cannot make it fail).
        spans = {name: (start, start + wall) for name, start, wall in
                 self.query("SELECT c.workload, t.started_at, t.wall_s FROM trials t JOIN configs c ON c.id = t.config_id")}
        self.assertLess(spans["sim"][0], spans["torch-train"][1], spans)
        self.assertLess(spans["torch-train"][0], spans["sim"][1], spans)
        r = self.perfgate("checklist", SOURCE_DIR / "configs/release-checklist.yaml", "--run", "latest:soak",
                          "--window", "2s", "--format", "json")
        self.assertIn(r.returncode, (0, 1), r.stderr)
        items = {i["name"]: i for i in json.loads(r.stdout)["items"]}
        hangs = items["no hangs in the soak"]
        if by["torch-train"]["steps"] > 0:
            self.assertEqual(hangs["status"], "pass", hangs)
        else:  # still importing torch at the end (see above): it measured nothing, which does not pass
            self.assertEqual((hangs["status"], hangs["measured"]), ("fail", 1), hangs)
            self.assertIn("torch-train", hangs["evidence"])
            self.assertIn("no step record in the whole", hangs["evidence"])
        self.assertEqual(items["no NaN loss in the soak"]["status"], "pass")
        self.assertNotEqual(items["step time flat over the soak"]["status"], "not-evaluable")

    def test_bad_soak_options(self):
        suite = self.write_suite("suite: s\nworkloads:\n  - name: w\n    command: [true]\n")
        r = self.perfgate("soak", suite, "--duration", "soon")
        self.assertExit(r, 2)
        self.assertIn("--duration", r.stderr)
        r = self.perfgate("soak-report", "99")
        self.assertExit(r, 2)


class Checklists(SoakTestCase):
    CHECKLIST = """\
checklist: it
items:
  - name: graph beats eager
    check: ratio
    metric: throughput
    numerator: {{graph_mode: graph}}
    denominator: {{graph_mode: eager}}
    at_least: {ratio}
  - name: data keeps up
    check: data_share
    at_most: 0.5
  - name: compile bounded
    check: first_step
    at_most: 60s
  - name: all ok
    check: all_trials_ok
  - name: memory flat in the soak
    check: memory_growth
    run: latest:soak
    at_most: 50
  - name: no hangs in the soak
    check: hangs
    run: latest:soak
  - name: scaling
    check: scaling
    at_least: 0.1
    optional: true
"""

    def perf_run(self):
        argv = [self.sim(), "--graph-mode", "{graph_mode}", "--ranks", "1", "--steps", "15"]
        suite = self.write_suite(f"""\
suite: perf
defaults: {{repeats: 2, warmup: {{steps: 3}}}}
workloads:
  - name: sim
    command: {flow_list(argv)}
    matrix: {{graph_mode: [eager, graph]}}
""", name="perf.yaml")
        self.assertExit(self.perfgate("run", suite, "--tag", "perf", "-q", timeout=300), 0, "run")

    def checklist(self, ratio=1.05):
        return self.write_suite(self.CHECKLIST.format(ratio=ratio), name="checklist.yaml")

    def test_pass_fail_and_not_evaluable(self):
        self.perf_run()
        self.assertExit(self.soak(["--leak-kb-per-step", "200"], "6s"), 0, "soak")
        md, junit = self.tmp / "c.md", self.tmp / "c.xml"
        r = self.perfgate("checklist", self.checklist(), "--run", "latest:perf", "--format", "json", "--window", "1s",
                          "--markdown", md, "--junit", junit)
        self.assertExit(r, 1, "the leak fails the memory item")
        res = json.loads(r.stdout)
        status = {i["name"]: i for i in res["items"]}
        self.assertEqual(status["graph beats eager"]["status"], "pass", status["graph beats eager"])
        self.assertGreater(status["graph beats eager"]["measured"], 1.05)
        self.assertEqual(status["data keeps up"]["status"], "pass")
        self.assertEqual(status["compile bounded"]["status"], "pass")
        self.assertLess(status["compile bounded"]["measured"], 60000)
        self.assertEqual(status["all ok"]["status"], "pass")
        self.assertEqual(status["memory flat in the soak"]["status"], "fail")
        self.assertGreater(status["memory flat in the soak"]["measured"], 50)
        self.assertIn("host.rss_mb", status["memory flat in the soak"]["evidence"])
        self.assertEqual(status["no hangs in the soak"]["status"], "pass")
        self.assertEqual(status["scaling"]["status"], "not-evaluable")
        self.assertIn("ranks", status["scaling"]["evidence"])
        self.assertEqual((res["passed"], res["failed"], res["not_evaluable"]), (5, 1, 1))
        self.assertTrue(md.read_text().startswith("❌ **perfgate checklist** — FAIL"))
        suite = ET.parse(junit).getroot().find("testsuite")
        self.assertEqual(suite.get("failures"), "1")
        self.assertEqual(suite.get("skipped"), "1")

    def test_pass_only_when_every_required_item_was_evaluated(self):
        self.perf_run()
        # No soak run exists: the soak items are not evaluable, say why, and fail the checklist.
        r = self.perfgate("checklist", self.checklist(), "--run", "latest", "--format", "json")
        self.assertExit(r, 1, "a required item that cannot be evaluated fails the checklist")
        res = json.loads(r.stdout)
        soak_items = [i for i in res["items"] if "soak" in i["name"]]
        self.assertTrue(all(i["status"] == "not-evaluable" for i in soak_items))
        self.assertIn("no run tagged 'soak'", soak_items[0]["evidence"])
        self.assertEqual(res["outcome"], "fail")
        self.assertEqual(res["required_not_evaluable"], 2)
        self.assertIn("every item not marked optional must be evaluated", res["headline"])
        # Marked optional, they may stay unevaluated; --strict wants them evaluated too.
        text = self.CHECKLIST.format(ratio=1.05).replace("    run: latest:soak\n", "    run: latest:soak\n    optional: true\n")
        optional = self.write_suite(text, name="optional.yaml")
        r = self.perfgate("checklist", optional, "--run", "latest")
        self.assertExit(r, 0, "optional items may be unevaluated")
        self.assertIn("PASS", r.stdout)
        r = self.perfgate("checklist", optional, "--run", "latest", "--strict")
        self.assertExit(r, 1)
        self.assertIn("--strict", r.stdout)

    def test_a_failed_ratio_exits_1(self):
        self.perf_run()
        r = self.perfgate("checklist", self.checklist(ratio=100), "--run", "latest:perf")
        self.assertExit(r, 1)
        self.assertRegex(r.stdout, r"fail\s+graph beats eager")

    def test_bad_checklists_name_item_and_line(self):
        self.perf_run()
        cases = {
            "items:\n  - name: a\n    check: ratoi\n": ("checklist.yaml:3:12", "did you mean 'ratio'"),
            "items:\n  - name: a\n    check: data_share\n    at_mots: 0.1\n": ("checklist.yaml:4:5", "unknown key 'at_mots'"),
            "items:\n  - name: a\n    check: data_share\n    at_most: lots\n": ("checklist.yaml:4:14", "item 'a': at_most must be a number"),
            "items:\n  - name: a\n    check: ratio\n    at_least: 2\n": ("checklist.yaml:2:5", "numerator and denominator"),
            "items: []\n": ("checklist.yaml:1:8", "non-empty list"),
        }
        for text, (where, what) in cases.items():
            p = self.write_suite(text, name="checklist.yaml")
            r = self.perfgate("checklist", p, "--run", "latest")
            self.assertExit(r, 2, text)
            self.assertIn(where, r.stderr, text)
            self.assertIn(what, r.stderr, text)
        r = self.perfgate("checklist", self.checklist(), "--run", "77")
        self.assertExit(r, 2)
        self.assertIn("no run 77", r.stderr)
