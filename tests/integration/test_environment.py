"""The workload environment (suite env reaches the workload, secrets are never stored) and the machine fingerprint."""

import hashlib
import json
import os
import platform
import sqlite3
import subprocess
import sys
import unittest
import uuid
from pathlib import Path

from support import PerfgateTestCase, flow_list, metric, workload


class SecretEnvironment(PerfgateTestCase):
    def test_secret_reaches_workload_but_not_the_database(self):
        # "abc" as in the classic example, made unique so a match can only be the secret.
        secret = "abc" + uuid.uuid4().hex
        suite = self.write_suite(f"""\
suite: env
defaults:
  repeats: 1
  env:
    HF_TOKEN: {secret}
    MY_KNOB: "7"
workloads:
  - name: probe
    command: {self.command("env_probe.py", hashlib.sha256(secret.encode()).hexdigest())}
    env:
      WANDB_API_KEY: {secret}
      OMP_NUM_THREADS: "3"
""")
        r = self.perfgate("run", suite)
        self.assertExit(r, 0)
        self.assertNotIn(secret, r.stdout + r.stderr)

        show = self.show_json()
        c = show["configs"][0]
        self.assertEqual(metric(c, "token_ok")["median"], 1.0, "the workload did not get HF_TOKEN")
        self.assertEqual(metric(c, "knob")["median"], 7.0, "the workload did not get MY_KNOB")
        env = show["run"]["env"]
        self.assertEqual(env.get("HF_TOKEN"), "<redacted>", env)
        self.assertEqual(env.get("WANDB_API_KEY"), "<redacted>", env)
        # Ordinary settings are recorded as they are.
        self.assertEqual(env.get("MY_KNOB"), "7", env)
        self.assertEqual(env.get("OMP_NUM_THREADS"), "3", env)

        stored_env = self.query("SELECT env FROM runs")[0][0]
        self.assertNotIn("abc", stored_env)
        self.assertIn("HF_TOKEN", stored_env)

        # Nowhere in the database: not in any text column of any table, not in the files' bytes.
        con = sqlite3.connect(self.db)
        try:
            tables = [t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                cols = [row[1] for row in con.execute(f"PRAGMA table_info({table})")]
                for col in cols:
                    hits = con.execute(f"SELECT count(*) FROM {table} WHERE CAST({col} AS TEXT) LIKE ?",
                                       (f"%{secret}%",)).fetchone()[0]
                    self.assertEqual(hits, 0, f"the secret is stored in {table}.{col}")
        finally:
            con.close()
        for f in self.tmp.glob("perfgate.db*"):
            self.assertNotIn(secret.encode(), f.read_bytes(), f"the secret is in {f.name}")

        r = self.perfgate("show", "latest", "--format", "markdown")
        self.assertNotIn(secret, r.stdout)

        # Nor in the trial's command.sh, which names the secrets for a person to set.
        ((log_dir,),) = self.query("SELECT log_dir FROM trials")
        script = (Path(log_dir) / "command.sh").read_text()
        self.assertNotIn(secret, script)
        self.assertIn("HF_TOKEN WANDB_API_KEY", script)
        self.assertIn("OMP_NUM_THREADS=3", script)

    def test_command_sh_reruns_a_trial_as_it_ran(self):
        # Arguments a shell would split or expand, a parameter, the suite's env and PERFGATE_*.
        probe = ("import os, sys; print(sys.argv[1:], os.getcwd(), os.environ['MY_KNOB'], "
                 "os.environ['PERFGATE_PARAM_SIZE'], os.environ['PERFGATE_TRIAL_DIR'])")
        (self.tmp / "wd").mkdir()
        suite = self.write_suite(f"""\
suite: rerun
defaults: {{repeats: 1}}
workloads:
  - name: probe
    command: {flow_list([sys.executable, "-c", probe, "{size}", "a b; echo x", "$HOME", "it's"])}
    cwd: {self.tmp / "wd"}
    env: {{MY_KNOB: "v w"}}
    matrix: {{size: [3]}}
""")
        self.assertExit(self.perfgate("run", suite, "-q"), 0)
        ((log_dir,),) = self.query("SELECT log_dir FROM trials")
        ran = (Path(log_dir) / "stdout.log").read_text()
        self.assertIn("['3', 'a b; echo x', '$HOME', \"it's\"]", ran)
        again = subprocess.run(["sh", str(Path(log_dir) / "command.sh")], capture_output=True, text=True,
                               cwd="/", timeout=60)
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertEqual(again.stdout, ran)


class Fingerprint(PerfgateTestCase):
    def test_python_in_the_fingerprint_is_the_workloads_interpreter(self):
        # The suite runs its workload with an interpreter given by absolute path (as a
        # venv/conda setup does), while a different `python3` comes first on PATH. The
        # fingerprint must describe the Python (and torch) the workload really uses.
        realbin = self.tmp / "venv" / "bin"
        realbin.mkdir(parents=True)
        (realbin / "python3").symlink_to(sys.executable)
        fakebin = self.tmp / "fakebin"
        fakebin.mkdir()
        fake = fakebin / "python3"
        fake.write_text("#!/bin/sh\necho python 0.0.0-not-the-workloads\necho torch 0.0.0-not-the-workloads\n")
        fake.chmod(0o755)
        suite = self.write_suite(f"""\
suite: fp
defaults: {{repeats: 1}}
workloads:
  - name: w
    command: {flow_list([str(realbin / "python3"), workload("steps.py"), "--steps", "1"])}
""")
        r = self.perfgate("run", suite, env=self.env(PATH=f"{fakebin}:{os.environ.get('PATH', '/usr/bin:/bin')}"))
        self.assertExit(r, 0)
        fp = self.show_json()["run"]["fingerprint"]
        self.assertEqual(fp.get("python"), platform.python_version(), fp)
        self.assertNotIn("0.0.0-not-the-workloads", json.dumps(fp))


if __name__ == "__main__":
    unittest.main()
