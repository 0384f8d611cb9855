"""The suites that ship in suites/, run as files through `perfgate run`.

test_sim.py asserts each perfgate-sim effect on suites written for the test
(one rank, more trials); here the shipped files themselves must run, store
every trial, and show their effect's direction from the stored trials, with
fewer repeats (`--set repeats=N`) to keep the test suite short. Margins are
far inside the effects measured in docs/perfgate-sim.md.
"""

import csv
import io
import json
import statistics
import unittest

from support import SOURCE_DIR, PerfgateTestCase, fact, metric, trials_by_status


def config(show, **params):
    found = [c for c in show["configs"] if all(str(c["params"].get(k)) == str(v) for k, v in params.items())]
    if len(found) != 1:
        raise AssertionError(f"{len(found)} configurations with {params} in {[c['params'] for c in show['configs']]}")
    return found[0]


def median_of(c, name):
    return metric(c, name)["median"]


class ShippedSuiteCase(PerfgateTestCase):
    def run_shipped(self, name, *args, trials):
        suite = SOURCE_DIR / "suites" / f"{name}.yaml"
        self.assertTrue(suite.is_file(), suite)
        r = self.perfgate("run", str(suite), "--seed", "3", "-q", *args, timeout=600)
        self.assertExit(r, 0, f"perfgate run suites/{name}.yaml")
        show = self.show_json()
        self.assertEqual(show["run"]["suite"], name)
        by_status = trials_by_status(show)
        self.assertEqual(len(by_status.get("ok", [])), trials, {k: len(v) for k, v in by_status.items()})
        self.assertEqual(set(by_status), {"ok"}, [t.get("error") for t in show["trials"] if t["status"] != "ok"])
        return show


class ShippedSuites(ShippedSuiteCase):
    """The suites whose effect is a time: one timing class at a time (configurations interleaved in one run)."""
    measures_time = True
    timeout_s = 300

    def test_graph_vs_eager(self):
        show = self.run_shipped("graph-vs-eager", "--set", "repeats=3", trials=12)
        eager_off = config(show, graph_mode="eager", fusion="off")
        graph_off = config(show, graph_mode="graph", fusion="off")
        eager_on = config(show, graph_mode="eager", fusion="on")
        # Measured -29 % (graph) and -24 % (fusion) in step time at the suite's 2 ranks, and -35 %
        # and -28 % in the trials' CPU time. The 10 % margins are asserted on CPU time: a step's
        # wall time follows where the trial landed on a loaded machine (graph only 9.4 % ahead
        # once, with a compiler running beside the test), the work it did does not (SimEffects'
        # fusion test found the same). Step time keeps its direction.
        self.assertLess(median_of(graph_off, "cpu_time_s"), 0.9 * median_of(eager_off, "cpu_time_s"))
        self.assertLess(median_of(eager_on, "cpu_time_s"), 0.9 * median_of(eager_off, "cpu_time_s"))
        self.assertLess(median_of(graph_off, "step_time_ms"), median_of(eager_off, "step_time_ms"))
        self.assertLess(median_of(eager_on, "step_time_ms"), median_of(eager_off, "step_time_ms"))
        # Graph mode compiles on its first step.
        self.assertGreater(graph_off["first_step_ms"], 2 * median_of(graph_off, "step_time_ms"))
        self.assertGreater(median_of(graph_off, "compile_ms"), 0)

    def test_sweep_bucket_has_an_interior_best(self):
        show = self.run_shipped("sweep-bucket", "--set", "repeats=3", trials=24)
        by_size = {mb: [] for mb in (5, 25, 50, 100)}
        for loader in ({"num_workers": 2, "prefetch": 2}, {"num_workers": 4, "prefetch": 2}):
            exposed = {}
            for mb in (5, 25, 50, 100):
                c = [c for c in show["configs"] if str(c["params"]["bucket_mb"]) == str(mb)
                     and c["params"]["dataloader"] == loader]
                self.assertEqual(len(c), 1, (mb, loader, [c["params"] for c in show["configs"]]))
                exposed[mb] = median_of(c[0], "allreduce_ms")
            # The all-reduce left exposed after the last rank's backward, with the suite's 400 us
            # per call and 32 MB of activations: 5.9 / 2.1 / 3.9 / 7.1 ms quiet, 3.3 / 2.1 / 3.7 /
            # 7.0 ms with a busy loop per core (a slower backward hides more of the small buckets'
            # calls, hence the 10 % margin against 5 MB); the one big bucket cannot start before
            # backward ends at any load.
            best = min(exposed, key=exposed.get)
            self.assertIn(best, (25, 50), (loader, exposed))
            self.assertLess(exposed[best], 0.9 * exposed[5], (loader, exposed))
            self.assertLess(exposed[best], 0.75 * exposed[100], (loader, exposed))
            for mb, v in exposed.items():
                by_size[mb].append(v)
        # Over both loaders 25 MB is the best size: about 40 % ahead of 50 MB quiet and loaded (5
        # of 5 runs with two busy loops). It was 4.6 against 4.5 ms on one CI run while the
        # exposed time still included waiting for the other rank's backward.
        mean = {mb: statistics.mean(v) for mb, v in by_size.items()}
        self.assertEqual(min(mean, key=mean.get), 25, mean)
        # perfgate sweep ranks the same trials: a middle bucket first, the extremes behind.
        r = self.perfgate("sweep", "latest", "--metric", "allreduce_ms", "--format", "json")
        self.assertExit(r, 0, "perfgate sweep")
        sw = json.loads(r.stdout)
        self.assertEqual(len(sw["entries"]), 8)
        self.assertIn(sw["entries"][0]["params"]["bucket_mb"], (25, 50), sw["entries"])
        self.assertTrue(all(e["rank"] > 2 for e in sw["entries"] if e["params"]["bucket_mb"] in (5, 100)), sw["entries"])
        table = self.perfgate("sweep", "latest", "--metric", "allreduce_ms", "--axes", "bucket_mb,dataloader.num_workers")
        self.assertExit(table, 0)
        self.assertIn("bucket_mb \\ dataloader.num_workers", table.stdout)
        self.assertRegex(table.stdout, r"(best: |no clear winner: )")
        rows = list(csv.DictReader(io.StringIO(self.perfgate("sweep", "latest", "--metric", "allreduce_ms", "--format",
                                                             "csv").stdout)))
        self.assertEqual(len(rows), 8)
        self.assertIn(rows[0]["bucket_mb"], ("25", "50"))

    def test_sweep_dataloader_starves_without_workers(self):
        show = self.run_shipped("sweep-dataloader", "--set", "repeats=1", trials=7)
        inline = config(show, num_workers=0, prefetch=1)
        four = config(show, num_workers=4, prefetch=2)
        # In-line loading waits 16+ ms per step; four workers keep the queue full.
        self.assertGreater(median_of(inline, "data_wait_ms"), 5 * median_of(four, "data_wait_ms") + 2.0)
        self.assertLess(median_of(four, "step_time_ms"), median_of(inline, "step_time_ms"))

