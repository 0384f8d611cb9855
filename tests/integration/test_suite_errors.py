"""Bad suites are refused before anything runs: exit 2, file:line:column, no database."""

import re
import subprocess
import unittest

from support import EXIT_INPUT, PERFGATE_BIN, PerfgateTestCase, flow_list


class SuiteErrors(PerfgateTestCase):
    def setUp(self):
        super().setUp()
        self.ran = self.tmp / "workload-ran"
        # A workload that would leave a file behind if it ever started.
        self.cmd = self.command("steps.py", "--steps", "1", "--touch", str(self.ran))

    def refuse(self, text, line=None, column=None, contains=(), name="suite.yaml"):
        """Runs the suite; checks exit 2, location, messages, and that nothing happened."""
        suite = self.write_suite(text, name)
        r = self.perfgate("run", suite)
        self.assertExit(r, EXIT_INPUT)
        self.assertEqual(r.stdout, "")
        m = re.search(re.escape(name) + r":(\d+):(\d+): ", r.stderr)
        self.assertIsNotNone(m, f"no {name}:line:column in stderr: {r.stderr!r}")
        if line is not None:
            self.assertEqual(int(m.group(1)), line, f"wrong line in {r.stderr!r}")
        if column is not None:
            self.assertEqual(int(m.group(2)), column, f"wrong column in {r.stderr!r}")
        for s in contains:
            self.assertIn(s, r.stderr)
        self.assertNothingHappened()
        return r

    def assertNothingHappened(self):
        self.assertFalse(self.ran.exists(), "the workload ran")
        self.assertFalse(self.db.exists(), "a database was created")
        self.assertFalse((self.tmp / "runs").exists(), "artifacts were created")

    def test_yaml_syntax_error(self):
        r = self.refuse(f"""\
suite: bad
workloads:
  - name: w
    command: {self.cmd[:-1]}
    repeats: 1
""", contains=["YAML syntax error"])
        line = int(re.search(r"suite\.yaml:(\d+):", r.stderr).group(1))
        self.assertIn(line, (4, 5), r.stderr)

    def test_tab_indentation(self):
        self.refuse(f"suite: bad\nworkloads:\n  - name: w\n\tcommand: {self.cmd}\n", line=4, column=1,
                    contains=["YAML syntax error", "tab"])

    def test_unknown_key_suggests_the_right_one(self):
        self.refuse(f"""\
suite: bad
defaults:
  repeat: 3
workloads:
  - name: w
    command: {self.cmd}
""", line=3, column=3, contains=["unknown key 'repeat'", "did you mean 'repeats'"])

    def test_unknown_workload_key(self):
        self.refuse(f"""\
suite: bad
workloads:
  - name: w
    command: {self.cmd}
    timout: 5s
""", line=5, column=5, contains=["unknown key 'timout'", "did you mean 'timeout'"])

    def test_wrong_types(self):
        cases = [
            ("repeats: three", "repeats must be an integer", 14),
            ("repeats: 0", "repeats must be at least 1", 14),
            ("timeout: [1, 2]", "timeout must be a duration", 14),
            ("timeout: soon", "timeout", 14),
            ("shell: maybe", "shell must be true or false", 12),
            ("log_limit: lots", "not a size", 16),
        ]
        for setting, message, column in cases:
            with self.subTest(setting=setting):
                self.refuse(f"""\
suite: bad
workloads:
  - name: w
    command: {self.cmd}
    {setting}
""", line=5, column=column, contains=[message])

    def test_command_must_be_a_list(self):
        self.refuse("""\
suite: bad
workloads:
  - name: w
    command: python3 train.py
""", line=4, column=14, contains=["command must be a list"])

    def test_empty_matrix(self):
        self.refuse(f"""\
suite: bad
workloads:
  - name: w
    command: {self.cmd}
    matrix: {{}}
""", line=5, column=13, contains=["matrix is empty"])

    def test_matrix_axis_without_values(self):
        self.refuse(f"""\
suite: bad
workloads:
  - name: w
    command: {self.cmd}
    matrix:
      bucket_mb: []
""", line=6, column=18, contains=["'bucket_mb' has no values"])

    def test_empty_value_points_at_its_key(self):
        # `repeats:` with nothing after it is on line 5; the error must point there,
        # not at the next key (line 6), where the user would look for the mistake.
        self.refuse(f"""\
suite: bad
workloads:
  - name: w
    command: {self.cmd}
    repeats:
    timeout: 5s
""", line=5, contains=["'repeats' in workload #1 has no value"])
        self.refuse(f"""\
suite: bad
workloads:
  - name: w
    matrix:
    command: {self.cmd}
""", line=4, contains=["'matrix' in workload #1 has no value"], name="suite2.yaml")

    def test_unknown_placeholder_suggests_the_parameter(self):
        self.refuse(f"""\
suite: bad
workloads:
  - name: w
    command: {flow_list([self.python, "--bucket", "{bukcet_mb}"])}
    matrix:
      bucket_mb: [25, 50]
""", line=4, contains=["unknown placeholder '{bukcet_mb}'", "did you mean 'bucket_mb'"])

    def test_unknown_placeholder_in_env(self):
        r = self.refuse(f"""\
suite: bad
workloads:
  - name: w
    command: {self.cmd}
    env: {{BUCKET: "{{bukcet_mb}}"}}
    matrix:
      bucket_mb: [25]
""", contains=["env.BUCKET", "did you mean 'bucket_mb'"])
        self.assertIn("suite.yaml:", r.stderr)

    def test_duplicate_workload_name(self):
        self.refuse(f"""\
suite: bad
workloads:
  - name: w
    command: {self.cmd}
  - name: w
    command: {self.cmd}
""", line=5, column=11, contains=["duplicate workload name 'w'"])

    def test_suite_that_is_not_utf8(self):
        # A suite saved in Latin-1 ("Müller", "é"). perfgate may refuse it as an input error
        # (exit 2, with a location) or accept it; what it must not do is crash, or store
        # text that later breaks its own reports.
        cases = {
            "description": b'suite: latin1\ndescription: "M\xfcller nightly"\ndefaults: {repeats: 1}\n'
                           b"workloads:\n  - name: w\n    command: CMD\n",
            "matrix value": b"suite: latin1\ndefaults: {repeats: 1}\n"
                            b'workloads:\n  - name: w\n    command: CMD\n    matrix: {x: ["caf\xe9"]}\n',
        }
        for what, text in cases.items():
            with self.subTest(what=what):
                for p in self.tmp.glob("perfgate.db*"):
                    p.unlink()
                suite = self.tmp / "latin1.yaml"
                suite.write_bytes(text.replace(b"CMD", self.cmd.encode()))
                r = self.perfgate("run", suite)
                self.assertNotIn("internal error", r.stderr)
                if r.returncode == EXIT_INPUT:
                    self.assertRegex(r.stderr, r"latin1\.yaml:\d+:\d+: ")
                    self.assertFalse(self.db.exists())
                    continue
                self.assertExit(r, 0, "neither refused as input nor run")
                for args in (["runs", "--format", "json"], ["show", "latest", "--format", "json"]):
                    rr = self.perfgate(*args)
                    self.assertExit(rr, 0, " ".join(args))
                    self.assertNotIn("internal error", rr.stderr)

    def test_missing_suite_file(self):
        missing = self.tmp / "nope" / "suite.yaml"
        r = self.perfgate("run", missing)
        self.assertExit(r, EXIT_INPUT)
        self.assertIn(str(missing), r.stderr)
        self.assertIn("no such suite file", r.stderr)
        self.assertNothingHappened()

    def test_empty_suite_file(self):
        r = self.perfgate("run", self.write_suite(""))
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("empty", r.stderr)
        self.assertNothingHappened()

    def test_bad_command_line(self):
        suite = self.write_suite(f"suite: ok\nworkloads:\n  - name: w\n    command: {self.cmd}\n")
        for args in (["--set", "repeats=zero"], ["--set", "novalue"], ["--only", "nosuchparam=1"], ["--frobnicate"]):
            with self.subTest(args=args):
                r = self.perfgate("run", suite, *args)
                self.assertExit(r, EXIT_INPUT)
                self.assertNothingHappened()

    def test_deleted_current_directory(self):
        # The shell's directory removed under it (a CI workspace cleaned while a
        # job's shell stayed in it): a clear error, not an internal one, and no
        # database made.
        gone = self.tmp / "gone"
        gone.mkdir()
        suite = self.write_suite(f"suite: s\nworkloads:\n  - name: w\n    command: {flow_list(self.cmd)}\n")
        r = subprocess.run(["/bin/sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", str(gone),
                            PERFGATE_BIN, "--db", str(self.db), "run", str(suite)],
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("the current directory cannot be read", r.stderr)
        self.assertNotIn("internal error", r.stderr)
        self.assertNothingHappened()

    def test_misspelled_command(self):
        suite = self.write_suite(f"suite: ok\nworkloads:\n  - name: w\n    command: {self.cmd}\n")
        r = self.perfgate("frun", suite, db=False)
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("unknown command 'frun'", r.stderr)
        self.assertIn("did you mean 'run'", r.stderr)
        # The same with a global option first, as scripts write it (`perfgate --db X frun ...`).
        r = self.perfgate("frun", suite)
        self.assertExit(r, EXIT_INPUT)
        self.assertIn("unknown command 'frun'", r.stderr)
        self.assertIn("did you mean 'run'", r.stderr)
        self.assertNothingHappened()


if __name__ == "__main__":
    unittest.main()
