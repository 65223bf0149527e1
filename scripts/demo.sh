#!/usr/bin/env bash
# The main job on an embedded default, on a CPU-only machine: two real environments (Triton 3.6.0 = golden,
# Triton 3.9.0 = TOT, both over the base torch), the CI suite under TRITON_INTERPRET=1 with wallclock timing
# (labelled as such), interleaved in one run as on a GPU node, then the comparison.
# HARNESS_RUN_ARGS adds `harness run` options to both runs (tests/test_pipeline.py: "--launches 1").
set -euo pipefail
cd "$(dirname "$0")/.."
out=${DEMO_DIR:-reports/demo}
mkdir -p "$out"
python3 -m harness env create envs/venv-golden.yaml >/dev/null
python3 -m harness env create envs/venv-tot.yaml >/dev/null
export SUITE=${SUITE:-suites/ci.yaml}
read -r -a extra <<<"${HARNESS_RUN_ARGS:-}"
rm -rf "$out"/golden.csv* "$out"/tot.csv*  # results, sidecars, journals, worker logs of a previous demo
# the plain command: golden and TOT interleaved in one run, every flag confirmed in fresh processes
python3 -m harness run --env envs/venv-golden.yaml --out "$out/golden.csv" --with-env envs/venv-tot.yaml \
  --with-out "$out/tot.csv" --suite "$SUITE" "${extra[@]}"
python3 -m harness compare "$out/golden.csv" "$out/tot.csv" --out "$out/compare.csv" --markdown "$out/compare.md"
python3 -m harness report --compare "$out/compare.csv" --out "$out/report" --title "demo: CPU interpreter, wallclock"
echo "wrote $out/{golden,tot}.csv (+ .env.json), compare.csv, compare.md, report/index.html"
