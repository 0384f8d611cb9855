"""Lists the integration tests as ctest entries, one per test class.

Run by tests/CMakeLists.txt at configure time. Reads the test modules with
`ast` (nothing is imported, so a module that needs torch or a browser costs
nothing here) and prints one line per class that defines test methods:

    module Class measures_time alone timeout_s

`measures_time`, `alone` and `timeout_s` are class attributes (see
support.PerfgateTestCase), looked up on the class, then on its bases in the
same module, then the defaults. Classes that measure time run one at a time,
beside at most one other test; those that would read another test's load
coming and going as an effect (runs measured one after another, a soak's
windows over time) also say `alone` and run alone (ctest RUN_SERIAL); the
others run in parallel.
"""

import ast
import sys
from pathlib import Path

DEFAULTS = {"measures_time": False, "alone": False, "timeout_s": 120}


def class_settings(classes, name, seen=()):
    node = classes.get(name)
    if node is None or name in seen:
        return dict(DEFAULTS)
    settings = {}
    for base in node.bases:
        if isinstance(base, ast.Name):
            settings.update(class_settings(classes, base.id, seen + (name,)))
    if not settings:
        settings = dict(DEFAULTS)
    for stmt in node.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            key = stmt.targets[0].id
            if key in DEFAULTS:
                settings[key] = ast.literal_eval(stmt.value)
    return settings


def main(directory):
    for path in sorted(Path(directory).glob("test_*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        for name, node in classes.items():
            if not any(isinstance(f, ast.FunctionDef) and f.name.startswith("test_") for f in node.body):
                continue
            s = class_settings(classes, name)
            print(path.stem, name, int(bool(s["measures_time"])), int(bool(s["alone"])), int(s["timeout_s"]))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
