"""Workloads that cannot be changed, read through log presets, regexes and
Google Benchmark JSON; results produced elsewhere brought in with `import`."""

import json
import os
import statistics
import subprocess
from pathlib import Path

from support import (EXIT_INPUT, EXIT_OK, EXIT_REGRESSION, PERFGATE_BIN, PerfgateTestCase, fact, flow_list, metric,
                     trials_by_status, yq)

GBENCH_DEMO = os.environ.get("PERFGATE_GBENCH_DEMO") or str(Path(PERFGATE_BIN).resolve().parent / "gbench_demo")


def names(config):
    return {m["metric"] for m in config["metrics"]}


class LogPresets(PerfgateTestCase):
    def run_log(self, fmt, metrics, args=(), repeats=2, params=""):
        suite = self.write_suite(f"""\
suite: logs
defaults: {{repeats: {repeats}, warmup: {{steps: 2}}, timeout: 1m}}
workloads:
  - name: {fmt}
    command: {self.command("print_log.py", "--format", fmt, *args)}
    metrics: {metrics}
{params}""")
        r = self.perfgate("run", suite, "-q")
        self.assertExit(r, EXIT_OK, "perfgate run")
        return self.show_json()

    def test_megatron_iteration_lines_on_stdout(self):
        show = self.run_log("megatron", "{parser: megatron, primary: step_time_ms}",
                            ["--steps", "12", "--step-ms", "20", "--batch", "64", "--garbage", "--bad-line", "5"])
        c = show["configs"][0]
        self.assertEqual(len(trials_by_status(show)["ok"]), 2)
        step = metric(c, "step_time_ms")["median"]
        self.assertAlmostEqual(step, 20, delta=1.0)  # what was printed, 1 % noise
        # throughput = global batch size over the step time
        self.assertAlmostEqual(metric(c, "throughput")["median"], 64 / (step / 1000), delta=64 / 0.020 * 0.05)
        self.assertIn("loss", names(c))
        self.assertIn("tflops_per_gpu", names(c))
        self.assertEqual(metric(c, "mem_max_allocated_mb")["median"], 2100.0)  # the larger of two ranks
        # 12 iteration lines; the warm-up took 2 of each series
        rows = self.query("SELECT COUNT(*) FROM samples s JOIN metrics m ON m.id = s.metric_id "
                          "WHERE m.name = 'step_time_ms'")
        self.assertEqual(rows[0][0], 24)
        trial = show["trials"][0]
        self.assertIn("1 log line(s) recognised but unreadable", trial["notes"])
        self.assertIn("stdout line", trial["notes"])
        self.assertEqual(trial["malformed_lines"], 1)

    def test_megatron_through_python_logging_on_stderr(self):
        show = self.run_log("megatron", "{parser: megatron}", ["--steps", "6", "--step-ms", "5", "--to", "stderr"],
                            repeats=1)
        c = show["configs"][0]
        self.assertAlmostEqual(metric(c, "step_time_ms")["median"], 5, delta=0.5)

    def test_megatron_log_file_named_by_the_suite(self):
        show = self.run_log("megatron", '{parser: megatron, file: "{trial_dir}/train.log"}',
                            ["--steps", "6", "--step-ms", "5", "--to", "{trial_dir}/train.log"], repeats=1)
        c = show["configs"][0]
        self.assertAlmostEqual(metric(c, "step_time_ms")["median"], 5, delta=0.5)
        self.assertEqual(metric(c, "step_time_ms")["n"], 1)

    def test_mindspore_monitors_with_batch_size_from_the_matrix(self):
        show = self.run_log("mindspore", '{parser: mindspore, batch_size: "{batch}"}',
                            ["--steps", "16", "--step-ms", "10", "--bad-line", "2"], repeats=1,
                            params="    matrix: {batch: [32]}")
        c = show["configs"][0]
        step = metric(c, "step_time_ms")["median"]
        self.assertAlmostEqual(step, 10, delta=1.0)
        self.assertAlmostEqual(metric(c, "throughput")["median"], 32 / (step / 1000), delta=32 / 0.010 * 0.1)
        self.assertIn("epoch_time_ms", names(c))
        self.assertIn("loss", names(c))
        self.assertIn("recognised but unreadable", show["trials"][0]["notes"])

    def test_modelzoo_and_ais_bench_summaries(self):
        show = self.run_log("modelzoo", "{parser: modelzoo}", ["--steps", "5", "--step-ms", "4", "--batch", "256"],
                            repeats=1)
        c = show["configs"][0]
        self.assertAlmostEqual(metric(c, "step_time_ms")["median"], 4, delta=0.4)
        self.assertAlmostEqual(metric(c, "throughput")["median"], 256 / 0.004, delta=256 / 0.004 * 0.1)
        self.assertEqual(fact(c, "batch_size"), 256)  # a setting the script echoes, kept apart from measurements

        show = self.run_log("ais_bench", "{parser: ais_bench, primary: npu_compute_time_ms}",
                            ["--steps", "20", "--step-ms", "3", "--batch", "8"], repeats=1)
        c = show["configs"][0]
        self.assertAlmostEqual(metric(c, "npu_compute_time_ms")["median"], 3, delta=0.3)
        self.assertGreaterEqual(metric(c, "npu_compute_time_p99_ms")["median"],
                                metric(c, "npu_compute_time_ms")["median"])
        self.assertAlmostEqual(metric(c, "throughput")["median"], 8000 / 3, delta=8000 / 3 * 0.1)
        self.assertIn("h2d_latency_ms", names(c))

    def test_regex_patterns_from_the_suite(self):
        metrics = """
      parser: regex
      primary: step_time_ms
      patterns:
        - regex: 'step=(?<step>\\d+) time=(?<step_time_ms>[0-9.]+)ms mem=(?<mem_mb>\\d+)MB'
          units: {mem_mb: MB}
        - {regex: '^final accuracy: (?<accuracy>[0-9.]+)', record: summary, better: {accuracy: higher}}"""
        show = self.run_log("custom", metrics, ["--steps", "8", "--step-ms", "5", "--bad-line", "3"], repeats=1)
        c = show["configs"][0]
        self.assertAlmostEqual(metric(c, "step_time_ms")["median"], 5, delta=0.5)
        self.assertEqual(metric(c, "accuracy")["median"], 0.875)
        self.assertEqual(metric(c, "mem_mb")["unit"], "MB")
        self.assertEqual(show["trials"][0]["malformed_lines"], 0)  # "time=fast" does not match the pattern at all

    def test_a_log_no_parser_reads_says_so(self):
        show = self.run_log("custom", "{parser: megatron}", ["--steps", "3", "--step-ms", "1"], repeats=1)
        self.assertIn("nothing in its output was read by parser megatron", show["trials"][0]["notes"])


