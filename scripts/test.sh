#!/usr/bin/env bash
# Installs what perfgate needs, builds it with tests, and runs every test:
# Catch2 unit tests and the integration tests that drive the real binary.
# Same build folder and flags as scripts/demo.sh (scripts/env.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$repo_root/scripts/setup.sh"
# Every C++ file and the dashboard's scripts as .clang-format says
# (clang-format-14 -i FILE mends one).
if git -C "$repo_root" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$repo_root" && git ls-files -z '*.cpp' '*.hpp' 'dashboards/*.js' | xargs -0 clang-format-14 --dry-run --Werror) ||
    { echo "test.sh: the files above are not formatted: clang-format-14 -i them" >&2; exit 1; }
fi
configure_and_build
# Two more tests than cores: the classes that run side by side (none measures
# time) spend much of their time waiting on their processes, sockets and
# sleeps. A timing class takes all slots but one (tests/CMakeLists.txt), so
# it still runs beside at most one other test. Measured on a 2-core machine
# (the whole suite, no ctest cost data): 325-338 s at -j3, 319 s at -j4.
ctest_jobs=${PERFGATE_TEST_JOBS:-$(($(nproc) + 2))}
t0=$(date +%s)
echo "test: ctest -j$ctest_jobs in $build_dir"
cd "$build_dir"
set +e
ctest --output-on-failure -j"$ctest_jobs" "$@"
status=$?
set -e
echo "test: ctest exit $status after $(took_since "$t0")"
exit $status
