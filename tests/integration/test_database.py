"""The results database: locking, foreign files, schema versions."""

import hashlib
import json
import sqlite3
import time
import unittest
from pathlib import Path

from support import EXIT_HARNESS, EXIT_INPUT, HERE, PerfgateTestCase


def digest(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


class DatabaseLocking(PerfgateTestCase):
    def quick_suite(self, touch=None):
        args = ["--steps", "3"] + (["--touch", str(touch)] if touch else [])
        return self.write_suite(f"""\
suite: quick
defaults: {{repeats: 2, timeout: 20s}}
workloads:
  - name: quick
    command: {self.command("steps.py", *args)}
""")

    def test_locked_database(self):
        suite = self.quick_suite()
        self.assertExit(self.perfgate("run", suite), 0)
        con = sqlite3.connect(self.db, isolation_level=None, timeout=0)
        self.addCleanup(con.close)
        self.assertEqual(con.execute("PRAGMA journal_mode").fetchone()[0], "wal")
        self.assertEqual(con.execute("PRAGMA application_id").fetchone()[0], 0x50474154)
        before = con.execute("SELECT id, status FROM runs").fetchall()
        trials_before = con.execute("SELECT id, run_id, status, steps FROM trials ORDER BY id").fetchall()
        self.assertEqual(before, [(1, "completed")])

        con.execute("BEGIN EXCLUSIVE")
        touched = self.tmp / "ran-while-locked"
        locked_suite = self.quick_suite(touch=touched)
        t0 = time.monotonic()
        r = self.perfgate("--db-timeout", "1s", "run", locked_suite, timeout=60)
        took = time.monotonic() - t0
        self.assertExit(r, EXIT_HARNESS)
        self.assertIn("locked", r.stderr)
        self.assertGreaterEqual(took, 0.9, "perfgate should wait --db-timeout before giving up")
        self.assertLess(took, 6.0, "perfgate waited far longer than --db-timeout 1s")
        self.assertFalse(touched.exists(), "a workload ran although nothing could be recorded")

        # Readers are not blocked by a writer in WAL mode: reports still work.
        r = self.perfgate("--db-timeout", "1s", "runs")
        self.assertExit(r, 0, "`runs` while another process holds the write lock")

        con.execute("ROLLBACK")
        r = self.perfgate("--db-timeout", "1s", "run", locked_suite)
        self.assertExit(r, 0)
        self.assertTrue(touched.exists())
        runs = self.runs_json()
        self.assertEqual([(x["id"], x["status"]) for x in runs], [(2, "completed"), (1, "completed")])
        self.assertEqual(con.execute("SELECT id, run_id, status, steps FROM trials WHERE run_id = 1 ORDER BY id").fetchall(),
                         trials_before)
        self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")


    def test_database_locked_in_the_middle_of_a_run(self):
        # Trials of ~1 s each; the lock is taken while the second one runs and held
        # well past --db-timeout, so recording that trial must fail.
        suite = self.write_suite(f"""\
suite: slow
defaults: {{repeats: 3, timeout: 20s, kill_grace: 0.5s}}
workloads:
  - name: slow
    command: {self.command("steps.py", "--steps", "8", "--sleep", "0.1", "--marker", self.marker)}
""")
        bg = self.start_perfgate("--db-timeout", "1s", "run", suite)
        self.assertTrue(bg.wait_for_line(r"^\[1/3\] .* ok ", 30), bg.stderr())
        con = sqlite3.connect(self.db, isolation_level=None, timeout=10)
        self.addCleanup(con.close)
        con.execute("BEGIN EXCLUSIVE")
        try:
            rc = bg.wait(30)
        finally:
            con.execute("ROLLBACK")
        self.assertEqual(rc, EXIT_HARNESS, bg.stderr())
        self.assertIn("locked", bg.stderr())
        self.assertNotIn("[3/3]", bg.stderr(), "perfgate went on running trials it could not record")
        self.assertNoMarkedProcesses()
        self.assertEqual(con.execute("PRAGMA integrity_check").fetchone()[0], "ok")
        self.assertEqual(con.execute("SELECT status FROM trials WHERE seq = 0").fetchall(), [("ok",)])

        # Once the lock is gone, the next run leaves nothing "running" behind.
        quick = self.quick_suite()
        self.assertExit(self.perfgate("run", quick), 0)
        runs = {x["id"]: x for x in self.runs_json()}
        self.assertEqual(runs[1]["status"], "interrupted")
        self.assertEqual(runs[2]["status"], "completed")
        self.assertEqual(con.execute("SELECT count(*) FROM trials WHERE status = 'running'").fetchone()[0], 0)


class ForeignFiles(PerfgateTestCase):
    def quick_suite(self):
        self.touched = self.tmp / "workload-ran"
        return self.write_suite(f"""\
suite: quick
defaults: {{repeats: 1}}
workloads:
  - name: quick
    command: {self.command("steps.py", "--steps", "1", "--touch", str(self.touched))}
""")

    def assertRefused(self, db, words, code=EXIT_HARNESS):
        suite = self.quick_suite()
        before = digest(db)
        siblings = sorted(p.name for p in db.parent.iterdir())
        for args in (["run", suite], ["runs"], ["show", "latest"]):
            with self.subTest(args=args[0]):
                r = self.perfgate(*args, db=db)
                self.assertExit(r, code)
                for w in words:
                    self.assertIn(w, r.stderr)
        self.assertEqual(digest(db), before, "perfgate changed a file that is not its database")
        self.assertEqual(sorted(p.name for p in db.parent.iterdir()), siblings, "perfgate created files")
        self.assertFalse(self.touched.exists(), "a workload ran")

    def test_text_file(self):
        db = self.tmp / "notes.txt"
        db.write_text("my notes\n" * 500)
        self.assertRefused(db, ["not a perfgate database"])

    def test_tiny_text_file(self):
        db = self.tmp / "tiny.db"
        db.write_bytes(b"hi\n")
        self.assertRefused(db, ["not a perfgate database"])

    def test_sqlite_database_of_another_application(self):
        db = self.tmp / "other.sqlite"
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE foo(id INTEGER PRIMARY KEY, name TEXT)")
        con.executemany("INSERT INTO foo(name) VALUES (?)", [("a",), ("b",)])
        con.commit()
        con.close()
        self.assertRefused(db, ["another application", "foo"])
        con = sqlite3.connect(db)
        try:
            self.assertEqual(con.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall(), [("foo",)])
            self.assertEqual(con.execute("PRAGMA journal_mode").fetchone()[0], "delete")
            self.assertEqual(con.execute("PRAGMA user_version").fetchone()[0], 0)
        finally:
            con.close()

    def test_directory(self):
        suite = self.quick_suite()
        d = self.tmp / "a-directory"
        d.mkdir()
        r = self.perfgate("run", suite, db=d)
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("directory", r.stderr)
        self.assertEqual(list(d.iterdir()), [])
        self.assertFalse(self.touched.exists())

    def test_newer_schema_is_refused(self):
        suite = self.quick_suite()
        self.assertExit(self.perfgate("run", suite), 0)
        con = sqlite3.connect(self.db)
        con.execute("PRAGMA user_version = 99")
        con.commit()
        con.close()
        r = self.perfgate("run", suite)
        self.assertExit(r, EXIT_HARNESS)
        self.assertIn("newer", r.stderr)
        con = sqlite3.connect(self.db)
        try:
            self.assertEqual(con.execute("PRAGMA user_version").fetchone()[0], 99)
            self.assertEqual(con.execute("SELECT count(*) FROM runs").fetchone()[0], 1)
        finally:
            con.close()


class ConcurrentRuns(PerfgateTestCase):
    def test_two_perfgates_share_one_database(self):
        suites = []
        for name in ("left", "right"):
            suites.append(self.write_suite(f"""\
suite: {name}
defaults: {{repeats: 4, timeout: 20s}}
workloads:
  - name: {name}
    command: {self.command("steps.py", "--steps", "20", "--sleep", "0.02", "--marker", self.marker)}
""", f"{name}.yaml"))
        # The database exists first, so the two do not race to create the schema.
        self.assertExit(self.perfgate("run", suites[0], "--set", "repeats=1"), 0)
        a = self.start_perfgate("run", suites[0])
        b = self.start_perfgate("run", suites[1])
        self.assertEqual(a.wait(60), 0, a.stderr())
        self.assertEqual(b.wait(60), 0, b.stderr())
        # Neither took the other's live run for an abandoned one.
        self.assertNotIn("abandoned", a.stderr() + b.stderr())
        runs = self.runs_json()
        self.assertEqual(sorted((x["suite"], x["status"], x["trials_ok"]) for x in runs),
                         [("left", "completed", 1), ("left", "completed", 4), ("right", "completed", 4)])
        for x in runs:
            show = self.show_json(str(x["id"]))
            self.assertTrue(all(t["status"] == "ok" and t["steps"] == 20 for t in show["trials"]), show["trials"])
        self.assertEqual(self.query("PRAGMA integrity_check")[0][0], "ok")


class ArtifactsPerDatabase(PerfgateTestCase):
    def test_two_databases_in_one_folder_keep_their_logs_apart(self):
        # Both databases' first run is run 1; their logs sit side by side in one folder.
        dbs = {name: self.tmp / f"{name}.db" for name in ("ng", "sw")}
        for name, db in dbs.items():
            suite = self.write_suite(f"""\
suite: {name}
defaults: {{repeats: 1, timeout: 20s}}
workloads:
  - name: w
    command: {self.command("echo_params.py", "25", name)}
""", f"{name}.yaml")
            self.assertExit(self.perfgate("run", suite, db=db), 0)
        dirs = {}
        for name, db in dbs.items():
            show = self.show_json("latest", db=db)
            self.assertEqual(show["run"]["id"], 1)
            dirs[name] = Path(show["trials"][0]["log_dir"])
        self.assertNotEqual(dirs["ng"], dirs["sw"])
        for name, d in dirs.items():
            # Each run's log folder still holds what its own trial saw.
            seen = json.loads((d / "seen.json").read_text())
            self.assertEqual(seen["argv"], ["25", name])
            self.assertEqual(d.parent.parent.parent, self.tmp / "runs")
            store_id = self.query("SELECT value FROM store_info WHERE key = 'id'", db=dbs[name])[0][0]
            self.assertEqual(d.parent, self.tmp / "runs" / store_id / "1")


if __name__ == "__main__":
    unittest.main()
