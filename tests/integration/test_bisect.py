"""perfgate bisect against a real git repository made by the test.

The repository holds a small Python training loop, `train.py`, whose step is
a fixed amount of arithmetic (`build/work.txt` says how many iterations; the
"build" copies `work.txt` there, so a commit that is not built cannot run).
Its step time is modelled from that work with seeded noise (see TRAIN: a
busy CI machine's own timing noise is larger than the step), so a commit
that does 15 % more work per step reports a 15 % slower step whatever runs
beside it. 16 commits; the one at index 10 is the slow one; in one test the
one at index 5 does not build.

Checked: the culprit is named, its builds and trials are in the database as
runs of kind bisect with their commits, the user's checkout is untouched, a
second bisect builds and runs nothing, two bisects at once build no commit
twice, Ctrl-C keeps everything and the next
bisect resumes from it, --from-gate takes a red gate's ends and
configuration (and the dashboard's trend, in headless Chromium, marks the
culprit), and each bad input is an exit 2 with a message.
"""

import json
import os
import re
import signal
import subprocess
import unittest

from support import EXIT_HARNESS, EXIT_INPUT, EXIT_OK, PerfgateTestCase, flow_list, wait_until
from test_dashboard import CHROMIUM

TRAIN = r'''
import json, os, random, sys
work = int(open(sys.argv[1]).read())
# The step's time is modelled, not timed: on a shared 2-core CI machine the
# same 60,000 iterations took 4.5 to 7.8 ms of CPU from one run to the next
# (another build beside it), more than the step this test plants. So the step
# reports its work at 0.1 us per iteration, with seeded noise: 1 % per trial
# and 0.3 % per run (the gate's two levels), as the gate's tests do.
run = random.Random("run-" + os.environ.get("PERFGATE_RUN_ID", ""))
trial = random.Random(os.environ.get("PERFGATE_RUN_ID", "") + "-" + os.environ.get("PERFGATE_REPEAT", ""))
level = work * 1e-4 * (1 + 0.003 * run.gauss(0, 1)) * (1 + 0.01 * trial.gauss(0, 1))
print("PERFGATE " + json.dumps({"meta": {"units": {"step_time_ms": "ms"}, "better": {"step_time_ms": "lower"}}}))
x = 0
for step in range(6):
    for i in range(work):
        x = (x * 31 + i) % 1000003
    print("PERFGATE " + json.dumps({"step": step, "step_time_ms": level * (1 + 0.002 * trial.gauss(0, 1))}), flush=True)
'''

BUILD = "mkdir -p build && cp work.txt build/work.txt"


