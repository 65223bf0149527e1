#!/usr/bin/env bash
# Tune sm90 configs on the GPU: run a sweep suite (1 rep of 10 launches per config, resumable), then write the
# fastest config per (kernel, N, K, M bucket) to kernels/configs/ and the sweep data to reports/tuning/.
#   SWEEP   the sweep suite (default suites/sweep_sm90.yaml); results go to $RESULTS/<suite name>.csv
#   extra arguments go to `harness run` (e.g. --compile-jobs 0 to compile on every core first)
set -euo pipefail
cd "$(dirname "$0")/.."
R=${RESULTS:-reports/tuning}
SWEEP=${SWEEP:-suites/sweep_sm90.yaml}
NAME=$(basename "$SWEEP" .yaml)
NAME=${NAME//_/-}
mkdir -p "$R"
python3 -m harness run --env envs/golden.yaml --suite "$SWEEP" --out "$R/$NAME.csv" \
  --reps 1 --launches 10 --timeout 300 --resume "$@"
python3 benchmarks/tune_pick.py "$R/$NAME.csv" --arch sm90 --summary "$R/picked-${NAME#sweep-}.md"
