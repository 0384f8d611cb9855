"""One suite over a fleet: `perfgate run --executor slurm` against a real
one-node Slurm cluster (the ctest fixture's scripts/services/slurm.sh: 8 fake
gpu and 8 fake npu devices) and a real PostgreSQL, the database as the queue.

- 16 trials over 4 array tasks, each trial pinned to the npu its task got
  (from scontrol, as Slurm exports nothing for a generic resource), and the
  same with --gres=gpu (CUDA_VISIBLE_DEVICES from Slurm).
- A worker cancelled mid-trial (scancel of one array task) and one SIGKILLed:
  the trial is run again by another worker, nothing duplicated, the lost
  attempt recorded as lost.
- The submitter interrupted: the job is cancelled, the run interrupted, the
  finished trials kept. A bad partition, a job that never starts, a SQLite
  database, --no-wait and `perfgate wait`.
"""

import json
import os
import signal
import subprocess
import time
import unittest
import uuid
from pathlib import Path

from support import EXIT_HARNESS, EXIT_INPUT, EXIT_OK, PerfgateTestCase, wait_until
from test_postgres import SERVER, psql, url_for

SLURM_CONF = os.environ.get("PERFGATE_TEST_SLURM_CONF", "")


def squeue(job):
    r = subprocess.run(["squeue", "-h", "-r", "-j", str(job), "-o", "%i %T"], capture_output=True, text=True,
                       timeout=30)
    return [l for l in r.stdout.splitlines() if l.strip()] if r.returncode == 0 else []


class FleetTestCase(PerfgateTestCase):
    timeout_s = 300

    def setUp(self):
        super().setUp()
        self.assertTrue(SERVER, "PERFGATE_TEST_PG is not set: run through ctest (fixture 'postgres')")
        self.assertTrue(SLURM_CONF and os.path.exists(SLURM_CONF),
                        "PERFGATE_TEST_SLURM_CONF is not set: run through ctest (fixture 'slurm')")
        os.environ["SLURM_CONF"] = SLURM_CONF
        self.dbname = "fleet_" + uuid.uuid4().hex[:12]
        psql(SERVER, f"CREATE DATABASE {self.dbname}")
        self.url = url_for(SERVER, self.dbname)
        self.record = self.tmp / "record.jsonl"
        self.jobs = []
        self.addCleanup(self.cancel_jobs)

    def cancel_jobs(self):
        for job in self.jobs:
            subprocess.run(["scancel", str(job)], capture_output=True, timeout=30)

    def suite(self, repeats=8, sleep=0.3, name="fleet"):
        return self.write_suite(f"""\
suite: {name}
defaults: {{repeats: {repeats}, timeout: 60s}}
workloads:
  - name: probe
    command: {self.command("slot_probe.py", "--sleep", "{sleep}", "--record", str(self.record),
                           "--marker", self.marker)}
    matrix: {{sleep: [{sleep}, {sleep * 1.5}]}}
""", f"{name}.yaml")

    def fleet(self, suite, *args, timeout=180):
        return self.perfgate("run", suite, "--executor", "slurm", *args, db=self.url, timeout=timeout)

    def start_fleet(self, suite, *args):
        return self.start_perfgate("run", suite, "--executor", "slurm", *args, db=self.url)

    def show(self):
        return self.show_json(db=self.url)

    def records(self, event="start"):
        if not self.record.exists():
            return []
        return [r for r in map(json.loads, self.record.read_text().splitlines()) if r["event"] == event]

    def trials(self, status=None):
        return [t for t in self.show()["trials"] if status is None or t["status"] == status]

    def job_of(self, stderr):
        import re
        m = re.search(r"Slurm job (\d+)", stderr)
        self.assertTrue(m, stderr)
        self.jobs.append(m.group(1))
        return m.group(1)

    def worker_logs(self):
        """Every worker log of this test's runs, for failure messages."""
        return "\n".join(f"--- {p}\n{p.read_text(errors='replace')[-3000:]}"
                         for p in sorted(self.tmp.glob("results/runs/*/*/slurm/worker-*.log")))

    def assertNoDuplicates(self, ok):
        keys = [(t["config_id"], t["repeat"]) for t in ok]
        self.assertEqual(len(keys), len(set(keys)), keys)


