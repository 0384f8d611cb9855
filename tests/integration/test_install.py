"""An installed perfgate, outside the checkout: `cmake --install` into a
temporary prefix, then the shipped smoke suite from that prefix, run from a
folder that is neither the checkout nor the build; and the .deb that CPack
makes, with its runtime dependencies."""

import json
import os
import shutil
import subprocess
from pathlib import Path

from support import PERFGATE_BIN, SOURCE_DIR, PerfgateTestCase

BUILD_DIR = Path(PERFGATE_BIN).resolve().parent


class Installed(PerfgateTestCase):
    timeout_s = 240

    def install(self):
        prefix = self.tmp / "prefix"
        r = subprocess.run(["cmake", "--install", str(BUILD_DIR), "--prefix", str(prefix)],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return prefix

    def test_the_smoke_suite_runs_from_the_installed_prefix(self):
        prefix = self.install()
        perfgate = prefix / "bin" / "perfgate"
        for f in ("bin/perfgate", "libexec/perfgate/perfgate-sim", "libexec/perfgate/workloads/torch_train.py",
                  "share/perfgate/suites/smoke.yaml", "share/perfgate/configs/profiles/ascend-910b.yaml",
                  "share/perfgate/configs/gate.yaml", "share/perfgate/configs/release-checklist.yaml"):
            self.assertTrue((prefix / f).is_file(), f"{f} not installed")
        # The build tree's helpers are not on the way: the installed suite
        # finds the installed perfgate-sim.
        elsewhere = self.tmp / "elsewhere"
        elsewhere.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("PERFGATE_")}
        env["PATH"] = "/usr/bin:/bin"
        db = elsewhere / "perfgate.db"
        r = subprocess.run([str(perfgate), "--db", str(db), "run", str(prefix / "share/perfgate/suites/smoke.yaml"),
                            "--tag", "installed"], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=180)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        show = subprocess.run([str(perfgate), "--db", str(db), "show", "latest", "--format", "json"], cwd=elsewhere,
                              env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(show.returncode, 0, show.stderr)
        run = json.loads(show.stdout)
        trials = run["trials"]
        self.assertEqual(len(trials), 12)
        self.assertTrue(all(t["status"] == "ok" for t in trials), trials)
        # The prefix's perfgate names only the installed perfgate-sim (its folder
        # holds no perfgate-sim, so {perfgate_libexec} is <prefix>/libexec/perfgate);
        # the trials' logs are where the run was started, outside the checkout.
        self.assertTrue(all(str(elsewhere) in t["log_dir"] for t in trials))
        # --profile by name finds the installed profile, the suite being anywhere.
        suite = elsewhere / "mine.yaml"
        shutil.copy(prefix / "share/perfgate/suites/smoke.yaml", suite)
        dry = subprocess.run([str(perfgate), "--db", str(db), "run", str(suite), "--profile", "ascend-910b",
                              "--dry-run"], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(dry.returncode, 0, dry.stdout + dry.stderr)
        missing = subprocess.run([str(perfgate), "--db", str(db), "run", str(suite), "--profile", "no-such",
                                  "--dry-run"], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(missing.returncode, 2)
        self.assertIn(str(prefix / "share/perfgate/configs/profiles/no-such.yaml"), missing.stderr)
        # The torch workloads of the installed nightly suite resolve to the
        # installed scripts too (planned, not run: a dry run needs no torch).
        nightly = subprocess.run([str(perfgate), "--db", str(db), "run",
                                  str(prefix / "share/perfgate/suites/nightly.yaml"), "--dry-run"],
                                 cwd=elsewhere, env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(nightly.returncode, 0, nightly.stdout + nightly.stderr)
        libexec = prefix / "libexec/perfgate"
        argv_lines = [line.split() for line in nightly.stdout.splitlines()
                      if line.startswith("      ") and line.split()]
        scripts = {Path(a) for argv in argv_lines for a in argv if a.endswith(".py")}
        self.assertEqual(scripts, {libexec / "workloads/torch_train.py", libexec / "workloads/torch_infer.py"},
                         nightly.stdout)
        self.assertTrue(all(s.is_file() for s in scripts))
        self.assertIn(str(libexec / "perfgate-sim"), nightly.stdout)
        self.assertNotIn(str(SOURCE_DIR), nightly.stdout)

    def test_the_deb_names_debian_runtime_packages(self):
        out = self.tmp / "deb"
        out.mkdir()
        r = subprocess.run(["cpack", "--config", str(BUILD_DIR / "CPackConfig.cmake"), "-B", str(out)],
                           capture_output=True, text=True, timeout=180, cwd=self.tmp)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        (deb,) = list(out.glob("perfgate_*.deb"))
        info = subprocess.run(["dpkg-deb", "--field", str(deb), "Depends"], capture_output=True, text=True, check=True)
        depends = info.stdout
        for pkg in ("libre2-", "libyaml-cpp", "libpq5", "libsqlite3", "libfmt", "python3"):
            self.assertIn(pkg, depends)
        files = subprocess.run(["dpkg-deb", "--contents", str(deb)], capture_output=True, text=True, check=True).stdout
        for f in ("./usr/bin/perfgate", "./usr/libexec/perfgate/perfgate-sim", "./usr/share/perfgate/suites/smoke.yaml"):
            self.assertIn(f, files)
