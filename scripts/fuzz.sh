#!/usr/bin/env bash
# Builds perfgate's libFuzzer targets (tests/fuzz) with clang-14, ASan and
# UBSan in build-fuzz/ and runs each, then prints per target: executions,
# executions/s, coverage (libFuzzer's cov: edges and ft: features), corpus
# size and findings.
#
#   scripts/fuzz.sh [SECONDS] [--runs N] [--max-len BYTES] [--parallel J] [TARGET...]
#
# SECONDS (default 60) bounds each target's time; --runs N stops it after N
# executions instead (whichever comes first when both are given). --max-len
# (default 65536) is the largest input libFuzzer makes: 4096 runs the suite
# target 7.6 times as fast (536 -> 4,063 executions/s, with more coverage in
# the same 20 s), while the regression corpus holds the big inputs. J targets
# run at once (default 1).
#
# Each run starts from build-fuzz/corpus/<target> (what earlier runs found),
# the checked-in regression corpus tests/fuzz/corpus/<target> and the
# project's own inputs of that kind. A crash, leak or an input slower than
# 1 s is written to build-fuzz/artifacts/<target>/; copy it into
# tests/fuzz/corpus/<target>/ with the fix, so the default tests replay it.
# Exit 1 when anything was found or a target did not run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$repo_root/scripts/setup.sh" --fuzz
seconds=60 runs=-1 max_len=65536 parallel=1 targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; seconds=${seconds_given:-0}; shift 2 ;;
    --max-len) max_len=$2; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    [0-9]*) seconds=$1 seconds_given=$1; shift ;;
    *) targets+=("$1"); shift ;;
  esac
done
fuzz_dir=${PERFGATE_FUZZ_DIR:-$repo_root/build-fuzz}
all=(suite profile policy checklist protocol log_presets regex_parser device_tools gbench cli_values)
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

cmake -S "$repo_root" -B "$fuzz_dir" -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPERFGATE_ENABLE_TESTS=OFF -DPERFGATE_ENABLE_FUZZING=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" "${launcher[@]}" >/dev/null
cmake --build "$fuzz_dir" -j"$jobs" --target "${targets[@]/#/fuzz_}"

# The project's own inputs of a target's kind: tests/fuzz/seeds.txt, which
# the replays in the default tests read too. libFuzzer takes only folders as
# corpora (a file among them ends it: "Not a directory"), so files named
# there are copied into build-fuzz/seeds/<target>/.
seeds_of() {
  local target rest file_seeds="$fuzz_dir/seeds/$1"
  rm -rf "$file_seeds"
  while read -r target rest; do
    [ "$target" = "$1" ] || continue
    for p in $rest; do
      if [ -d "$repo_root/$p" ]; then
        echo "$repo_root/$p"
      else
        mkdir -p "$file_seeds"
        cp "$repo_root/$p" "$file_seeds/"
      fi
    done
  done < <(grep -v '^#' "$repo_root/tests/fuzz/seeds.txt")
  if [ -d "$file_seeds" ]; then echo "$file_seeds"; fi
}

# ASan keeps the stack of every allocation (malloc_context_size frames) in a
# depot that only grows: at the default 30 frames yaml-cpp's recursion made
# new stacks for hours, the depot's lookups took a third of the time and the
# rates fell by half. Four frames say where an allocation was made; a finding
# is rerun with the defaults for its whole story. A smaller quarantine (64 MB
# instead of 256) is recycled in smaller batches: two inputs of 26 and 46 ms
# were reported as 1 s timeouts while the 256 MB quarantine was recycled on a
# machine running other work. Both such timeouts since (an 11 ms suite, an
# 11 ms protocol input, 3 of 3 replays each) were caught inside ASan's
# release of freed pages to the kernel (madvise) while the whole test suite
# ran beside the fuzzers; freed pages are kept instead (the RSS limit below
# still bounds them).
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:malloc_context_size=4:quarantine_size_mb=64:allocator_release_to_os_interval_ms=-1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# One target's run, its log in build-fuzz/<target>.log.
fuzz_one() {
  local t=$1 work="$fuzz_dir/corpus/$1" artifacts="$fuzz_dir/artifacts/$1"
  mkdir -p "$work" "$artifacts"
  # shellcheck disable=SC2046
  # -malloc_limit_mb: no single allocation over 2 GB (an input that asks for
  # unbounded memory). The whole process may reach 4 GB: ASan's quarantine
  # and caches keep a long run near 1 GB, and libFuzzer purges them every
  # second once its peak passes half the RSS limit, which cost the profile
  # target 40 % of its time in madvise and page faults with a 2 GB limit.
  "$fuzz_dir/fuzz/fuzz_$t" -max_total_time="$seconds" -runs="$runs" -timeout=1 -rss_limit_mb=4096 \
    -malloc_limit_mb=2048 -purge_allocator_interval=-1 -max_len="$max_len" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" \
    "$work" "$repo_root/tests/fuzz/corpus/$t" $(seeds_of "$t") >"$fuzz_dir/$t.log" 2>&1 || true
}

# Findings are what this run wrote: an artifact left by an earlier run (kept
# until someone moves it into the regression corpus) is not counted again.
started=$(mktemp)
trap 'rm -f "$started"' EXIT
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do wait -n || true; done
  fuzz_one "$t" &
done
wait

found=0
printf '%-14s %12s %10s %8s %8s %8s %s\n' target execs execs/s cov ft corpus findings
for t in "${targets[@]}"; do
  log="$fuzz_dir/$t.log" artifacts="$fuzz_dir/artifacts/$t"
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corpus=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  n=$(find "$artifacts" -type f -newer "$started" | wc -l)
  findings=none
  if [ "$n" -gt 0 ]; then found=1; findings="$n in $artifacts (log $log)"; fi
  # A fuzzer that never started (a bad corpus path, a missing binary) prints
  # no final statistics: that is a failed run, not a clean one.
  if [ -z "$execs" ]; then found=1; findings="did not run: $(tail -1 "$log") (log $log)"; fi
  printf '%-14s %12s %10s %8s %8s %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "${corpus:-?}" \
    "$findings"
done
exit $found
