#!/bin/bash
# Smoke test of the front-end on the sample data in headless Chromium:
# every route must reach data-ready="1" with an empty #pg-errors, no console
# errors, and the hostile strings of the sample must stay text.
#   dashboards/sample/check.sh [OUTDIR]       (default: a temporary directory)
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$(mktemp -d)}
"$here/assemble.sh" "$out" >/dev/null || exit 1
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome) || { echo "no chromium"; exit 2; }
fail=0
routes=(/overview /runs /run/57 /sweep/57 '/sweep/57?metric=throughput&x=dataloader.num_workers&y=bucket_mb'
        /trend/nightly '/trend/nightly?metric=*' '/trend/sweep-bucket?filter=%3Cimg' /soak/58
        '/trend/ops%2F%3Cb%3E%CE%B2%3C%2Fb%3E%20%26%20%22q%22' /run/999 /nonsense)
for r in "${routes[@]}"; do
  dom=$("$chrome" --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 --enable-logging=stderr --v=0 \
        --dump-dom "file://$out/index.html#$r" 2>"$out/stderr.txt")
  body=$(grep -o '<body[^>]*>' <<<"$dom" | head -1)
  errs=$(tr '\n' ' ' <<<"$dom" | grep -o '<pre id="pg-errors"[^>]*>[^<]*</pre>' | sed 's/<[^>]*>//g')
  cons=$(grep -E 'Uncaught|CONSOLE.*"\[perfgate\]' "$out/stderr.txt" | grep -v 'could not be loaded' | head -3)
  bad=$(grep -c '<img src="x"\|<script>alert' <<<"$dom")
  status=ok
  grep -q 'data-ready="1"' <<<"$body" || status="not ready"
  [ -n "${errs// /}" ] && status="errors: $errs"
  [ -n "$cons" ] && status="console: $cons"
  [ "$bad" != 0 ] && status="markup from data in the DOM"
  [ "$status" = ok ] || fail=1
  printf '%-70s %-8s %s\n' "$r" "$status" "$(grep -o 'data-page="[^"]*"\|data-charts="[^"]*"\|data-ready-ms="[^"]*"' <<<"$body" | tr '\n' ' ')"
done
exit $fail
