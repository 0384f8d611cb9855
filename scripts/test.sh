#!/usr/bin/env bash
# Installs what perfgate needs, builds it with tests, and runs every test:
# Catch2 unit tests and the integration tests that drive the real binary.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$repo_root/scripts/setup.sh"
configure_and_build -DPERFGATE_ENABLE_TESTS=ON -DPERFGATE_WERROR=ON
cd "$build_dir"
ctest --output-on-failure -j"$jobs" "$@"