class LogSuiteErrors(PerfgateTestCase):
    def check_error(self, metrics_yaml, *needles):
        suite = self.write_suite(f"""\
suite: bad
workloads:
  - name: w
    command: ["true"]
    metrics: {metrics_yaml}
""")
        r = self.perfgate("run", suite)
        self.assertExit(r, EXIT_INPUT)
        for n in needles:
            self.assertIn(n, r.stderr)
        self.assertFalse(self.db.exists() and self.runs_json(), "nothing is recorded for a suite that does not load")

    def test_bad_parser_settings_name_file_line_and_key(self):
        self.check_error("{parser: megatorn}", "suite.yaml:5", "unknown metrics parser 'megatorn'", "did you mean 'megatron'")
        self.check_error("{parser: regex}", "suite.yaml:5", "parser regex needs 'patterns'")
        self.check_error("{parser: regex, patterns: ['step (?<step>\\d+)']}", "suite.yaml:5", "names no metric")
        self.check_error("{parser: regex, patterns: ['(?<x>[0-9)']}", "suite.yaml:5", "does not compile")
        self.check_error("{parser: megatron, batch_size: 8}", "'batch_size' is for parser mindspore")
        self.check_error("{parser: megatron, file: '{nope}/x.log'}", "unknown placeholder '{nope}'")


class GoogleBenchmark(PerfgateTestCase):
    measures_time = True
    alone = True
    def setUp(self):
        super().setUp()
        self.assertTrue(os.access(GBENCH_DEMO, os.X_OK), f"gbench_demo not built at {GBENCH_DEMO}")

    def gbench_suite(self, slowdown="1", tag=""):
        return self.write_suite(f"""\
suite: micro
defaults: {{repeats: 1, timeout: 2m}}
workloads:
  - name: demo
    command: {flow_list([GBENCH_DEMO, "--benchmark_repetitions=5", "--benchmark_min_time=0.01"])}
    env: {{DEMO_SLOWDOWN: {yq(slowdown)}}}
    metrics: {{parser: gbench}}
""", name=f"micro{tag}.yaml")

    def test_a_real_benchmark_binary_end_to_end(self):
        r = self.perfgate("run", self.gbench_suite(), "-q")
        self.assertExit(r, EXIT_OK)
        show = self.show_json()
        c = show["configs"][0]
        times = [m for m in names(c) if m.endswith(".real_time_ns") or m.endswith(".real_time_us")]
        self.assertGreaterEqual(len(times), 3, names(c))
        # Each repetition is one sample; aggregates are not counted again.
        rows = self.query("SELECT m.name, COUNT(*) FROM samples s JOIN metrics m ON m.id = s.metric_id "
                          "WHERE m.name LIKE '%.real_time_%' GROUP BY m.name")
        self.assertTrue(rows)
        for name, n in rows:
            self.assertEqual(n, 5, name)
        self.assertTrue(any(m.endswith(".items_per_second") for m in names(c)))
        self.assertTrue(any(m.endswith(".widgets") for m in names(c)), names(c))
        log_dir = Path(show["trials"][0]["log_dir"])
        self.assertTrue((log_dir / "gbench.json").is_file(), "the harness asked for --benchmark_out in the trial dir")

    def test_a_slower_benchmark_fails_the_gate(self):
        # 7 trials a side: the smallest exact Mann-Whitney p (2/3432) survives the
        # FDR of 0.01 over the four benchmarks gated. Gated on each benchmark's CPU
        # time: the two runs are measured one after the other, and beside eight busy
        # loops the share of a core a run gets moves between runs (the unchanged
        # BM_vector_sum/1024 read as a wall-time regression once); the work a
        # benchmark does per iteration does not. (Same-run A/B removes the rest.)
        self.assertExit(self.perfgate("run", self.gbench_suite("1"), "-q", "--tag", "base",
                                      "--set", "repeats=7"), EXIT_OK)
        self.assertExit(self.perfgate("run", self.gbench_suite("4", tag="2"), "-q", "--tag", "cand",
                                      "--set", "repeats=7"), EXIT_OK)
        r = self.perfgate("gate", "--run", "latest:cand", "--baseline", "latest:base", "--metric", "*.cpu_time_*",
                          "--format", "json")
        self.assertExit(r, EXIT_REGRESSION, "the slowed-down benchmark must fail the gate")
        verdicts = {c["metric"]: c["verdict"] for c in json.loads(r.stdout)["comparisons"]}
        self.assertEqual(verdicts["BM_spin.cpu_time_ns"], "regression")
        self.assertNotEqual(verdicts["BM_vector_sum/1024.cpu_time_ns"], "regression")