class FleetRuns(FleetTestCase):
    def test_16_trials_over_4_array_tasks_each_pinned_to_its_npu(self):
        r = self.fleet(self.suite(repeats=8, sleep=0.3), "--nodes", "4", "--sbatch-arg=--gres=npu:1")
        self.assertExit(r, EXIT_OK, "fleet run")
        self.job_of(r.stderr)
        # The same lines and final table as a local run.
        self.assertRegex(r.stderr, r"\[16/16\] probe sleep=\S+ \(repeat \d\) on \S+ npu \d  ok")
        self.assertIn("trials: 16 ok, 0 failed", r.stdout)
        ok = self.trials("ok")
        self.assertEqual(len(ok), 16)
        self.assertNoDuplicates(ok)
        # Each trial ran on the one npu its array task got, as stored.
        seen = {os.path.basename(rec["trial_dir"]): rec for rec in self.records()}
        npus = set()
        for t in ok:
            self.assertEqual(t["device_kind"], "npu", t)
            self.assertEqual(len(t["devices"]), 1, t)
            rec = seen[os.path.basename(t["log_dir"])]
            self.assertEqual(rec["visible"], str(t["devices"][0]), (t, rec))
            npus.add(t["devices"][0])
        self.assertGreaterEqual(len(npus), 2, "the trials spread over several workers")
        # Each node's fingerprint is stored once and named by its trials.
        fp = {t["node_fingerprint"] for t in ok}
        self.assertEqual(len(fp), 1)
        self.assertNotEqual(fp, {""})
        self.assertEqual(psql(self.url, "SELECT count(*) FROM node_fingerprints"), "1")
        self.assertEqual(psql(self.url, "SELECT string_agg(DISTINCT state, ',') FROM trial_queue"), "done")
        # The workers' logs, under the run's folder.
        run_dir = self.show()["run"]["artifacts_dir"]
        logs = sorted(p for p in os.listdir(os.path.join(run_dir, "slurm")) if p.endswith(".log"))
        self.assertEqual(len(logs), 4, logs)

    def test_gpu_resources_come_through_cuda_visible_devices(self):
        r = self.fleet(self.suite(repeats=2, sleep=0.2), "--nodes", "2", "--sbatch-arg=--gres=gpu:1")
        self.assertExit(r, EXIT_OK, "fleet run")
        self.job_of(r.stderr)
        seen = {os.path.basename(rec["trial_dir"]): rec for rec in self.records()}
        ok = self.trials("ok")
        self.assertEqual(len(ok), 4)
        for t in ok:
            self.assertEqual(t["device_kind"], "cuda", t)
            self.assertEqual(seen[os.path.basename(t["log_dir"])]["cuda"], str(t["devices"][0]))

    def test_a_worker_waits_for_a_device_held_outside_slurm_and_says_so(self):
        # Another process on the node (a job started by hand, outside Slurm)
        # holds every npu's lock: the worker Slurm gave one waits, says so in
        # its log, and runs its trials once the lock is let go.
        import fcntl
        locks = Path(os.environ["PERFGATE_LOCK_DIR"])
        locks.mkdir(parents=True, exist_ok=True)
        held = []
        for n in range(8):
            f = open(locks / f"npu-{n}.lock", "a+")
            fcntl.flock(f, fcntl.LOCK_EX)
            held.append(f)
        self.addCleanup(lambda: [f.close() for f in held])
        bg = self.start_fleet(self.suite(repeats=1, sleep=0.1), "--nodes", "1", "--sbatch-arg=--gres=npu:1")
        self.assertTrue(wait_until(lambda: "held by another process" in self.worker_logs(), 60),
                        bg.stderr() + self.worker_logs())
        self.assertEqual(self.records(), [], "no trial starts while its device is held")
        for f in held:
            f.close()
        self.assertEqual(bg.wait(120), EXIT_OK, bg.stderr() + self.worker_logs())
        self.assertEqual(len(self.trials("ok")), 2)
        self.assertRegex(self.worker_logs(), r"worker \S+: slot 0 waiting for npu \d, held by another process \(\S+npu-\d\.lock\)")

    def test_no_wait_then_wait(self):
        r = self.fleet(self.suite(repeats=2, sleep=0.2), "--nodes", "2", "--no-wait")
        self.assertExit(r, EXIT_OK, "fleet run --no-wait")
        run_id, job = r.stdout.split()[1], r.stdout.split()[3]
        self.jobs.append(job)
        w = self.perfgate("wait", run_id, db=self.url, timeout=120)
        self.assertExit(w, EXIT_OK, "perfgate wait")
        self.assertIn("trials: 4 ok, 0 failed", w.stdout)
        self.assertEqual(self.show()["run"]["status"], "completed")
        # A local run is not a fleet run.
        local = self.perfgate("run", self.suite(repeats=1, sleep=0.01, name="local"), "-q", db=self.url)
        self.assertExit(local, EXIT_OK)
        self.assertExit(self.perfgate("wait", "latest", db=self.url), EXIT_INPUT)


    def test_a_soak_on_the_fleet(self):
        suite = self.write_suite(f"""\
suite: fleet-soak
defaults: {{repeats: 1, warmup: {{steps: 2}}}}
workloads:
  - name: train
    command: {self.command("steps.py", "--steps", "100000", "--sleep", "0.02", "--marker", self.marker)}
    matrix: {{k: [1, 2]}}
""", "soak.yaml")
        r = self.perfgate("soak", suite, "--executor", "slurm", "--nodes", "2", "--duration", "4s", "--window", "1s",
                          db=self.url, timeout=120)
        self.assertExit(r, EXIT_OK, "fleet soak")
        self.job_of(r.stderr)
        show = self.show()
        self.assertEqual(show["run"]["kind"], "soak")
        ok = self.trials("ok")
        self.assertEqual(len(ok), 2)
        for t in ok:
            # Stopped at the soak's duration, not at the workload's 100,000 steps.
            self.assertGreater(t["wall_s"], 3.5)
            self.assertLess(t["wall_s"], 15)
        self.assertIn("train k=1", r.stdout, "the soak's analysis at the end, as a local soak prints it")