class RepoMaker:
    """Makes the test's git repository (a mixin of the test classes below)."""

    def git(self, *args, cwd=None):
        r = subprocess.run(["git", *args], cwd=str(cwd or self.repo), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.strip()

    def make_repo(self, slow_at=10, broken_at=None, commits=16, work=60000):
        """commits commits; from index slow_at on 15 % more work per step;
        the commit at broken_at has no work.txt (its build fails)."""
        self.repo = self.tmp / "repo"
        self.repo.mkdir()
        self.git("init", "-q", "-b", "main")
        self.git("config", "user.email", "t@example.com")
        self.git("config", "user.name", "perfgate test")
        (self.repo / "train.py").write_text(TRAIN)
        (self.repo / ".gitignore").write_text("build/\n")
        self.write_suite_into_repo()
        for i in range(commits):
            w = self.repo / "work.txt"
            if broken_at is not None and i == broken_at:
                if w.exists():
                    w.unlink()
            else:
                w.write_text(str(int(work * 1.15) if slow_at is not None and i >= slow_at else work))
            (self.repo / "notes.txt").write_text(f"change {i}\n")
            self.git("add", "-A")
            self.git("commit", "-q", "-m", f"change {i}" + (" (slower step)" if i == slow_at else ""))
        self.shas = self.git("log", "--reverse", "--format=%H").split()
        self.assertEqual(len(self.shas), commits)
        return self.repo / "suite.yaml"

    def write_suite_into_repo(self):
        # The suite lives with the code: {worktree} is the checkout for a
        # nightly run, and each commit's worktree under bisect.
        (self.repo / "suite.yaml").write_text(f"""\
suite: bisect-it
defaults: {{repeats: 3, warmup: {{steps: 1}}, timeout: 60s}}
workloads:
  - name: train
    command: {flow_list([self.python, "{worktree}/train.py", "{worktree}/build/work.txt", self.marker])}
""")


class BisectRepo(RepoMaker, PerfgateTestCase):
    # Step times are modelled (TRAIN), so nothing here is a timing effect; but its
    # six tests build and run many commits: 300 s ran out beside eight busy loops.
    timeout_s = 600

    def bisect(self, suite, *args, timeout=240):
        return self.perfgate("bisect", "--repo", self.repo, "--good", self.shas[0], "--bad", self.shas[-1],
                             "--build", BUILD, "--suite", suite, "--worktrees", self.tmp / "wt", *args,
                             timeout=timeout)

    def test_names_the_commit_that_made_the_step_15_percent_slower(self):
        suite = self.make_repo(slow_at=10)
        head_before = self.git("rev-parse", "HEAD")
        status_before = self.git("status", "--porcelain")
        r = self.bisect(suite, "--format", "json", "--markdown", self.tmp / "bisect.md")
        self.assertExit(r, EXIT_OK, "bisect")
        rep = json.loads(r.stdout)
        culprits = [f for f in rep["findings"] if f["kind"] == "culprit"]
        self.assertEqual([c["first"]["sha"] for c in culprits], [self.shas[10]], rep["findings"])
        c = culprits[0]
        self.assertEqual(c["against"]["sha"], self.shas[9])
        self.assertAlmostEqual(c["change"], 0.15, delta=0.06)
        self.assertLess(c["p"], 0.01)
        self.assertIn("slower step", c["first"]["subject"])
        self.assertLessEqual(rep["builds"]["run"], 4 + 3, "about log2(16) builds beside the two ends")
        # Builds and trials are in the database: runs of kind bisect with their commits.
        runs = self.query("SELECT id, git_commit, kind FROM runs")
        self.assertTrue(runs)
        self.assertTrue(all(k == "bisect" for _, _, k in runs), runs)
        measured = {sha for _, sha, _ in runs}
        self.assertIn(self.shas[10], measured)
        self.assertIn(self.shas[9], measured)
        self.assertLess(len(measured), 16, "not every commit was measured")
        trials = self.query("SELECT count(*) FROM trials WHERE status = 'ok'")[0][0]
        self.assertEqual(trials, rep["trials"]["run"])
        builds = self.query("SELECT git_commit, status, log_path FROM builds")
        self.assertEqual(len(builds), rep["builds"]["run"])
        self.assertTrue(all(s == "ok" and os.path.exists(log) for _, s, log in builds), builds)
        self.assertEqual(self.query("SELECT outcome FROM bisects"), [("culprit",)])
        # The user's checkout is untouched: same HEAD, clean, no build output in it.
        self.assertEqual(self.git("rev-parse", "HEAD"), head_before)
        self.assertEqual(self.git("status", "--porcelain"), status_before)
        self.assertFalse((self.repo / "build").exists())
        self.assertEqual(self.git("worktree", "list", "--porcelain").count("worktree "), 1 + len(builds))
        self.assertIn("culprit `" + self.shas[10][:10] + "`", (self.tmp / "bisect.md").read_text())
        # A second bisect over the same range builds and runs nothing.
        again = self.bisect(suite, "--format", "json")
        self.assertExit(again, EXIT_OK, "second bisect")
        rep2 = json.loads(again.stdout)
        self.assertEqual(rep2["builds"]["run"], 0)
        self.assertEqual(rep2["trials"]["run"], 0)
        self.assertEqual(rep2["trials"]["reused"], rep["trials"]["run"])
        self.assertEqual([f["first"]["sha"] for f in rep2["findings"] if f["kind"] == "culprit"], [self.shas[10]])
        # Bisect runs are no baseline and no point of the suite's history in
        # time; `history --bisect` reads them in commit order instead.
        self.assertExit(self.perfgate("history", "--suite", "bisect-it"), EXIT_INPUT, "history skips bisect runs")
        h = self.perfgate("history", "--suite", "bisect-it", "--bisect", rep["bisect"], "--metric", "step_time_ms",
                          "--format", "json")
        self.assertExit(h, EXIT_OK, "history --bisect")
        changes = json.loads(h.stdout)["series"][0]["change_points"]
        self.assertEqual([c["commit"] for c in changes], [self.shas[10]], changes)

    def test_a_commit_that_does_not_build_is_skipped_and_a_culprit_beside_it_is_a_range(self):
        suite = self.make_repo(slow_at=6, broken_at=5)
        r = self.bisect(suite, "--format", "json")
        self.assertIn(r.returncode, (EXIT_OK, 1), r.stderr)
        rep = json.loads(r.stdout)
        broken = rep["commits"][5]
        self.assertTrue(broken["skipped"], broken)
        self.assertEqual(broken["build"], "failed")
        self.assertTrue(os.path.exists(broken["build_log"]))
        self.assertIn("work.txt", broken["build_error"])
        # Commit 6 is the slow one, but its parent does not build: the honest answer is 5..6.
        self.assertEqual(r.returncode, 1, rep["findings"])
        ranges = [f for f in rep["findings"] if f["kind"] == "range"]
        self.assertEqual([(f["first"]["index"], f["last"]["index"]) for f in ranges], [(5, 6)], rep["findings"])
        self.assertEqual(self.query("SELECT attempts FROM builds WHERE status = 'failed'"), [(2,)])

    def test_ctrl_c_keeps_everything_and_the_next_bisect_resumes(self):
        suite = self.make_repo(slow_at=10)
        bg = self.start_perfgate("bisect", "--repo", self.repo, "--good", self.shas[0], "--bad", self.shas[-1],
                                 "--build", BUILD, "--suite", suite, "--worktrees", self.tmp / "wt", "--format", "json")
        # Past the ends, into the search: the third build.
        self.assertTrue(wait_until(lambda: bg.stderr().count("built commit") >= 3, 120), bg.stderr())
        bg.proc.send_signal(signal.SIGINT)
        self.assertEqual(bg.wait(60), EXIT_HARNESS, bg.stderr())
        self.assertIn("interrupted", bg.stdout())
        kept = self.query("SELECT count(*) FROM trials WHERE status = 'ok'")[0][0]
        self.assertGreater(kept, 0)
        self.assertEqual(self.query("SELECT outcome FROM bisects"), [("interrupted",)])
        self.assertNoMarkedProcesses(grace_s=5)
        r = self.bisect(suite, "--format", "json")
        self.assertExit(r, EXIT_OK, "resumed bisect")
        rep = json.loads(r.stdout)
        self.assertGreaterEqual(rep["trials"]["reused"], kept - 5, "what ran before Ctrl-C is read back")
        self.assertGreaterEqual(rep["builds"]["cached"], 2)
        self.assertEqual([f["first"]["sha"] for f in rep["findings"] if f["kind"] == "culprit"], [self.shas[10]])

    def test_two_bisects_at_once_build_each_commit_once(self):
        # Two engineers (or two CI jobs) chase the same red night into one
        # database and one worktrees folder: whichever gets a commit's lock
        # builds it, the other waits and takes the build from the cache. The
        # test holds the good end's lock until both say they wait for it, so
        # they meet there however busy the machine is.
        import fcntl
        suite = self.make_repo(slow_at=10)
        wt = self.tmp / "wt"
        wt.mkdir()
        held = open(wt / (self.shas[0][:12] + ".lock"), "a+")
        fcntl.flock(held, fcntl.LOCK_EX)
        self.addCleanup(held.close)
        argv = ["bisect", "--repo", self.repo, "--good", self.shas[0], "--bad", self.shas[-1],
                "--build", BUILD, "--suite", suite, "--worktrees", wt, "--format", "json"]
        both = [self.start_perfgate(*argv), self.start_perfgate(*argv)]
        waiting = r"waiting for another bisect building " + self.shas[0][:10]
        self.assertTrue(wait_until(lambda: all(re.search(waiting, bg.stderr()) for bg in both), 120),
                        [bg.stderr() for bg in both])
        held.close()
        for bg in both:
            self.assertEqual(bg.wait(240), EXIT_OK, bg.stderr())
        reps = [json.loads(bg.stdout()) for bg in both]
        for rep in reps:
            self.assertEqual([f["first"]["sha"] for f in rep["findings"] if f["kind"] == "culprit"],
                             [self.shas[10]], rep["findings"])
        builds = self.query("SELECT git_commit, status, attempts FROM builds")
        self.assertTrue(all(st == "ok" and n == 1 for _, st, n in builds), builds)
        self.assertEqual(sum(r["builds"]["run"] for r in reps), len(builds),
                         "no commit built by both: " + " | ".join(bg.stderr() for bg in both))
        self.assertGreaterEqual(sum(r["builds"]["cached"] for r in reps), 1, "the good end, at least, from the cache")

    def test_from_a_red_gate_to_its_culprit(self):
        suite = self.make_repo(slow_at=10)
        # Nightly runs in the checkout itself: three at the good commit, one at the bad.
        def nightly(sha, *args):
            self.git("checkout", "-q", sha)
            subprocess.run(["sh", "-c", BUILD], cwd=str(self.repo), check=True)
            r = self.perfgate("run", suite, "--set", "repeats=5", "-q", *args)
            self.assertExit(r, EXIT_OK, "nightly run")
        for _ in range(3):
            nightly(self.shas[0], "--tag", "nightly")
        nightly(self.shas[-1])
        self.git("checkout", "-q", "main")
        g = self.perfgate("gate", "--baseline", "tag:nightly", "--metric", "step_time_ms", "--no-rerun")
        self.assertExit(g, 1, "the gate sees the regression")
        cand = self.runs_json()[0]["id"]
        r = self.perfgate("bisect", "--from-gate", cand, "--repo", self.repo, "--build", BUILD,
                          "--worktrees", self.tmp / "wt", "--format", "json", timeout=240)
        self.assertExit(r, EXIT_OK, "bisect --from-gate")
        self.assertIn("from gate", r.stderr)
        rep = json.loads(r.stdout)
        self.assertEqual(rep["good"]["sha"], self.shas[0])
        self.assertEqual(rep["bad"]["sha"], self.shas[-1])
        self.assertEqual(rep["metric"], "step_time_ms")
        self.assertEqual([f["first"]["sha"] for f in rep["findings"] if f["kind"] == "culprit"], [self.shas[10]])
        # The dashboard's trend marks the culprit at the nightly that regressed.
        out = self.tmp / "dash"
        self.assertExit(self.perfgate("dashboard", "--out", out), EXIT_OK, "dashboard")
        url = (out / "index.html").as_uri() + "#/trend/bisect-it?metric=step_time_ms"
        chrome = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                 f"--user-data-dir={self.tmp / 'chrome'}", "--enable-logging=stderr", "--v=0",
                                 "--virtual-time-budget=10000", "--dump-dom", url],
                                capture_output=True, text=True, errors="replace", timeout=90)
        self.assertEqual(chrome.returncode, 0, chrome.stderr[-2000:])
        errors = [l for l in chrome.stderr.splitlines() if "Uncaught" in l or ("CONSOLE" in l and "error" in l.lower())]
        self.assertEqual(errors, [])
        self.assertIn("bisected culprits", chrome.stdout)
        self.assertIn(self.shas[10][:10], chrome.stdout)
        self.assertIn("1 bisected culprit", chrome.stdout)


