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
cp "$src/dashboard.js" "$src/dashboard.css" "$out/assets/"
cp "$dyg/dygraph.min.js" "$dyg/dygraph.min.css" "$out/assets/"
rm -f "$out"/data/*.js
cp "$here"/data/*.js "$out/data/"
echo "$out/index.html"
