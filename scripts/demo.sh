#!/usr/bin/env bash
# The main job on an embedded default: compare the example golden/TOT results shipped in the repo.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT_DIR:-reports/demo}
mkdir -p "$out"
harness compare examples/golden.csv examples/tot.csv --out "$out/compare.csv" --markdown "$out/compare.md"
echo "wrote $out/compare.csv and $out/compare.md"
