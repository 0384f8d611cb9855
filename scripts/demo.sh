#!/usr/bin/env bash
# Installs what perfgate needs, builds perfgate and perfgate-sim, runs
# suites/smoke.yaml into results/perfgate.db and prints the results table.
# The build folder is the one scripts/test.sh uses, with the same flags: a
# test.sh afterwards compiles only the tests.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$repo_root/scripts/setup.sh"
configure_and_build perfgate perfgate-sim
cd "$repo_root"
"$build_dir/perfgate" run suites/smoke.yaml --tag demo
echo
"$build_dir/perfgate" runs --limit 5
