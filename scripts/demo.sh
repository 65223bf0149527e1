#!/usr/bin/env bash
# The main job on an embedded default, on a CPU-only machine: two real environments (Triton 3.6.0 = golden,
# Triton 3.9.0 = TOT, both over the base torch), the CI suite under TRITON_INTERPRET=1 with wallclock timing
# (labelled as such), then the comparison. On a GPU node use scripts/run_golden.sh / run_tot.sh directly.
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
ENV_SPEC=envs/venv-golden.yaml OUT_CSV=$out/golden.csv bash scripts/run_golden.sh "${extra[@]}"
ENV_SPEC=envs/venv-tot.yaml OUT_CSV=$out/tot.csv bash scripts/run_tot.sh "${extra[@]}"
python3 -m harness compare "$out/golden.csv" "$out/tot.csv" --out "$out/compare.csv" --markdown "$out/compare.md"
python3 -m harness report --compare "$out/compare.csv" --out "$out/report" --title "demo: CPU interpreter, wallclock"
echo "wrote $out/{golden,tot}.csv (+ .env.json), compare.csv, compare.md, report/index.html"
