#!/usr/bin/env bash
# Tune sm90 configs on the GPU: run the sweep suite (1 rep of 10 launches per config, resumable), then write the
# fastest config per (kernel, N, K, M bucket) to kernels/configs/ and the sweep data to reports/tuning/.
set -euo pipefail
cd "$(dirname "$0")/.."
R=${RESULTS:-reports/tuning}
mkdir -p "$R"
python3 -m harness run --env envs/golden.yaml --suite suites/sweep_sm90.yaml --out "$R/sweep-sm90.csv" \
  --reps 1 --launches 10 --timeout 300 --resume "$@"
python3 benchmarks/tune_pick.py "$R/sweep-sm90.csv" --arch sm90 --summary "$R/picked-sm90.md"