class BisectBadInput(RepoMaker, PerfgateTestCase):
    def setUp(self):
        super().setUp()
        self.suite = self.make_repo(slow_at=None, commits=4, work=2000)

    def bisect(self, *args, good=None, bad=None, build=BUILD, suite=None):
        return self.perfgate("bisect", "--repo", self.repo, "--good", good or self.shas[0], "--bad",
                             bad or self.shas[-1], "--build", build, "--suite", suite or self.suite,
                             "--worktrees", self.tmp / "wt", *args)

    def test_refs_that_do_not_exist(self):
        r = self.bisect(good="no-such-ref")
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("--good 'no-such-ref' is not a commit", r.stderr)

    def test_good_not_an_ancestor_of_bad(self):
        r = self.bisect(good=self.shas[-1], bad=self.shas[0])
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("is not an ancestor of --bad", r.stderr)

    def test_a_build_that_fails_on_both_ends(self):
        r = self.bisect(build="exit 7")
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("the good end", r.stderr)
        self.assertIn("does not build", r.stderr)
        self.assertIn("exited with code 7", r.stderr)

    def test_a_subset_that_selects_nothing(self):
        r = self.bisect("--only", "workload=nope")
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("--only", r.stderr)

    def test_no_regression_between_the_ends(self):
        # With a practical threshold the ends' test stops once the change is
        # surely below it (without one it reads 40 runs a side first: 400 trials).
        r = self.bisect("--format", "json", "--threshold-pct", "5")
        self.assertExit(r, EXIT_OK, "nothing to find is not an error")
        rep = json.loads(r.stdout)
        self.assertEqual(rep["outcome"], "no-regression")
        self.assertEqual(rep["builds"]["run"], 2)
        (f,) = rep["findings"]
        self.assertIn("below the 5.00 % threshold", f["why"])
        self.assertLess(rep["trials"]["run"], 2 * 40 * 5, "stopped before the most runs an end may get")
        t = self.bisect("-q", "--threshold-pct", "5")
        self.assertIn("no regression between the ends", t.stdout)
        self.assertEqual(json.loads(self.bisect("--format", "json", "--threshold-pct", "5").stdout)["trials"]["run"], 0)

    def test_a_build_command_with_an_unknown_placeholder(self):
        r = self.bisect(build="make -C {worktre}")
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("{commit}, {worktree}", r.stderr)


if __name__ == "__main__":
    unittest.main()
