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


if __name__ == "__main__":
    unittest.main()
