"""perfgate dashboard: a static site from the database, looked at in headless Chromium.

The database holds what a team would have after a week: a 2 x 2 sweep run
twice (a baseline and a slower candidate) with a gate between them, a soak of
perfgate-sim with a staircase slowdown, and a workload whose name and
parameter values are HTML. Every page must load with no console error, draw
its charts, show the HTML as text, and render to a screenshot that is not
blank.
"""

import json
import os
import re
import shutil
import struct
import subprocess
import unittest
import zlib
from pathlib import Path

from support import EXIT_OK, EXIT_REGRESSION, PERFGATE_BIN, PerfgateTestCase, flow_list, yq

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SIM = str(Path(PERFGATE_BIN).resolve().parent / "perfgate-sim")
XSS_NAME = "<i>train&co"  # workload names have no spaces or slashes, but may hold markup
XSS_VALUE = "<img src=x onerror=alert(1)>"
XSS_VALUE2 = '"><script>alert(2)</script>'


def png_samples(path, every=8):
    """(width, height, RGB tuples of every `every`-th pixel of every `every`-th row) of an
    8-bit RGB/RGBA non-interlaced PNG, as Chromium writes them.

    Only the sampled pixels are kept: the test process's size is inherited by
    every process it forks afterwards (Linux carries the pre-exec peak RSS into
    the child's ru_maxrss), and later tests measure perfgate's peak RSS that way.
    """
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, channels = 8, bytearray(), 0, 0, 3
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, (depth, color, interlace)
            channels = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(bytes(idat))
    stride = width * channels
    samples, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % every == 0:
            samples.extend(bytes(line[x:x + 3]) for x in range(0, stride, channels * every))
        prev = line
    return width, height, samples


