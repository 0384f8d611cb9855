#!/usr/bin/env bash
# Installs what perfgate needs, builds it, runs suites/smoke.yaml into
# results/perfgate.db and prints the results table.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$repo_root/scripts/setup.sh"
configure_and_build
cd "$repo_root"
"$build_dir/perfgate" run suites/smoke.yaml --tag demo
echo
"$build_dir/perfgate" runs --limit 5
