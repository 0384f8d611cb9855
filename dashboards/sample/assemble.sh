#!/bin/sh
# Builds a runnable dashboard from the front-end sources and the sample data:
#   dashboards/sample/assemble.sh /tmp/pgdash && open /tmp/pgdash/index.html
# The same layout `perfgate dashboard --out DIR` writes.
set -eu
out=${1:?usage: assemble.sh OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
dyg=${DYGRAPHS_DIR:-/usr/share/javascript/dygraphs}
mkdir -p "$out/assets" "$out/data"
cp "$src/index.html" "$out/index.html"
cp "$src"/pg-*.js "$src/dashboard.css" "$out/assets/"
cp "$dyg/dygraph.min.js" "$dyg/dygraph.min.css" "$out/assets/"
rm -f "$out"/data/*.js
# The sample data is generated (deterministically), not kept in git.
python3 "$here/generate.py" --out "$out" >/dev/null
echo "$out/index.html"
