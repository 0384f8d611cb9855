# Sourced by the other scripts: one build directory, one set of build flags,
# Debian's python3 first.
#
# scripts/demo.sh and scripts/test.sh configure the build folder identically
# (tests registered, warnings as errors, the same ccache launcher), so the
# objects the demo compiles are the ones the tests link: the demo builds only
# what it runs (perfgate, perfgate-sim), and a test.sh after it compiles only
# the tests. Debian's python3 carries python3-torch / numpy / scipy; a pyenv
# or venv python earlier on PATH would not, so the shipped workloads would fail.
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${PERFGATE_BUILD_DIR:-$repo_root/build}
log_dir=$build_dir/logs
export PATH=/usr/bin:/bin:$PATH
jobs=${PERFGATE_JOBS:-2}

# Seconds since `$1` (a `date +%s`), as "1 min 05 s" or "42 s".
took_since() {
  local s=$(($(date +%s) - $1))
  if [ "$s" -ge 60 ]; then printf '%d min %02d s' $((s / 60)) $((s % 60)); else printf '%d s' "$s"; fi
}

# Prints the end of a phase's log after a failure, and where the whole log is.
show_log_tail() {
  echo "--- last lines of $1:" >&2
  tail -n "${2:-40}" "$1" >&2
  echo "--- (whole log: $1)" >&2
}

# Configures the build folder (always with the same options) and builds the
# given targets (all when none are given). The build's own output goes to
# $log_dir/build.log; on a terminal one line shows its progress, redrawn.
configure_and_build() {
  mkdir -p "$log_dir"
  # ccache is looked for here, after setup.sh installed it, so the first
  # compile of a fresh machine goes through it too. It is keyed by paths
  # relative to the checkout (base_dir) and not by the build folder (no
  # hash_dir), so a clean clone in another folder reuses what an earlier
  # build compiled; the cache lives in ~/.cache/ccache unless CCACHE_DIR says.
  local launcher=()
  if command -v ccache >/dev/null 2>&1 && [ "${PERFGATE_CCACHE:-1}" != 0 ]; then
    export CCACHE_BASEDIR=$repo_root CCACHE_NOHASHDIR=1
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    ccache --zero-stats >/dev/null 2>&1 || true
  fi
  local ctest_jobs=${PERFGATE_TEST_JOBS:-$(($(nproc) + 2))}
  local t0 targets=() what="everything" log=$log_dir/build.log
  t0=$(date +%s)
  for t in "$@"; do targets+=(--target "$t"); done
  [ $# -gt 0 ] && what="$*"
  echo "build: $what in $build_dir (-j$jobs; log: $log)"
  if ! cmake -S "$repo_root" -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DPython3_EXECUTABLE=/usr/bin/python3 -DPERFGATE_ENABLE_TESTS=ON -DPERFGATE_WERROR=ON \
    -DPERFGATE_CTEST_JOBS="$ctest_jobs" "${launcher[@]}" >"$log" 2>&1; then
    echo "build: cmake could not configure the build" >&2
    show_log_tail "$log"
    return 1
  fi
  local status
  if [ -t 1 ]; then
    # One line, redrawn with make's percentage.
    set +e
    cmake --build "$build_dir" -j"$jobs" "${targets[@]}" 2>&1 | tee -a "$log" |
      while IFS= read -r line; do
        if [[ "$line" =~ ^\[\ *([0-9]+)%\] ]]; then printf '\rbuild: %3s%%' "${BASH_REMATCH[1]}"; fi
      done
    status=${PIPESTATUS[0]}
    set -e
    printf '\r'
  else
    set +e
    cmake --build "$build_dir" -j"$jobs" "${targets[@]}" >>"$log" 2>&1
    status=$?
    set -e
  fi
  if [ "$status" -ne 0 ]; then
    echo "build: failed after $(took_since "$t0")" >&2
    show_log_tail "$log"
    return 1
  fi
  local cache=""
  if [ ${#launcher[@]} -gt 0 ]; then
    # ccache 4.7's --print-stats (machine-readable): this build's hits and misses (zeroed above).
    local hits misses
    hits=$(ccache --print-stats 2>/dev/null | awk '$1 ~ /^(direct_cache_hit|preprocessed_cache_hit)$/ {s += $2} END {print s + 0}')
    misses=$(ccache --print-stats 2>/dev/null | awk '$1 == "cache_miss" {print $2 + 0}')
    cache=" (ccache: ${hits:-0} of $((${hits:-0} + ${misses:-0})) from the cache)"
  fi
  local compiled
  compiled=$(grep -c 'Building CXX object' "$log" || true)
  echo "build: done in $(took_since "$t0"): $compiled objects built$cache"
}
