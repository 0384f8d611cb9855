#!/usr/bin/env bash
# Runs a command with N busy loops beside it, the load the timing tests must
# stand (docs/testing.md): each loop is a shell spinning on one CPU's worth of
# arithmetic, at the default priority, for as long as the command runs.
#
#   scripts/busy.sh N COMMAND [ARG...]     e.g. scripts/busy.sh 8 ctest -L timing
#
# Exits with the command's status. The loops end with the command, on Ctrl-C
# too.
set -uo pipefail
if [ $# -lt 2 ] || ! [[ "$1" =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/busy.sh N COMMAND [ARG...]" >&2
  exit 2
fi
n=$1
shift
pids=()
stop_loops() {
  if [ ${#pids[@]} -gt 0 ]; then kill "${pids[@]}" 2>/dev/null; wait "${pids[@]}" 2>/dev/null; fi
  pids=()
}
trap stop_loops EXIT
trap 'stop_loops; exit 130' INT TERM
for ((i = 0; i < n; i++)); do
  # A subshell of pure arithmetic: no system calls, one CPU's worth of demand.
  (x=0; while :; do x=$(((x + 1) % 1000003)); done) &
  pids+=($!)
done
echo "busy: $n busy loops beside: $*" >&2
"$@"
rc=$?
stop_loops
exit $rc