class ShippedSuitesNoTiming(ShippedSuiteCase):
    """The suites checked here for what they store (memory, loss scale, world
    size, a first-step compile many times a step), not for a time one
    configuration takes against another, so they run beside other tests."""
    timeout_s = 300

    def test_precision_stores_16_bits_and_scales_fp16_losses(self):
        show = self.run_shipped("precision", "--set", "repeats=1", trials=3)
        fp32, bf16, fp16 = (config(show, precision=p) for p in ("fp32", "bf16", "fp16"))
        # The speed of bf16 is asserted over six launches a side in test_sim.py;
        # one launch each shows the storage: peak RSS halves.
        for half in (bf16, fp16):
            ratio = median_of(half, "peak_rss_mb") / median_of(fp32, "peak_rss_mb")
            self.assertAlmostEqual(ratio, 0.5, delta=0.1, msg=f"{half['label']}: peak RSS ratio {ratio}")
        # fp16 runs dynamic loss scaling and says so; the others keep scale 1.
        self.assertGreater(median_of(fp16, "loss_scale"), 1)
        self.assertEqual(median_of(fp32, "loss_scale"), 1)
        self.assertIn("skipped_steps", [m["metric"] for m in fp16["metrics"]])

    def test_nightly_runs_sim_and_real_torch(self):
        show = self.run_shipped("nightly", "--set", "repeats=1", trials=8)
        for model in ("cnn", "transformer"):
            for mode in ("eager", "graph"):
                c = config(show, model=model, graph_mode=mode)
                self.assertEqual(c["workload"], "torch-train")
                self.assertGreater(median_of(c, "throughput"), 0)
                self.assertEqual(fact(c, "world_size"), 2)  # DDP over gloo, two processes
        for mode in ("eager", "graph"):
            c = [c for c in show["configs"] if c["workload"] == "torch-infer" and c["params"]["graph_mode"] == mode]
            self.assertEqual(len(c), 1)
            p50, p99 = median_of(c[0], "latency_p50_ms_bs8"), median_of(c[0], "latency_p99_ms_bs8")
            self.assertLessEqual(p50, p99)
        # One trial a side is too few to rank graph against eager (test_graph_vs_eager
        # does); graph mode's compile on its first step shows in one.
        sims = {c["params"]["graph_mode"]: c for c in show["configs"] if c["workload"] == "sim"}
        self.assertGreater(sims["graph"]["first_step_ms"], 2 * median_of(sims["graph"], "step_time_ms"))
        self.assertGreater(median_of(sims["graph"], "compile_ms"), 0)
        self.assertEqual(median_of(sims["eager"], "compile_ms"), 0)


if __name__ == "__main__":
    unittest.main()
