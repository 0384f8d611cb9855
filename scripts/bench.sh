#!/usr/bin/env bash
# Builds and runs the benchmarks with repetitions; prints medians.
#   scripts/bench.sh            all
# Numbers on shared 2-core machines are noisy: compare ratios measured in one run.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
"$repo_root/scripts/setup.sh"
configure_and_build -DPERFGATE_ENABLE_BENCHMARKS=ON
cd "$build_dir/tests/bench"
reps=${PERFGATE_BENCH_REPS:-5}
./bench_trial_overhead --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true
./bench_ingest --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true
./bench_stats --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true
./bench_gate --benchmark_repetitions="$reps" --benchmark_report_aggregates_only=true
# Verdict quality of the gate on simulated data (docs/statistics.md, "Calibration").
./gate_calibration --gates "${PERFGATE_CALIBRATION_GATES:-200}"
/usr/bin/python3 "$repo_root/tests/bench/ingest_e2e.py" "$build_dir/perfgate" --repeats "$reps"
# The same for a Megatron log on stdout read by the megatron preset; peak RSS flat in the log's length.
/usr/bin/python3 "$repo_root/tests/bench/ingest_e2e.py" "$build_dir/perfgate" --repeats 3 --format megatron --records 100000
/usr/bin/python3 "$repo_root/tests/bench/ingest_e2e.py" "$build_dir/perfgate" --repeats 3 --format megatron --records 1000000
# Peak RSS of a 72-hour soak's worth of step records (5.2M) through `perfgate soak`.
/usr/bin/python3 "$repo_root/tests/bench/soak_memory.py" "$build_dir/perfgate" --repeats 3
# perfgate dashboard over 1,000 runs and a 5M-sample soak: time, size, page readiness in headless Chromium.
/usr/bin/python3 "$repo_root/tests/bench/dashboard_scale.py" "$build_dir/perfgate" --repeats 3
rm -rf bench-scratch
