#!/usr/bin/env bash
# Installs what perfgate needs, builds it with tests, and runs every test:
# Catch2 unit tests and the integration tests that drive the real binary.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$repo_root/scripts/setup.sh"
configure_and_build -DPERFGATE_ENABLE_TESTS=ON -DPERFGATE_WERROR=ON
cd "$build_dir"
# One more test than cores: the classes that run side by side (none measures
# time; those run alone) spend much of their time waiting on their processes,
# sockets and sleeps. Measured on a 2-core machine: 138 s at -j2, 114 s at -j3.
ctest --output-on-failure -j"${PERFGATE_TEST_JOBS:-$((jobs + 1))}" "$@"
