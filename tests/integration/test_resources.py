"""What the harness measures itself: wall time, CPU time and peak RSS of the whole process tree."""

import os
import subprocess
import unittest

from support import PerfgateTestCase, metric


class TreeAccounting(PerfgateTestCase):
    def test_peak_rss_and_cpu_cover_the_process_tree(self):
        # Two children at once, 150 MB resident and 0.5 s of CPU each.
        suite = self.write_suite(f"""\
suite: resources
defaults: {{repeats: 1, timeout: 60s}}
workloads:
  - name: tree
    command: {self.command("resources.py", "2", "150", "0.5")}
""")
        r = self.perfgate("run", suite)
        self.assertExit(r, 0)
        show = self.show_json()
        t = show["trials"][0]
        self.assertEqual(t["status"], "ok", t)
        self.assertGreaterEqual(t["cpu_s"], 0.95, "CPU time of the children is missing")
        self.assertLess(t["cpu_s"], 10)
        self.assertGreaterEqual(t["peak_rss_mb"], 300, "peak RSS should be the sum over the tree at its peak")
        self.assertLess(t["peak_rss_mb"], 600)
        c = show["configs"][0]
        self.assertEqual(metric(c, "peak_rss_mb")["median"], t["peak_rss_mb"])
        self.assertEqual(metric(c, "cpu_time_s")["median"], t["cpu_s"])
        self.assertGreaterEqual(metric(c, "wall_time_s")["median"], 0.6)

    def test_a_small_workload_is_not_charged_perfgates_memory(self):
        # The kernel's peak RSS of a process (wait4's ru_maxrss) includes what it
        # held before its exec: perfgate, or a copy of it. `sleep` alone, measured
        # here the same way, against the trial's peak RSS as perfgate reports it.
        alone = subprocess.Popen(["/bin/sleep", "0.3"])
        _, _, ru = os.wait4(alone.pid, 0)
        alone_mb = ru.ru_maxrss / 1024.0
        suite = self.write_suite("""\
suite: small
defaults: {repeats: 3, timeout: 60s}
workloads:
  - name: sleep
    command: [/bin/sleep, "0.3"]
""")
        self.assertExit(self.perfgate("run", suite), 0)
        for t in self.show_json()["trials"]:
            self.assertEqual(t["status"], "ok", t)
            self.assertGreater(t["peak_rss_mb"], 0, "sampled while it ran")
            self.assertLess(t["peak_rss_mb"], alone_mb + 1.0, f"sleep alone: {alone_mb:.1f} MB")

    def test_a_trial_too_short_to_sample_has_no_peak_rss_rather_than_zero(self):
        # `true` ends long before the first memory sample (50 ms), and its
        # kernel peak is perfgate's own (held before its exec): such a trial
        # records no peak_rss_mb and says why. A 0 there would read as a
        # measurement, and a 0 MB baseline leaves no percentage to judge a
        # later reading by at the gate. On a machine loaded enough to keep
        # `true` alive for 50 ms it is sampled: then a real, positive peak.
        suite = self.write_suite("""\
suite: short
defaults: {repeats: 4, timeout: 60s}
workloads:
  - name: true
    command: [/bin/true]
""")
        self.assertExit(self.perfgate("run", suite), 0)
        show = self.show_json()
        measured = 0
        for t in show["trials"]:
            self.assertEqual(t["status"], "ok", t)
            if t["peak_rss_mb"] is None:
                self.assertIn("peak RSS not measured: ended after", t["notes"], t)
                self.assertIn("before any memory sample", t["notes"], t)
            else:
                self.assertGreater(t["peak_rss_mb"], 0, t)
                self.assertNotIn("peak RSS not measured", t["notes"], t)
                measured += 1
        names = [m["metric"] for m in show["configs"][0]["metrics"]]
        if measured:
            self.assertEqual(metric(show["configs"][0], "peak_rss_mb")["n"], measured)
            self.assertGreater(metric(show["configs"][0], "peak_rss_mb")["min"], 0)
        else:
            self.assertNotIn("peak_rss_mb", names)
        self.assertIn("wall_time_s", names)


if __name__ == "__main__":
    unittest.main()