class Dashboard(PerfgateTestCase):
    timeout_s = 180
    _cached_db = None  # built by the first test, copied by the others

    @classmethod
    def setUpClass(cls):
        assert os.access(CHROMIUM, os.X_OK), "chromium is needed (scripts/setup.sh installs it)"
        import tempfile
        cls._cache_dir = Path(tempfile.mkdtemp(prefix="perfgate-dash-"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls._cache_dir, ignore_errors=True)

    def chromium(self, url, *extra, timeout=60):
        argv = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-extensions",
                "--no-first-run", "--disable-background-networking", f"--user-data-dir={self.tmp / 'chrome'}",
                "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000", *extra, url]
        return subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=timeout)

    def page(self, anchor):
        """The rendered DOM of index.html#anchor and the console errors Chromium logged."""
        url = (self.out / "index.html").as_uri() + anchor
        r = self.chromium(url, "--dump-dom")
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        console = [l for l in r.stderr.splitlines()
                   if ("CONSOLE" in l and ("error" in l.lower() or "Uncaught" in l)) or "Uncaught" in l]
        return r.stdout, console

    def body_data(self, dom):
        m = re.search(r"<body([^>]*)>", dom)
        self.assertIsNotNone(m, dom[:500])
        return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', m.group(1)))

    def assertPageReady(self, anchor, page, min_charts=0):
        dom, console = self.page(anchor)
        self.assertEqual(console, [], f"{anchor}: console errors")
        data = self.body_data(dom)
        self.assertEqual(data.get("ready"), "1", f"{anchor}: never became ready; body data {data}")
        self.assertEqual(data.get("page"), page, anchor)
        self.assertGreaterEqual(int(data.get("charts", "0")), min_charts, f"{anchor}: charts drawn")
        errors = re.search(r'<pre id="pg-errors"[^>]*>(.*?)</pre>', dom, re.S)
        self.assertTrue(errors is None or errors.group(1).strip() == "", f"{anchor}: {errors and errors.group(1)}")
        return dom

    @staticmethod
    def build_database(case):
        """Runs, a gate and a soak into case.db; called once, the database is copied per test."""
        suite = case.write_suite(f"""\
suite: sweep
defaults: {{repeats: 6, warmup: {{steps: 2}}, timeout: 1m}}
workloads:
  - name: train
    command: {flow_list([case.python, str(Path(__file__).parent / "workloads" / "noisy_steps.py"),
                         "--steps", "8", "--mean-ms", "{base_ms}", "--cv", "0.01", "--scale-env", "PG_SCALE",
                         "--seed-from-env", "PERFGATE_REPEAT", "--seed-from-env", "PERFGATE_RUN_ID"])}
    matrix: {{bucket_mb: [25, 50], num_workers: [2, 4]}}
    params: {{base_ms: 10}}
  - name: {yq(XSS_NAME)}
    command: {flow_list([case.python, str(Path(__file__).parent / "workloads" / "noisy_steps.py"),
                         "--steps", "4", "--mean-ms", "5"])}
    params: {{label: {yq(XSS_VALUE)}, quote: {yq(XSS_VALUE2)}}}
    repeats: 3
""")
        env = case.env(PG_SCALE="1")
        case.assertExit(case.perfgate("run", suite, "-q", "--tag", "base", env=env), EXIT_OK)
        env = case.env(PG_SCALE="1.3")
        case.assertExit(case.perfgate("run", suite, "-q", "--tag", "cand", env=env), EXIT_OK)
        r = case.perfgate("gate", "--run", "latest:cand", "--baseline", "latest:base")
        case.assertExit(r, EXIT_REGRESSION)
        soak = case.write_suite(f"""\
suite: soak
defaults: {{repeats: 1, samplers: [proc], sample_interval: 500ms}}
workloads:
  - name: sim
    command: {flow_list([SIM, "--steps", "0", "--ranks", "1", "--num-workers", "4", "--slowdown-at-s", "3",
                         "--slowdown-factor", "1.5"])}
""", name="soak.yaml")
        case.assertExit(case.perfgate("soak", soak, "-q", "--duration", "6s", "--window", "1s"), EXIT_OK)

    def setUp(self):
        super().setUp()
        if Dashboard._cached_db is None:
            self.build_database(self)
            Dashboard._cached_db = self._cache_dir / "perfgate.db"
            shutil.copy(self.db, Dashboard._cached_db)
        else:
            shutil.copy(Dashboard._cached_db, self.db)
        self.out = self.tmp / "dash"
        r = self.perfgate("dashboard", "--out", self.out)
        self.assertExit(r, EXIT_OK, "perfgate dashboard")
        self.assertIn("index.html", r.stdout)

    def test_pages_load_draw_and_escape(self):
        # Self-contained: nothing the page loads comes from the network.
        index = (self.out / "index.html").read_text()
        for ref in re.findall(r'(?:src|href)="([^"]+)"', index):
            self.assertFalse(re.match(r"^[a-z]+://", ref), f"index.html loads {ref}")
        scripts = re.findall(r'<script src="(assets/[^"]+)"', index)
        self.assertIn("assets/pg-main.js", scripts)
        for f in (*scripts, "assets/dashboard.css", "data/index.js"):
            self.assertTrue((self.out / f).is_file(), f)
        runs = json.loads(self.perfgate("runs", "--format", "json").stdout)
        ids = {r["tags"][0] if r["tags"] else r["suite"]: r["id"] for r in runs}
        soak_id = next(r["id"] for r in runs if r["suite"] == "soak")

        dom = self.assertPageReady("#/overview", "overview")
        self.assertIn("sweep", dom)
        self.assertPageReady("#/runs", "runs")
        dom = self.assertPageReady(f"#/run/{ids['cand']}", "run")
        # The HTML in names and values is text, never markup.
        self.assertNotRegex(dom, r"<img[^>]*src=\"?x")
        self.assertNotIn("<script>alert(2)", dom)
        self.assertNotIn("<i>train", dom)
        self.assertIn("&lt;img src=x onerror=alert(1)&gt;", dom)
        self.assertIn("&lt;i&gt;train&amp;co", dom)
        self.assertIn("regression", dom)
        self.assertRegex(dom, r'href="file:///[^"]+/stdout\.log"', "links to each trial's logs")
        self.assertRegex(dom, r'href="file:///[^"]+/command\.sh"', "and to the command it ran")
        # Small Python workloads: peak RSS is judged by the policy's 32 MB floor, stored with the verdict.
        self.assertIn("±32 MB", dom)
        dom = self.assertPageReady(f"#/sweep/{ids['cand']}", "sweep")
        self.assertIn("bucket_mb", dom)
        dom = self.assertPageReady("#/trend/sweep?metric=step_time_ms", "trend", min_charts=1)
        # Runs on an ordinal axis: each run a tick of its own, named by its id.
        ticks = re.findall(r'class="dygraph-axis-label dygraph-axis-label-x"[^>]*>([^<]*)<', dom)
        self.assertIn(f"#{ids['base']}", ticks)
        self.assertIn(f"#{ids['cand']}", ticks)
        # Without a metric the page shows the suite's recorded primary metric; facts are not offered.
        primary = self.show_json(str(ids["cand"]))["configs"][0]["primary_metric"]
        dom = self.assertPageReady("#/trend/sweep", "trend", min_charts=1)
        subs = re.findall(r'class="pg-chart-sub">([^<]*)<', dom)
        self.assertTrue(subs and all(x.startswith(primary) for x in subs), (primary, subs))
        # Overlay: every configuration of the metric on one chart, markup in labels still text.
        dom = self.assertPageReady("#/trend/sweep?metric=step_time_ms&overlay=1", "trend", min_charts=1)
        self.assertIn("step_time_ms: 5 configurations", dom)
        self.assertEqual(len(re.findall(r'class="pg-chart-card"', dom)), 1)
        self.assertNotIn("<i>train", dom)
        dom = self.assertPageReady(f"#/soak/{soak_id}", "soak", min_charts=2)
        # The host probe (on by default in soaks) is drawn beside the workload's series.
        self.assertIn("host.probe_ms", dom)

    def test_screenshots_are_not_blank(self):
        for anchor in ("#/overview", "#/trend/sweep?metric=step_time_ms"):
            png = self.tmp / "shot.png"
            url = (self.out / "index.html").as_uri() + anchor
            r = self.chromium(url, "--hide-scrollbars", "--window-size=1200,900", f"--screenshot={png}")
            self.assertEqual(r.returncode, 0, r.stderr[-2000:])
            w, h, samples = png_samples(png)
            self.assertEqual((w, h), (1200, 900))
            counts = {}
            for px in samples:
                counts[px] = counts.get(px, 0) + 1
            colours = set(counts)
            background = max(counts, key=counts.get)
            painted = len(samples) - counts[background]
            self.assertGreater(len(colours), 20, f"{anchor}: a nearly uniform screenshot")
            self.assertGreater(painted / len(samples), 0.02, f"{anchor}: almost nothing drawn")

    def test_markdown_links_to_the_dashboard(self):
        r = self.perfgate("show", "latest:cand", "--format", "markdown", "--dashboard-url", "https://ci.example/dash/")
        self.assertExit(r, EXIT_OK)
        self.assertRegex(r.stdout, r"\(https://ci\.example/dash/index\.html#/run/\d+\)")
        self.assertRegex(r.stdout, r"\(https://ci\.example/dash/index\.html#/sweep/\d+\)")
        md = self.tmp / "gate.md"
        r = self.perfgate("gate", "--run", "latest:cand", "--baseline", "latest:base", "--markdown", md,
                          "--dashboard-url", "https://ci.example/dash")
        self.assertExit(r, EXIT_REGRESSION)
        text = md.read_text()
        self.assertIn("https://ci.example/dash/index.html#/trend/sweep?metric=step_time_ms&config=train%20base_ms%3D10%20bucket_mb%3D25%20num_workers%3D2)", text)

    def test_regenerating_drops_stale_data_and_refuses_a_file(self):
        stale = self.out / "data" / "run-999999.js"
        stale.write_text("PG.receive('run-999999', {});")
        keep = self.out / "notes.txt"
        keep.write_text("mine")
        self.assertExit(self.perfgate("dashboard", "--out", self.out, "-q"), EXIT_OK)
        self.assertFalse(stale.exists())
        self.assertTrue(keep.exists(), "files that are not the dashboard's are left alone")
        f = self.tmp / "afile"
        f.write_text("x")
        r = self.perfgate("dashboard", "--out", f)
        self.assertExit(r, 2)
        self.assertIn("not a directory", r.stderr)
