#!/usr/bin/env bash
# Installs exactly the Debian 12 packages perfgate needs to build, test and
# run its shipped workloads. Idempotent: packages already present are skipped,
# and apt is not touched at all when nothing is missing.
set -euo pipefail

packages=(
  # toolchain
  g++ cmake make pkg-config git
  dpkg-dev                 # cpack: dpkg-shlibdeps names the .deb's runtime dependencies
  file                     # cpack: CPackDeb reads binaries with file(1) before dpkg-shlibdeps
  ccache                   # compiler cache: a second build, or a fresh clone, recompiles only what changed
  clang-format-14          # scripts/test.sh checks every C++ and dashboard file is formatted (.clang-format)
  # libraries (each used by one harness module, see docs/design.md)
  libyaml-cpp-dev          # suite/
  libboost-dev             # headers: Boost.Process (exec/), Boost.Math (stats/)
  libboost-filesystem-dev  # Boost.Process 1.74 links Boost.Filesystem
  libsqlite3-dev sqlite3   # store/ (sqlite3 CLI is used by tests to check integrity)
  libpq-dev                # store/: the shared PostgreSQL store
  libre2-dev               # util/user_regex: patterns from suites (regex parser, command sampler), linear time
  postgresql-15            # tests: a throwaway server (scripts/services/postgres.sh)
  slurmctld slurmd slurm-client munge  # tests: a throwaway one-node Slurm cluster (scripts/services/slurm.sh)
  nlohmann-json3-dev       # metrics/, report/
  libcli11-dev             # cli/
  libfmt-dev               # everywhere for formatting
  catch2                   # unit tests (Catch2 v2)
  libbenchmark-dev         # tests/bench, and gbench_demo for the gbench parser tests
  libbenchmark-tools       # compare.py, run beside the gate by tests/bench/real_aa.py
  libjs-dygraphs            # report/: the dashboard's charts, embedded in the binary
  chromium                 # tests: the dashboard in a headless browser
  # workloads and statistics reference values
  python3 python3-torch python3-scipy
)

# scripts/fuzz.sh and scripts/sanitize.sh: clang-14 with libFuzzer and the
# sanitizer runtimes (not needed to build, test or run perfgate).
if [ "${1:-}" = --fuzz ]; then
  packages+=(clang-14 libclang-rt-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo_cmd=(sudo); else
    echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 2
  fi
fi
# apt's and dpkg's own output (thousands of lines on a fresh machine) goes to
# a log; what is printed is one line per phase.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
mkdir -p "$log_dir"
log=$log_dir/setup.log
: >"$log"
t0=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
echo "setup: ${#missing[@]} of ${#packages[@]} packages missing: updating the package lists (log: $log)"
if ! "${sudo_cmd[@]}" apt-get update -q >>"$log" 2>&1; then
  echo "setup: apt-get update failed" >&2; show_log_tail "$log"; exit 1
fi
# What the install brings with its dependencies, from apt's own dry run.
plan=$("${sudo_cmd[@]}" apt-get install -s --no-install-recommends "${missing[@]}" 2>>"$log") || {
  echo "setup: apt-get cannot install: ${missing[*]}" >&2; show_log_tail "$log"; exit 1; }
new=$(awk '$1 == "Inst" {print $2}' <<<"$plan")
count=$(wc -w <<<"$new")
# Their Installed-Size fields (KiB) summed: what the install adds to the disk.
mib=$(apt-cache show --no-all-versions $new 2>>"$log" | awk '/^Installed-Size:/ {s += $2} END {printf "%d", s / 1024}') || mib="?"
echo "setup: installing $count Debian packages (${mib:-?} MiB on disk; 3-6 min on a fresh machine)"
if ! "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$log" 2>&1; then
  echo "setup: apt-get install failed after $(took_since "$t0")" >&2; show_log_tail "$log"; exit 1
fi
echo "setup: done in $(took_since "$t0")"
