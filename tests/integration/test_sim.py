"""perfgate-sim through the real harness: its knobs have the effects they claim.

Each effect is asserted from the stored trials with margins far below the
effect measured on a loaded 2-core machine (docs/perfgate-sim.md gives the
figures): the direction in a clear majority of paired trials, and a median
change of at least 10 % where the measured one is 20 % or more.
"""

import statistics
import unittest
from pathlib import Path

from support import PERFGATE_BIN, PerfgateTestCase, fact, flow_list, metric, trials_by_status

SIM = str(Path(PERFGATE_BIN).resolve().parent / "perfgate-sim")


def config_by(show, **params):
    for c in show["configs"]:
        if all(str(c["params"].get(k)) == str(v) for k, v in params.items()):
            return c
    raise AssertionError(f"no configuration with {params} in {[c['params'] for c in show['configs']]}")


def values(config, name):
    """Per-trial values of a metric, by repeat."""
    return {t["repeat"]: t["value"] for t in metric(config, name)["trials"]}


class SimTestCase(PerfgateTestCase):
    def run_sim_suite(self, matrix, args=(), repeats=3, steps=20, extra=""):
        argv = [SIM, *args, "--steps", str(steps)]
        suite = self.write_suite(f"""\
suite: sim-effects
defaults: {{repeats: {repeats}, warmup: {{steps: 3}}, timeout: 2m}}
workloads:
  - name: sim
    command: {flow_list(argv)}
    matrix: {matrix}
{extra}""")
        r = self.perfgate("run", suite, "--seed", "7", "-q", timeout=600)
        self.assertExit(r, 0, "perfgate run")
        return self.show_json()

    def assertFasterInMostPairs(self, fast, slow, name="step_time_ms", min_change=0.10):
        f, s = values(fast, name), values(slow, name)
        wins = sum(1 for k in f if k in s and f[k] < s[k])
        self.assertGreater(wins, len(f) / 2,
                                f"{fast['label']} faster than {slow['label']} in only {wins} of {len(f)} pairs: {f} vs {s}")
        mf, ms = statistics.median(f.values()), statistics.median(s.values())
        self.assertLess(mf, ms * (1 - min_change), f"median {name}: {mf} vs {ms}")


# Loading off (no storage reads, no decode): the knobs below act on the step's
# compute, and on a busy 2-core machine the loader threads starve first, so
# the step turns data-bound and every configuration measures the loader
# instead (seen with a busy loop per core: fusion on and off both at 21-24 ms).
NO_LOADING = ["--read-us", "0", "--decode-work", "0"]


class SimEffects(SimTestCase):
    measures_time = True
    timeout_s = 300

    def test_graph_beats_eager_and_fusion_beats_no_fusion(self):
        show = self.run_sim_suite(
            '{graph_mode: [eager, graph], fusion: ["off", "on"]}',
            # One rank: these knobs act within a rank, and two busy rank threads on a
            # loaded 2-core machine would only add scheduling noise.
            ["--graph-mode", "{graph_mode}", "--fusion", "{fusion}", "--ranks", "1", *NO_LOADING], repeats=5, steps=20)
        self.assertEqual(len(trials_by_status(show).get("ok", [])), 20)
        eager_off = config_by(show, graph_mode="eager", fusion="off")
        graph_off = config_by(show, graph_mode="graph", fusion="off")
        eager_on = config_by(show, graph_mode="eager", fusion="on")
        self.assertFasterInMostPairs(graph_off, eager_off)
        # Fusion saves 12-30 % of an eager step here (docs/perfgate-sim.md). Judged on the
        # trial's CPU time: with a busy loop per core, three runnable tasks share two cores and
        # whichever trial lands beside a busy loop takes twice the wall time for the same work
        # (eager per-step medians of 19.4-21.0 or 37.9-38.2 ms in one series of 8, fused 12.2-13.0
        # or 25.1 ms), so five trials a side could show fusion 3.4 % ahead once in ten rounds.
        # CPU time does not follow the share: 0.50 vs 0.31 s over 25 steps, every time, quiet
        # or with the two loops. Assert 10 % on it.
        self.assertFasterInMostPairs(eager_on, eager_off, name="cpu_time_s", min_change=0.10)
        # Graph mode compiles on its first step.
        self.assertGreater(graph_off["first_step_ms"], 2 * metric(graph_off, "step_time_ms")["median"])
        self.assertGreater(metric(graph_off, "compile_ms")["median"], 0)
        self.assertEqual(metric(eager_off, "compile_ms")["median"], 0)

    def test_too_few_loader_workers_wait_for_data(self):
        show = self.run_sim_suite("{num_workers: [0, 4]}", ["--graph-mode", "graph", "--num-workers", "{num_workers}"])
        inline, workers = config_by(show, num_workers=0), config_by(show, num_workers=4)
        wait_inline = metric(inline, "data_wait_ms")["median"]
        wait_workers = metric(workers, "data_wait_ms")["median"]
        self.assertGreater(wait_inline, 5 * wait_workers + 2.0)
        self.assertFasterInMostPairs(workers, inline)

    def test_bf16_beats_fp32_on_the_elementwise_heavy_config(self):
        # suites/precision.yaml's configuration: unfused chain, one rank, and each layer's
        # activations four times the last-level cache (sized by the cache, not in MB: a CI
        # machine with a larger L3 held a fixed 64 MB in cache, where 16-bit storage saves
        # no traffic and its conversions cost). The cache counts at most 32 MB: a VM that
        # reports its host's 504 MB L3 made this a 12 GB, 3 s-per-step process.
        # The 16-bit passes work in registers: through a float scratch they took
        # several times an fp32 pass's instructions per value, turned compute-bound
        # whenever anything else competed for the core, and lost their gain in
        # a varying share of launches (docs/perfgate-sim.md).
        show = self.run_sim_suite(
            "{precision: [fp32, bf16]}",
            ["--graph-mode", "graph", "--fusion", "off", "--precision", "{precision}", "--act-llc", "4",
             "--layers", "2", "--ranks", "1", *NO_LOADING], repeats=5, steps=8)
        fp32, bf16 = config_by(show, precision="fp32"), config_by(show, precision="bf16")
        act_mb = fact(fp32, "act_mb")
        self.assertEqual(fact(bf16, "act_mb"), act_mb)
        rss32, rss16 = metric(fp32, "peak_rss_mb")["median"], metric(bf16, "peak_rss_mb")["median"]
        # The 16-bit tensors (activations, residuals, gradients: 3 x act_mb in fp32)
        # dominate the process: its peak RSS halves (measured 773 vs 389 MB).
        self.assertGreater(rss32, 2.5 * act_mb)
        self.assertAlmostEqual(rss16 / rss32, 0.5, delta=0.1, msg=f"peak RSS {rss32} vs {rss16} MB")
        # Measured between medians of five: -26 to -33 % where the L3 is 32 MB (three runs,
        # bf16 ahead in every pair). On a 504 MB-L3 Xeon 6 host the capped size partly fits
        # the cache: -12 to -14 % with bf16 narrowed in AVX2 integer code, and -1 to -8 %
        # with a busy loop on each core (that conversion is vector work, which a busy
        # neighbour on the core slows more than memory traffic); with the CPU's own
        # conversion (AVX512-BF16) -21 % quiet and -16 to -23 % with the two busy loops.
        # Assert 5 % and a majority of pairs.
        self.assertFasterInMostPairs(bf16, fp32, min_change=0.05)

    def test_bucket_sweep_has_an_interior_best(self):
        show = self.run_sim_suite("{bucket_mb: [1, 25, 200]}", ["--graph-mode", "graph", "--bucket-mb", "{bucket_mb}"],
                                  repeats=5)
        small, mid, large = (config_by(show, bucket_mb=b) for b in (1, 25, 200))
        # The mechanism: the exposed all-reduce time is what the bucket size changes...
        self.assertFasterInMostPairs(mid, small, "allreduce_ms", min_change=0.3)
        # Against the one big bucket the margin shrinks on a quick, quiet machine: backward
        # ends sooner, so less of the 25 MB buckets' traffic hides behind it (5.2 vs 7.2 ms,
        # 28 %, in one fresh-clone CI run; more with a busy loop per core). Assert 15 %.
        self.assertFasterInMostPairs(mid, large, "allreduce_ms", min_change=0.15)
        # ...and it shows in the step time. Against the one big bucket the gain
        # (about 8 ms on a 2-core machine) is within the rank skew of a loaded
        # machine, so only the medians' order is asserted there.
        self.assertFasterInMostPairs(mid, small)
        step = lambda c: statistics.median(values(c, "step_time_ms").values())
        self.assertLess(step(mid), step(large))
        self.assertGreater(fact(small, "buckets"), fact(mid, "buckets"))
        self.assertEqual(fact(large, "buckets"), 1)


