"""Samplers through the real binary: fake npu-smi / nvidia-smi executables on
PATH print captured output (tests/integration/fakes), and the series they
feed must land in the store; a missing or broken tool is a note, never a
failed trial. The shipped profiles name the samplers of their machines.
"""

import os
import stat
from pathlib import Path

from support import SOURCE_DIR, PerfgateTestCase

FAKES = SOURCE_DIR / "tests" / "integration" / "fakes"


class Samplers(PerfgateTestCase):
    def suite(self, samplers=None, profile=None, seconds=1.5):
        lines = ["suite: sampled"]
        if profile:
            lines.append(f"profile: {profile}")
        defaults = "{repeats: 1, sample_interval: 200ms" + (f", samplers: {samplers}" if samplers else "") + "}"
        lines += [f"defaults: {defaults}", "workloads:", "  - name: w",
                  f"    command: {self.command('steps.py', '--steps', '15', '--sleep', str(seconds / 15))}"]
        return self.write_suite("\n".join(lines) + "\n")

    def env_with(self, *dirs, **extra):
        env = self.env(TMPDIR=str(self.tmp), **extra)
        env["PATH"] = ":".join([*map(str, dirs), "/usr/bin", "/bin"])
        return env

    def series(self, name):
        return self.query("SELECT s.step, s.t_s, s.value FROM samples s JOIN metrics m ON m.id = s.metric_id "
                          "WHERE m.name = ? ORDER BY s.rowid", (name,))

    def summary(self, name):
        rows = self.query("SELECT ts.n_total, ts.value, ts.max, ts.mean FROM trial_summaries ts "
                          "JOIN metrics m ON m.id = ts.metric_id WHERE m.name = ?", (name,))
        self.assertEqual(len(rows), 1, name)
        return rows[0]

    def trial_notes(self):
        ((status, notes),) = self.query("SELECT status, notes FROM trials")
        return status, notes

    def test_npu_smi_and_proc_series_are_stored(self):
        r = self.perfgate("run", self.suite("[proc, npu-smi]"), "-q", env=self.env_with(FAKES))
        self.assertExit(r, 0, "run")
        status, notes = self.trial_notes()
        self.assertEqual(status, "ok")
        self.assertNotIn("sampler", notes)
        for npu in (0, 1):
            hbm = self.series(f"device.{npu}.hbm_used_mb")
            self.assertGreaterEqual(len(hbm), 4, f"device.{npu}: about one sample per 200 ms of a 1.5 s trial")
            # The fake raises HBM use by 128 MB per call from the captured 20701 / 20687 MB.
            self.assertTrue(all(20000 < v < 23000 for _, _, v in hbm), hbm)
            self.assertEqual([s for s, _, _ in hbm], list(range(len(hbm))))
            times = [t for _, t, _ in hbm]
            self.assertEqual(times, sorted(times))
            n, value, peak, mean = self.summary(f"device.{npu}.hbm_used_mb")
            self.assertEqual(n, len(hbm))
            self.assertEqual(value, peak, "memory is summarised by its peak")
            self.assertEqual(peak, max(v for _, _, v in hbm))
        power = self.series("device.0.power_w")
        self.assertTrue(power and all(abs(v - 88.6) < 1e-9 for _, _, v in power), power)
        rss = self.series("host.rss_mb")
        self.assertGreaterEqual(len(rss), 4)
        # The first sample may catch the process between fork and exec.
        self.assertTrue(all(v > 1 for _, _, v in rss[1:]), f"the workload's python process has resident memory: {rss}")
        (unit,), = self.query("SELECT unit FROM metrics WHERE name = 'device.0.hbm_used_mb'")
        self.assertEqual(unit, "MB")
        # The fingerprint read the same tool: two 910B2C.
        ((fp,),) = self.query("SELECT fingerprint FROM runs")
        self.assertIn('"npus":["910B2C","910B2C"]', fp)
        show = self.perfgate("show", "latest", env=self.env_with(FAKES))
        self.assertIn("device.0.hbm_used_mb", show.stdout)

    def test_the_ascend_profile_samples_npu_smi(self):
        r = self.perfgate("run", self.suite(profile=str(SOURCE_DIR / "configs/profiles/ascend-910b.yaml")), "-q",
                          env=self.env_with(FAKES, PERFGATE_FAKE_NPU_SMI_INFO="npu_smi_info_910B3_8card.txt"))
        self.assertExit(r, 0, "run")
        # The profile's 8 slots: the trial ran on one card and watched only that one.
        (trial,) = self.show_json()["trials"]
        self.assertEqual(trial["device_kind"], "npu")
        self.assertEqual(len(trial["devices"]), 1, trial)
        dev = trial["devices"][0]
        self.assertTrue(self.series(f"device.{dev}.hbm_used_mb"), "the profile's npu-smi sampler ran")
        others = self.query("SELECT name FROM metrics WHERE name LIKE 'device.%' AND name NOT LIKE ?", (f"device.{dev}.%",))
        self.assertEqual(others, [], "series of cards the trial did not use")
        self.assertTrue(self.series("host.rss_mb"), "the profile's proc sampler ran")
        ((env,),) = self.query("SELECT env FROM runs")
        self.assertIn("TASK_QUEUE_ENABLE", env)

    def test_the_cuda_profile_samples_nvidia_smi(self):
        r = self.perfgate("run", self.suite(profile=str(SOURCE_DIR / "configs/profiles/cuda.yaml")), "-q",
                          env=self.env_with(FAKES))
        self.assertExit(r, 0, "run")
        names = [n for (n,) in self.query("SELECT name FROM metrics WHERE name LIKE 'device.0.%'")]
        self.assertIn("device.0.memory_used_mb", names)
        used = self.series("device.0.memory_used_mb")
        # The fake raises the captured 1533 MiB on every call.
        self.assertTrue(used and all(v >= 1533 for _, _, v in used), used)

    def test_a_missing_tool_is_a_note_not_a_failure(self):
        r = self.perfgate("run", self.suite("[proc, npu-smi]"), "-q", env=self.env_with())
        self.assertExit(r, 0, "the trial itself is fine")
        status, notes = self.trial_notes()
        self.assertEqual(status, "ok")
        self.assertIn("sampler npu-smi: npu-smi not found", notes)
        self.assertEqual(notes.count("npu-smi not found"), 1, "one warning per trial, not one per sample")
        self.assertFalse(self.query("SELECT name FROM metrics WHERE name LIKE 'device.%'"))
        self.assertTrue(self.series("host.rss_mb"), "the other samplers go on")

    def test_garbage_output_is_a_note_not_a_failure(self):
        bindir = self.tmp / "garbage-bin"
        bindir.mkdir()
        tool = bindir / "npu-smi"
        tool.write_text("#!/bin/sh\nprintf '\\377\\376 not a table at all\\n'\n")
        tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
        r = self.perfgate("run", self.suite("[npu-smi]"), "-q", env=self.env_with(bindir))
        self.assertExit(r, 0, "run")
        status, notes = self.trial_notes()
        self.assertEqual(status, "ok")
        self.assertIn("sampler npu-smi:", notes)
        self.assertIn("not a table at all", notes, "the note quotes what the tool printed, made valid UTF-8")
        self.assertFalse(self.query("SELECT name FROM metrics WHERE name LIKE 'device.%'"))

    def test_a_command_sampler_reads_numbers_with_a_regex(self):
        text = (f"suite: cmd\ndefaults: {{repeats: 1, sample_interval: 200ms}}\nworkloads:\n  - name: w\n"
                f"    command: {self.command('steps.py', '--steps', '10', '--sleep', '0.1')}\n"
                "    samplers:\n"
                "      - {kind: command, name: loadavg, command: [cat, /proc/loadavg],\n"
                "         regex: '^([0-9.]+) ([0-9.]+)', metrics: [host.load1, host.load5]}\n")
        r = self.perfgate("run", self.write_suite(text), "-q", env=self.env_with())
        self.assertExit(r, 0, "run")
        load1 = self.series("host.load1")
        self.assertGreaterEqual(len(load1), 3)
        self.assertTrue(all(v >= 0 for _, _, v in load1))
        self.assertTrue(self.series("host.load5"))
