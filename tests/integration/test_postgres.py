"""The shared PostgreSQL store through the real binary: every command
against a real server (the ctest fixture's throwaway PostgreSQL 15), a nightly
gate whose baseline two machines wrote, `db copy` both ways, several writers,
a connection lost mid-run, and the error cases (server down, wrong password,
missing database, a URL that is not PostgreSQL's) with passwords never shown."""

import json
import os
import shutil
import signal
import subprocess
import time
import unittest
import uuid
from pathlib import Path

from support import EXIT_HARNESS, EXIT_INPUT, EXIT_OK, EXIT_REGRESSION, SOURCE_DIR, PerfgateTestCase, wait_until

SERVER = os.environ.get("PERFGATE_TEST_PG", "")
POSTGRES_SH = SOURCE_DIR / "scripts" / "services" / "postgres.sh"


def psql(url, sql):
    r = subprocess.run(["psql", url, "-qAtX", "-c", sql], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError(f"psql failed: {sql}\n{r.stderr}")
    return r.stdout.strip()


def url_for(server, dbname):
    # postgresql://postgres@/perfgate?host=...&port=...  ->  the same server, another database
    head, _, query = server.partition("?")
    return head.rsplit("/", 1)[0] + "/" + dbname + ("?" + query if query else "")


class PostgresStore(PerfgateTestCase):
    timeout_s = 300

    def setUp(self):
        super().setUp()
        self.assertTrue(SERVER, "PERFGATE_TEST_PG is not set: run through ctest (fixture 'postgres')")
        self.dbname = "it_" + uuid.uuid4().hex[:12]
        psql(SERVER, f"CREATE DATABASE {self.dbname}")
        self.url = url_for(SERVER, self.dbname)

    def pg(self, *args, **kw):
        return self.perfgate(*args, db=self.url, **kw)

    def steps_suite(self, name="nightly", sleep=0.02, repeats=3):
        return self.write_suite(f"""\
suite: {name}
defaults: {{repeats: {repeats}, timeout: 30s, warmup: {{steps: 2}}}}
workloads:
  - name: train
    command: {self.command("steps.py", "--steps", "12", "--sleep", str(sleep), "--marker", self.marker)}
""", f"{name}-{sleep}.yaml")

    def on_host(self, host, *args):
        """perfgate as another machine: its own hostname (a UTS namespace)."""
        argv = ["unshare", "--uts", "sh", "-c", f'hostname "$0" && exec "$@"', host, os.environ["PERFGATE_BIN"],
                "--db", self.url, *map(str, args)]
        return subprocess.run(argv, cwd=str(self.tmp), capture_output=True, text=True, timeout=120)

    def test_every_command_works_against_postgres(self):
        suite = self.steps_suite()
        for _ in range(3):
            self.assertExit(self.pg("run", suite, "--tag", "nightly", "-q"), EXIT_OK)
        r = self.pg("runs", "--format", "json")
        self.assertExit(r, EXIT_OK)
        runs = json.loads(r.stdout)
        self.assertEqual([x["status"] for x in runs], ["completed"] * 3)
        show = json.loads(self.pg("show", "latest", "--format", "json").stdout)
        self.assertEqual(len(show["trials"]), 3)
        self.assertTrue(all(t["steps"] == 12 for t in show["trials"]))
        # Samples went in by COPY and read back.
        self.assertEqual(int(psql(self.url, "SELECT count(*) FROM samples WHERE trial_id IN "
                                            "(SELECT id FROM trials WHERE run_id = 3)")) > 0, True)
        self.assertExit(self.pg("compare", "1", "2"), EXIT_OK)
        g = self.pg("gate", "--run", "latest", "--baseline", "tag:nightly,last:2", "--format", "json")
        self.assertIn(g.returncode, (EXIT_OK,), g.stderr)
        self.assertEqual(json.loads(g.stdout)["baseline"]["runs"], [2, 1])
        self.assertExit(self.pg("history", "--suite", "nightly"), EXIT_OK)
        c = self.pg("checklist", SOURCE_DIR / "configs" / "release-checklist.yaml", "--run", "latest")
        self.assertIn(c.returncode, (EXIT_OK, EXIT_REGRESSION), c.stderr)
        self.assertIn("no_regression", c.stdout)
        out = self.tmp / "dash"
        self.assertExit(self.pg("dashboard", "--out", out), EXIT_OK)
        self.assertTrue((out / "index.html").exists())
        self.assertNotIn(self.url, (out / "index.html").read_text())
        soak = self.pg("soak", suite, "--duration", "2s", "-q")
        self.assertExit(soak, EXIT_OK)
        self.assertExit(self.pg("soak-report", "latest"), EXIT_OK)
        f = self.tmp / "m.jsonl"
        f.write_text("".join(json.dumps({"step": i, "step_time_ms": 10 + i % 2}) + "\n" for i in range(10)))
        self.assertExit(self.pg("import", "--format", "jsonl", f, "--suite", "external"), EXIT_OK)
        kinds = psql(self.url, "SELECT string_agg(kind, ',' ORDER BY id) FROM runs")
        self.assertEqual(kinds, "run,run,run,soak,import")
        # PERFGATE_DB names the database without --db.
        r = self.perfgate("runs", db=False, env=self.env(PERFGATE_DB=self.url))
        self.assertExit(r, EXIT_OK)
        self.assertIn("external", r.stdout)

    def test_a_nightly_gate_over_a_baseline_two_machines_wrote(self):
        fast = self.steps_suite(sleep=0.02, repeats=5)
        for host in ("npu-node-01", "npu-node-02", "npu-node-01"):
            r = self.on_host(host, "run", fast, "--tag", "nightly", "-q")
            self.assertEqual(r.returncode, 0, r.stderr)
        hosts = psql(self.url, "SELECT string_agg(DISTINCT host, ',') FROM trials")
        self.assertEqual(hosts, "npu-node-01,npu-node-02")
        # A slower build on the second machine: the gate pools the three baseline runs of both.
        slow = self.steps_suite(sleep=0.06, repeats=5)
        shutil.copy(slow, fast)  # same suite file and name, the workload now sleeps twice as long
        r = self.on_host("npu-node-02", "run", fast, "--tag", "candidate", "-q")
        self.assertEqual(r.returncode, 0, r.stderr)
        g = self.on_host("npu-node-02", "gate", "--run", "latest:candidate", "--baseline", "tag:nightly,last:3",
                         "--format", "json")
        self.assertEqual(g.returncode, EXIT_REGRESSION, g.stdout + g.stderr)
        gate = json.loads(g.stdout)
        self.assertEqual(sorted(gate["baseline"]["runs"]), [1, 2, 3])
        verdicts = {c["metric"]: c["verdict"] for c in gate["comparisons"]}
        self.assertEqual(verdicts.get("step_time_ms"), "regression", gate["comparisons"])
        # The verdicts are in the shared database for everyone's dashboard.
        self.assertEqual(psql(self.url, "SELECT count(*) FROM gates"), "1")

    def test_db_copy_both_ways(self):
        suite = self.steps_suite()
        sqlite_db = self.tmp / "local.db"
        for _ in range(2):
            self.assertExit(self.perfgate("run", suite, "--tag", "nightly", "-q", db=sqlite_db), EXIT_OK)
        self.assertIn(self.perfgate("gate", "--run", "latest", "--baseline", "tag:nightly", db=sqlite_db).returncode,
                      (EXIT_OK,))
        r = self.perfgate("db", "copy", sqlite_db, self.url, db=False)
        self.assertExit(r, EXIT_OK)
        # The gate may have added candidate trials to the second run (underpowered: adaptive).
        trials = self.query("SELECT count(*) FROM trials", db=sqlite_db)[0][0]
        self.assertIn(f"copied 2 run(s), {trials} trial(s)", r.stdout)
        self.assertIn("1 gate(s)", r.stdout)
        # A second copy finds both runs there and writes nothing.
        again = self.perfgate("db", "copy", sqlite_db, self.url, db=False)
        self.assertExit(again, EXIT_OK)
        self.assertIn("copied 0 run(s)", again.stdout)
        self.assertIn("2 run(s) already there", again.stdout)
        self.assertEqual(psql(self.url, "SELECT count(*) FROM runs"), "2")
        self.assertEqual(psql(self.url, "SELECT count(*) FROM gates"), "1")
        # A copy cut off inside run 2 (the link went down): the run is left
        # "running" with part of its trials. Copying again replaces it whole.
        whole = {q: psql(self.url, q) for q in ("SELECT count(*) FROM trials", "SELECT count(*) FROM samples",
                                                "SELECT count(*) FROM trial_summaries", "SELECT count(*) FROM verdicts")}
        psql(self.url, "DELETE FROM gates")
        psql(self.url, "UPDATE runs SET status = 'running' WHERE id = 2")
        psql(self.url, "DELETE FROM samples WHERE trial_id IN (SELECT id FROM trials WHERE run_id = 2 AND seq > 1)")
        psql(self.url, "DELETE FROM trials WHERE run_id = 2 AND seq > 1")
        resumed = self.perfgate("db", "copy", sqlite_db, self.url, db=False)
        self.assertExit(resumed, EXIT_OK)
        self.assertIn("copied 1 run(s)", resumed.stdout)
        self.assertIn("1 of the runs replaced a half-written copy", resumed.stdout)
        self.assertIn("1 run(s) already there", resumed.stdout)
        self.assertEqual(psql(self.url, "SELECT string_agg(status, ',' ORDER BY id) FROM runs"), "completed,completed")
        self.assertEqual({q: psql(self.url, q) for q in whole}, whole, "the history whole again, nothing twice")
        back = self.tmp / "back.db"
        self.assertExit(self.perfgate("db", "copy", self.url, back, db=False), EXIT_OK)

        def normal(db):
            show = json.loads(self.perfgate("show", "latest", "--format", "json", db=db).stdout)

            def strip(o):
                if isinstance(o, dict):
                    return {k: strip(v) for k, v in o.items() if k not in ("id", "trial_id", "config_id", "run_id")}
                if isinstance(o, list):
                    return [strip(x) for x in o]
                return o
            return strip(show)
        self.assertEqual(normal(sqlite_db), normal(self.url))
        self.assertEqual(normal(sqlite_db), normal(back))
        # Every sample's step and value, exactly (a float sum would depend on
        # the order the rows come back in: it differed in the last digit).
        samples = lambda db: self.query("SELECT step, value FROM samples ORDER BY step, value", db=db)
        self.assertEqual(samples(sqlite_db), samples(back))
        gates = json.loads(self.perfgate("runs", "--format", "json", db=back).stdout)
        self.assertEqual(len(gates), 2)

    def test_two_writers_at_once(self):
        a, b = self.steps_suite("left"), self.steps_suite("right")
        self.assertExit(self.pg("runs"), EXIT_OK)  # the schema exists first
        pa = self.start_perfgate("run", a, "--set", "repeats=4", db=self.url)
        pb = self.start_perfgate("run", b, "--set", "repeats=4", db=self.url)
        self.assertEqual(pa.wait(60), 0, pa.stderr())
        self.assertEqual(pb.wait(60), 0, pb.stderr())
        self.assertNotIn("abandoned", pa.stderr() + pb.stderr())
        rows = psql(self.url, "SELECT string_agg(suite || ':' || status, ',' ORDER BY suite) FROM runs")
        self.assertEqual(rows, "left:completed,right:completed")
        self.assertEqual(psql(self.url, "SELECT count(*) FROM trials WHERE status = 'ok' AND steps = 12"), "8")

    def test_a_lost_connection_is_restored_and_nothing_is_lost(self):
        suite = self.steps_suite(sleep=0.1, repeats=4)  # 1.2 s per trial
        bg = self.start_perfgate("run", suite, db=self.url)
        self.assertTrue(bg.wait_for_line(r"^\[1/4\] .* ok ", 30), bg.stderr())
        # The server ends perfgate's session, as a restart or a network cut would.
        psql(SERVER, f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{self.dbname}' "
                     "AND pid <> pg_backend_pid()")
        self.assertEqual(bg.wait(60), 0, bg.stderr())
        self.assertEqual(psql(self.url, "SELECT string_agg(status, ',') FROM trials"), "ok,ok,ok,ok")
        self.assertEqual(psql(self.url, "SELECT status FROM runs"), "completed")

    def test_a_killed_writer_leaves_no_half_trial(self):
        suite = self.steps_suite(sleep=0.1, repeats=4)
        bg = self.start_perfgate("run", suite, db=self.url)
        self.assertTrue(bg.wait_for_line(r"^\[1/4\] .* ok ", 30), bg.stderr())
        # Killed while its second trial is in flight: that trial's row comes a
        # moment after the first one's line (beside two busy loops, once after
        # the kill), so the test waits for it.
        in_flight = lambda: psql(self.url, "SELECT count(*) FROM trials WHERE status = 'running'") == "1"
        self.assertTrue(wait_until(in_flight, 30, interval_s=0.05), bg.stderr())
        bg.proc.send_signal(signal.SIGKILL)
        self.assertEqual(bg.wait(10), -signal.SIGKILL)
        self.assertNoMarkedProcesses(grace_s=5)
        # The finished trials are whole (one, unless the machine was slow to answer);
        # the one in flight is still "running", with no summaries.
        self.assertRegex(psql(self.url, "SELECT string_agg(status, ',' ORDER BY seq) FROM trials"), r"^(ok,)+running$")
        self.assertEqual(psql(self.url, "SELECT count(*) FROM trial_summaries s JOIN trials t ON t.id = s.trial_id "
                                        "WHERE t.status = 'running'"), "0")
        r = self.pg("run", suite, "--set", "repeats=1")
        self.assertExit(r, EXIT_OK)
        self.assertIn("marked 1 abandoned run(s)", r.stderr)
        self.assertEqual(psql(self.url, "SELECT string_agg(status, ',' ORDER BY id) FROM runs"), "interrupted,completed")
        self.assertEqual(psql(self.url, "SELECT string_agg(status, ',' ORDER BY seq) FROM trials WHERE run_id = 1"),
                         "ok,interrupted")

    def test_errors_name_the_problem_and_never_the_password(self):
        suite = self.steps_suite()
        port = SERVER.rsplit("port=", 1)[1].split("&")[0]
        secret = "not-the-pw-" + uuid.uuid4().hex[:6]
        wrong = f"postgresql://perfgate_pw:{secret}@127.0.0.1:{port}/perfgate"
        r = self.perfgate("run", suite, db=wrong)
        self.assertExit(r, EXIT_HARNESS)
        self.assertIn("password authentication failed", r.stderr)
        self.assertNotIn(secret, r.stderr + r.stdout)
        r = self.perfgate("runs", db=url_for(SERVER, "no_such_database_here"))
        self.assertExit(r, EXIT_HARNESS)
        self.assertIn('database "no_such_database_here" does not exist', r.stderr)
        r = self.perfgate("runs", db=f"postgresql://u:{secret}@127.0.0.1:1/x?connect_timeout=2")
        self.assertExit(r, EXIT_HARNESS)
        self.assertIn("cannot connect to PostgreSQL", r.stderr)
        self.assertNotIn(secret, r.stderr)
        r = self.perfgate("run", suite, db=f"postgresq://u:{secret}@h/db")
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("not a PostgreSQL one", r.stderr)
        self.assertNotIn(secret, r.stderr)
        self.assertFalse(list(self.tmp.glob("postgresq*")), "no SQLite file named like the URL")
        # A password in the URL of a database that works is not stored with the run.
        psql(SERVER, f"ALTER ROLE perfgate_pw PASSWORD '{secret}'")
        psql(SERVER, f"GRANT ALL ON DATABASE {self.dbname} TO perfgate_pw; ALTER DATABASE {self.dbname} OWNER TO perfgate_pw")
        good = f"postgresql://perfgate_pw:{secret}@127.0.0.1:{port}/{self.dbname}"
        r = self.perfgate("run", suite, "-q", db=good)
        self.assertExit(r, EXIT_OK)
        argv = psql(self.url, "SELECT argv FROM runs")
        self.assertIn("perfgate_pw:***@", argv)
        self.assertNotIn(secret, argv)
        self.assertNotIn(secret, psql(self.url, "SELECT env FROM runs"))
        psql(SERVER, "ALTER ROLE perfgate_pw PASSWORD 'pw-for-tests-only'")


class PostgresServerDown(PerfgateTestCase):
    """A server that goes away mid-run (its own server: the shared one serves other tests)."""
    timeout_s = 180

    def test_server_stopped_mid_run_fails_cleanly_and_keeps_what_was_recorded(self):
        # Its own folder under /tmp: the server's user must be able to reach it.
        pg_dir = Path("/tmp") / f"perfgate-pg-down-{uuid.uuid4().hex[:8]}"
        env = dict(os.environ, PERFGATE_PG_DIR=str(pg_dir), PERFGATE_PG_PORT=str(40000 + os.getpid() % 9000))
        start = subprocess.run([str(POSTGRES_SH), "start"], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(start.returncode, 0, start.stderr)
        self.addCleanup(subprocess.run, [str(POSTGRES_SH), "stop"], env=env, capture_output=True, timeout=60)
        url = start.stdout.strip()
        suite = self.write_suite(f"""\
suite: down
defaults: {{repeats: 6, timeout: 30s}}
workloads:
  - name: w
    command: {self.command("steps.py", "--steps", "10", "--sleep", "0.1", "--marker", self.marker)}
""")
        bg = self.start_perfgate("run", suite, db=url)
        self.assertTrue(bg.wait_for_line(r"^\[2/6\] .* ok ", 30), bg.stderr())
        # Stopped fast, data kept (the server's files stay; only `postgres.sh stop` removes them).
        bin_dir = sorted(Path("/usr/lib/postgresql").glob("*/bin"))[-1]
        owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*owner, str(bin_dir / "pg_ctl"), "-D", str(pg_dir / "data"), "-m", "fast", "stop"],
                       check=True, capture_output=True, timeout=60)
        rc = bg.wait(90)
        self.assertEqual(rc, EXIT_HARNESS, bg.stderr())
        self.assertIn("results database failed", bg.stderr())
        self.assertIn("could not be restored after 3 attempts", bg.stderr())
        self.assertNoMarkedProcesses(grace_s=3)
        # Back up: the finished trials are there; the next perfgate on this host closes the run.
        subprocess.run([*owner, str(bin_dir / "pg_ctl"), "-D", str(pg_dir / "data"), "-l",
                        str(pg_dir / "server.log"), "-w", "start"], check=True, capture_output=True, timeout=60)
        ok = int(psql(url, "SELECT count(*) FROM trials WHERE status = 'ok'"))
        self.assertGreaterEqual(ok, 2)
        self.assertEqual(psql(url, "SELECT count(*) FROM trials WHERE status = 'ok' AND steps <> 10"), "0")
        r = self.perfgate("run", suite, "--set", "repeats=1", db=url)
        self.assertExit(r, EXIT_OK)
        self.assertIn("marked 1 abandoned run(s)", r.stderr)
        self.assertEqual(psql(url, "SELECT string_agg(status, ',' ORDER BY id) FROM runs"), "interrupted,completed")


if __name__ == "__main__":
    unittest.main()