class SimFaults(SimTestCase):
    def run_one(self, args, defaults="timeout: 1m", exit_code=0):
        """One trial of perfgate-sim with `args`; returns the show JSON."""
        suite = self.write_suite(f"""\
suite: sim-fault
defaults: {{repeats: 1, {defaults}}}
workloads:
  - name: sim
    command: {flow_list([SIM, *args])}
""")
        self.assertExit(self.perfgate("run", suite, "-q"), exit_code)
        return self.show_json()

    def test_crash_is_a_failed_trial_with_the_signal(self):
        suite = self.write_suite(f"""\
suite: sim-crash
defaults: {{repeats: 1, timeout: 1m}}
workloads:
  - name: crash
    command: {flow_list([SIM, "--crash-at-step", "3", "--steps", "10"])}
  - name: fine
    command: {flow_list([SIM, "--steps", "5"])}
""")
        r = self.perfgate("run", suite, "-q")
        self.assertExit(r, 0)
        show = self.show_json()
        failed = trials_by_status(show)["failed"]
        self.assertEqual(len(failed), 1)
        self.assertEqual(failed[0]["signal"], 6)
        self.assertIn("injected crash at step 3", failed[0]["error"])
        self.assertEqual(failed[0]["steps"], 3)  # the steps before the crash are kept

    def test_hang_is_ended_at_the_timeout(self):
        show = self.run_one(["--hang-at-step", "2", "--steps", "50"], "timeout: 2s, kill_grace: 1s", exit_code=3)
        t = show["trials"][0]
        self.assertEqual(t["status"], "timed_out")
        self.assertEqual(t["steps"], 2)

    def test_leak_shows_as_host_memory_growth(self):
        show = self.run_one(["--leak-kb-per-step", "2048", "--steps", "30", "--graph-mode", "graph"],
                            "timeout: 1m, warmup: {steps: 3}")
        rss = metric(show["configs"][0], "host_rss_mb")["trials"][0]
        growth = rss["max"] - rss["min"]
        injected = 2.0 * (rss["n_steady"] - 1)  # MB between the first and last steady step
        self.assertGreater(growth, 0.8 * injected)
        self.assertLess(growth, 1.2 * injected + 4)

    def test_unknown_knob_value_lists_the_valid_ones(self):
        t = self.run_one(["--graph-mode", "lazy", "--steps", "5"], exit_code=3)["trials"][0]
        self.assertEqual(t["exit_code"], 2)
        self.assertIn("eager", t["error"])
        self.assertIn("graph", t["error"])


if __name__ == "__main__":
    unittest.main()
