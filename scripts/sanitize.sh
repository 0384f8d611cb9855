#!/usr/bin/env bash
# Builds perfgate and its tests with AddressSanitizer and UndefinedBehavior-
# Sanitizer (g++ 12) in build-asan/ and runs every test there: the unit
# tests, the fuzz replays, perfgate-sim's own code (a sanitized copy run
# through its modes) and the integration tests, which run the instrumented
# perfgate against plain workloads (perfgate-sim and gbench_demo, whose step
# times and memory the tests assert). Any sanitizer report ends the process
# that made it with a non-zero status, so it fails its test.
#
#   scripts/sanitize.sh [ctest arguments...]     e.g. -L unit, -R test_gate
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$repo_root/scripts/setup.sh"
build_dir=${PERFGATE_ASAN_DIR:-$repo_root/build-asan}
flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# -O1, as sanitizer builds usually are: quicker to build than -O2, with
# stack traces that stay readable. Warnings are not errors here: g++ 12's
# -Wmaybe-uninitialized reports false positives inside <regex> when ASan
# instruments it (the -Werror builds are the normal ones).
cmake -S "$repo_root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DPython3_EXECUTABLE=/usr/bin/python3 \
  -DPERFGATE_ENABLE_TESTS=ON -DPERFGATE_WERROR=OFF -DCMAKE_CXX_FLAGS="$flags" -DPERFGATE_SANITIZER_BUILD=ON \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" "${launcher[@]}" >/dev/null
cmake --build "$build_dir" -j"$jobs"
cd "$build_dir"
# Reports go to stderr (which each test prints on failure) and stop the process.
# A 16 MB quarantine (not 256): freed memory is held back to catch late uses,
# and the tests that bound perfgate's own peak RSS (100 MB through a 100 MB
# flood of output) would otherwise measure ASan's quarantine.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=86:quarantine_size_mb=16
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=87
ctest --output-on-failure -j"${PERFGATE_TEST_JOBS:-$((jobs + 1))}" "$@"
