#!/usr/bin/env bash
# Installs what perfgate needs, builds it with tests, and runs every test:
# Catch2 unit tests and the integration tests that drive the real binary.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$repo_root/scripts/setup.sh"
# Every C++ file as .clang-format says (clang-format-14 -i FILE mends one).
if git -C "$repo_root" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$repo_root" && git ls-files -z '*.cpp' '*.hpp' | xargs -0 clang-format-14 --dry-run --Werror) ||
    { echo "test.sh: the files above are not formatted: clang-format-14 -i them" >&2; exit 1; }
fi
configure_and_build -DPERFGATE_ENABLE_TESTS=ON -DPERFGATE_WERROR=ON
cd "$build_dir"
# One more test than cores: the classes that run side by side (none measures
# time; those run alone) spend much of their time waiting on their processes,
# sockets and sleeps. Measured on a 2-core machine: 138 s at -j2, 114 s at -j3.
ctest --output-on-failure -j"${PERFGATE_TEST_JOBS:-$((jobs + 1))}" "$@"