class FleetGate(FleetTestCase):
    def test_an_adaptive_gate_submits_its_extra_trials_to_the_fleet(self):
        suite = self.write_suite(f"""\
suite: fleet-gate
defaults: {{repeats: 5, warmup: {{steps: 1}}, timeout: 1m}}
workloads:
  - name: steps
    command: {self.command("noisy_steps.py", "--seed-from-env", "PERFGATE_REPEAT", "--seed-from-env",
                           "PERFGATE_RUN_ID", "--scale-env", "NOISY_SCALE", "--marker", self.marker)}
""", "gate.yaml")
        for _ in range(2):
            self.assertExit(self.perfgate("run", suite, "-q", "--tag", "nightly", db=self.url), EXIT_OK)
        # Two candidate trials on the fleet, 30 % slower: too few to test.
        r = self.fleet(suite, "--set", "repeats=2", "--nodes", "2", "--sbatch-arg=--gres=npu:1")
        self.assertExit(r, EXIT_OK, "fleet candidate")
        self.job_of(r.stderr)
        cand = self.show()["run"]["id"]
        g = self.perfgate("gate", "--run", str(cand), "--baseline", "tag:nightly", "--adaptive", "--max-trials", "8",
                          "--format", "json", db=self.url, timeout=240, env=self.env(NOISY_SCALE="1.3"))
        self.assertEqual(g.returncode, 1, g.stderr)
        report = json.loads(g.stdout)
        added = report["adaptive"]["trials_added"]
        self.assertGreaterEqual(added, 1, report["adaptive"])
        self.assertIn("more trial(s) queued for Slurm job", g.stderr)
        # The extra trials ran on the fleet's npus, in the candidate run, each once.
        show = self.show_json(str(cand), db=self.url)
        ok = [t for t in show["trials"] if t["status"] == "ok"]
        self.assertEqual(len(ok), 2 + added)
        self.assertTrue(all(t["device_kind"] == "npu" for t in ok), ok)
        self.assertEqual(sorted(t["repeat"] for t in ok), list(range(2 + added)))
        self.assertEqual(show["run"]["status"], "completed")
        # One job array per round of extra trials, besides the run's own.
        self.assertEqual(psql(self.url, f"SELECT count(*) FROM fleet_jobs WHERE run_id = {cand}"),
                         str(1 + report["adaptive"]["rounds"]))
        self.assertEqual(report["outcome"], "regression", report["headline"])