class GbenchFiles:
    """Google Benchmark JSON files from gbench_demo (a mixin of the test classes below)."""

    def gbench_json(self, name, slowdown="1"):
        out = self.tmp / name
        env = self.env(DEMO_SLOWDOWN=slowdown)
        subprocess.run([GBENCH_DEMO, "--benchmark_repetitions=3", "--benchmark_min_time=0.01",
                        f"--benchmark_out={out}", "--benchmark_out_format=json"], env=env, check=True,
                       capture_output=True, timeout=60)
        return out


class Import(GbenchFiles, PerfgateTestCase):

    def test_import_gbench_files_as_trials_of_one_configuration(self):
        files = [self.gbench_json(f"b{i}.json") for i in range(2)]
        r = self.perfgate("import", "--format", "gbench", *files, "--suite", "micro", "--config", "impl=scalar",
                          "--tag", "imported", "--commit", "abc123")
        self.assertExit(r, EXIT_OK)
        show = self.show_json()
        self.assertEqual(show["run"]["suite"], "micro")
        self.assertEqual(show["run"]["git_commit"], "abc123")
        self.assertIn("imported", show["run"]["tags"])
        self.assertEqual(len(show["configs"]), 1)
        self.assertEqual(show["configs"][0]["params"], {"impl": "scalar"})
        self.assertEqual(len(trials_by_status(show)["ok"]), 2)

    def test_import_jsonl(self):
        f = self.tmp / "m.jsonl"
        f.write_text("".join(json.dumps({"step": i, "step_time_ms": 10 + i % 2}) + "\n" for i in range(10))
                     + '{"summary": {"final_loss": 1.5}}\nnot json\n')
        r = self.perfgate("import", "--format", "jsonl", f, "--suite", "external", "--workload", "trainer")
        self.assertExit(r, EXIT_OK)
        c = self.show_json()["configs"][0]
        self.assertEqual(c["workload"], "trainer")
        self.assertEqual(metric(c, "step_time_ms")["median"], 10.5)
        self.assertEqual(metric(c, "final_loss")["median"], 1.5)

    def test_import_refuses_missing_files_before_recording_anything(self):
        good = self.gbench_json("ok.json")
        r = self.perfgate("import", "--format", "gbench", good, self.tmp / "missing.json", "--suite", "micro")
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("missing.json: no such file", r.stderr)
        self.assertEqual(self.runs_json() if self.db.exists() else [], [])
        r = self.perfgate("import", "--format", "csv", good, "--suite", "micro")
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("gbench", r.stderr)

    def test_import_of_an_unreadable_file_is_an_input_error_with_the_reason(self):
        bad = self.tmp / "bad.json"
        bad.write_text('{"benchmarks": [')
        r = self.perfgate("import", "--format", "gbench", bad, "--suite", "micro")
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("bad.json", r.stderr + r.stdout)


class ImportGate(GbenchFiles, PerfgateTestCase):
    """A slowdown between imported files: an effect of timing."""
    measures_time = True

    def test_gate_between_imported_runs(self):
        # The files are made in alternation, a baseline file then a candidate one, so a
        # machine whose load changes meanwhile changes both sides alike (made one side
        # after the other beside busy loops, a 4x slowdown once read as +185.7 %, p 0.052).
        base, cand = [], []
        for i in range(6):
            base.append(self.gbench_json(f"base{i}.json"))
            cand.append(self.gbench_json(f"cand{i}.json", slowdown="4"))
        self.assertExit(self.perfgate("import", "--format", "gbench", *base, "--suite", "micro", "--tag", "base"), EXIT_OK)
        self.assertExit(self.perfgate("import", "--format", "gbench", *cand, "--suite", "micro", "--tag", "cand"), EXIT_OK)
        r = self.perfgate("gate", "--run", "latest:cand", "--baseline", "latest:base")
        self.assertExit(r, EXIT_REGRESSION)