class FleetNodeClasses(FleetTestCase):
    """A fleet of two node kinds: the gate compares each kind with itself.

    The run is queued through Slurm with its job held (it never starts), and
    two `perfgate worker`s drain the queue by hand, each in its own UTS
    namespace: nodes pool-a-01 and pool-b-01, two hostname classes, so two
    node fingerprints. Pool b is 50 % slower than pool a, always; tonight
    pool a got 20 % slower. Pooled, that hides inside the gap between the
    pools; per class it is plain."""

    def drain(self, run, scale_a, scale_b):
        turns = self.tmp / f"turns-{run}"
        procs = []
        for host, scale in (("pool-a-01", scale_a), ("pool-b-01", scale_b)):
            argv = ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host, os.environ["PERFGATE_BIN"],
                    "--db", self.url, "worker", "--run", str(run)]
            env = self.env(NOISY_SCALE=str(scale), TURNS=str(turns))
            procs.append(subprocess.Popen(argv, cwd=str(self.tmp), env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
        for p in procs:
            out, _ = p.communicate(timeout=240)
            self.assertEqual(p.returncode, EXIT_OK, out)

    def queued_run(self, suite, *args):
        r = self.fleet(suite, "--no-wait", "--nodes", "1", "--sbatch-arg=--begin=now+1hour", *args)
        self.assertExit(r, EXIT_OK, "queued fleet run")
        self.job_of(r.stderr)
        return self.show()["run"]["id"]

    def test_a_gate_over_two_node_classes_compares_each_class_apart(self):
        suite = self.write_suite(f"""\
suite: fleet-classes
defaults: {{repeats: 12, warmup: {{steps: 1}}, timeout: 1m}}
workloads:
  - name: steps
    command: {self.command("noisy_steps.py", "--seed-from-env", "PERFGATE_REPEAT", "--seed-from-env",
                           "PERFGATE_RUN_ID", "--scale-env", "NOISY_SCALE", "--take-turns-env", "TURNS",
                           "--marker", self.marker)}
""", "classes.yaml")
        for _ in range(3):
            run = self.queued_run(suite, "--tag", "nightly")
            self.drain(run, 1.0, 1.5)
        cand = self.queued_run(suite)
        self.drain(cand, 1.2, 1.5)
        w = self.perfgate("wait", str(cand), db=self.url, timeout=60)
        self.assertExit(w, EXIT_OK, "wait on a drained run")

        # Each trial names its node's fingerprint; both pools ran a share.
        show = self.show_json(str(cand), db=self.url)
        self.assertEqual(show["run"]["status"], "completed")
        ok = [t for t in show["trials"] if t["status"] == "ok"]
        self.assertEqual(len(ok), 12)
        per_node = {}
        for t in ok:
            per_node.setdefault(t["node_fingerprint"], []).append(t["host"])
        self.assertEqual(len(per_node), 2, per_node)
        self.assertTrue(all(len(h) >= 4 for h in per_node.values()), per_node)
        self.assertEqual({h[0] for h in per_node.values()}, {"pool-a-01", "pool-b-01"})

        g = self.perfgate("gate", "--run", str(cand), "--baseline", "tag:nightly", "--metric", "step_time_ms",
                          "--no-rerun", "--format", "json", db=self.url, timeout=120)
        self.assertExit(g, 1, "gate per node class")
        report = json.loads(g.stdout)
        step = {c["node_class"].split("/")[0]: c for c in report["comparisons"] if c["metric"] == "step_time_ms"}
        self.assertEqual(set(step), {"pool-a", "pool-b"}, report["comparisons"])
        self.assertEqual(step["pool-a"]["verdict"], "regression", step["pool-a"])
        self.assertAlmostEqual(step["pool-a"]["change"], 0.20, delta=0.04)
        self.assertIn(step["pool-b"]["verdict"], ("unchanged", "inconclusive"), step["pool-b"])
        self.assertLess(abs(step["pool-b"]["change"]), 0.03, step["pool-b"])
        self.assertIn("@ pool-a/", step["pool-a"]["label"])
        self.assertIn("2 node classes", g.stderr + json.dumps(report.get("warnings", [])))
        # The stored verdicts keep their classes apart.
        self.assertEqual(psql(self.url, "SELECT count(DISTINCT node_class) FROM verdicts"), "2")

        # Pooled over both kinds (--force), the 20 % on half the trials sits
        # inside the 50 % between the pools: what a gate blind to node kinds says.
        f = self.perfgate("gate", "--run", str(cand), "--baseline", "tag:nightly", "--metric", "step_time_ms",
                          "--no-rerun", "--force", "--format", "json", db=self.url, timeout=120)
        pooled = [c for c in json.loads(f.stdout)["comparisons"] if c["metric"] == "step_time_ms"]
        self.assertEqual(len(pooled), 1, pooled)
        self.assertEqual(pooled[0]["node_class"], "")
        self.assertNotEqual(pooled[0]["verdict"], "regression", pooled[0])


class FleetFaults(FleetTestCase):
    def test_a_worker_cancelled_mid_trial_has_its_trial_run_again(self):
        bg = self.start_fleet(self.suite(repeats=3, sleep=2.0), "--nodes", "2", "--sbatch-arg=--gres=npu:1")
        self.assertTrue(wait_until(lambda: len(self.records()) >= 2, 60), bg.stderr())
        job = self.job_of(bg.stderr())
        victim = self.records()[0]["slurm_task"]
        subprocess.run(["scancel", f"{job}_{victim}"], check=True, timeout=30)
        self.assertEqual(bg.wait(180), EXIT_OK, bg.stderr() + self.worker_logs())
        ok, lost = self.trials("ok"), self.trials("lost")
        self.assertEqual(len(ok), 6, (bg.stderr(), [(t["status"], t["error"]) for t in self.trials()],
                                      self.worker_logs()))
        self.assertNoDuplicates(ok)
        self.assertGreaterEqual(len(lost), 1, self.trials())
        self.assertIn("queued again", lost[0]["error"])
        self.assertIn("lost with their worker", self.perfgate("show", "latest", db=self.url).stdout)

    def test_a_sigkilled_worker_loses_its_lease_and_its_trial_runs_again(self):
        bg = self.start_fleet(self.suite(repeats=2, sleep=2.0), "--nodes", "2", "--lease", "3s",
                              "--sbatch-arg=--gres=npu:1")
        self.assertTrue(wait_until(lambda: len(self.records()) >= 1, 60), bg.stderr())
        self.job_of(bg.stderr())
        # The worker of the first trial, by its parent: perfgate worker.
        pid = self.records()[0]["pid"]
        ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        self.assertIn(b"worker", Path(f"/proc/{ppid}/cmdline").read_bytes())
        os.kill(ppid, signal.SIGKILL)
        self.assertEqual(bg.wait(180), EXIT_OK, bg.stderr() + self.worker_logs())
        ok, lost = self.trials("ok"), self.trials("lost")
        self.assertEqual(len(ok), 4)
        self.assertNoDuplicates(ok)
        self.assertEqual(len(lost), 1, self.trials())
        self.assertIn("stopped renewing its lease", lost[0]["error"])

class FleetSubmitter(FleetTestCase):
    def test_ctrl_c_on_the_submitter_cancels_the_job_and_keeps_finished_trials(self):
        bg = self.start_fleet(self.suite(repeats=8, sleep=1.0), "--nodes", "2", "--sbatch-arg=--gres=npu:1")
        self.assertTrue(wait_until(lambda: len(self.records("end")) >= 2, 60), bg.stderr())
        job = self.job_of(bg.stderr())
        time.sleep(0.5)
        bg.proc.send_signal(signal.SIGINT)
        self.assertEqual(bg.wait(60), EXIT_HARNESS, bg.stderr())
        self.assertIn("cancelled", bg.stderr())
        self.assertTrue(wait_until(lambda: not squeue(job), 30), squeue(job))
        show = self.show()
        self.assertEqual(show["run"]["status"], "interrupted")
        self.assertGreaterEqual(len(self.trials("ok")), 1)
        self.assertEqual(self.trials("running"), [])
        self.assertEqual(self.trials("lost"), [], "a cancelled run's trials are interrupted, not lost")
        self.assertEqual(psql(self.url, "SELECT count(*) FROM trial_queue WHERE state IN ('pending', 'claimed')"), "0")
        self.assertNoMarkedProcesses(grace_s=10)

    def test_a_bad_partition_is_sbatch_s_own_message(self):
        r = self.fleet(self.suite(repeats=1), "--partition", "no-such-partition")
        self.assertExit(r, EXIT_INPUT, "bad partition")
        self.assertIn("sbatch refused", r.stderr)
        self.assertIn("invalid partition", r.stderr.lower())
        self.assertEqual(self.show()["run"]["status"], "failed")

    def test_a_job_that_never_starts_is_an_error_with_slurm_s_reason(self):
        r = self.fleet(self.suite(repeats=1), "--start-timeout", "4s", "--sbatch-arg=--begin=now+1hour")
        self.assertExit(r, EXIT_HARNESS, "job held")
        self.assertIn("did not start within", r.stderr)
        self.assertIn("BeginTime", r.stderr)
        job = self.job_of(r.stderr)
        self.assertTrue(wait_until(lambda: not squeue(job), 30), squeue(job))

    def test_sqlite_needs_shared_sqlite(self):
        suite = self.suite(repeats=1, sleep=0.1)
        r = self.perfgate("run", suite, "--executor", "slurm")
        self.assertExit(r, EXIT_INPUT, "sqlite with slurm")
        self.assertIn("--shared-sqlite", r.stderr)
        r = self.perfgate("run", suite, "--executor", "slurm", "--shared-sqlite", "--nodes", "2", timeout=120)
        self.assertExit(r, EXIT_OK, "sqlite on a shared path")
        self.job_of(r.stderr)
        self.assertIn("trials: 2 ok, 0 failed", r.stdout)


if __name__ == "__main__":
    unittest.main()
