#!/usr/bin/env bash
# Issue 44 item 4: FlagGems (flag-gems 5.0.2 from PyPI, its wheel carried in .stage/flaggems/: the node has no
# registry) through examples/flaggems/flaggems.yaml as the README runs any suite: golden, TOT and golden again
# interleaved (run.sh plain), FlagGems unpacked once and put on the path by the suite's `library:`.
#   lab/gpu_validation/flaggems.sh [FILTER]     outputs: .harness/gpu/plain-flaggems/, $OUT/flaggems.tgz
set -euo pipefail
cd "$(dirname "$0")/../.."
export RESULTS=${RESULTS:-.harness/gpu} PYTHONUNBUFFERED=1
export FLAGGEMS=${FLAGGEMS:-/tmp/flaggems} GEMS_VENDOR=nvidia FLAGGEMS_CACHE_DIR=${FLAGGEMS_CACHE_DIR:-/tmp/flaggems-cache}
[ -d "$FLAGGEMS/flag_gems" ] || python3 -m zipfile -e .stage/flaggems/flag_gems-*.whl "$FLAGGEMS"
# its one dependency the node's Python lacks (no registry there): SQLAlchemy, for FlagGems' tuning cache
python3 -c "import sqlalchemy" 2>/dev/null || [ -d "$FLAGGEMS/sqlalchemy" ] ||
  python3 -m zipfile -e .stage/flaggems/sqlalchemy-*.whl "$FLAGGEMS"
PYTHONPATH=$FLAGGEMS python3 -c "import flag_gems, triton; print('flag_gems', flag_gems.__version__, 'triton', triton.__version__)" 2>&1 | tail -1
nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv > "$RESULTS/machine-flaggems.txt" 2>&1 || true
TAG=flaggems SUITE=examples/flaggems/flaggems.yaml FILTER=${1:-} bash lab/gpu_validation/run.sh plain
M=$RESULTS/plain-flaggems
python3 - "$M" <<'PY'
import csv, sys
for env in ("golden", "tot", "golden-aa"):
    rows = list(csv.DictReader(open(f"{sys.argv[1]}/{env}.csv")))
    for r in rows:
        print(env, r["kernel"], r["case_id"], r["status"], r.get("time_us", ""), r["config"][:70], (r["error"] or "")[:160])
PY
tail -25 "$M/compare.txt"
python3 lab/gpu_validation/clock_stats.py "$M"/golden.csv "$M"/tot.csv "$M"/golden-aa.csv > "$M/clocks.txt" 2>&1 || true
head -30 "$M/clocks.txt"
# the worst confident regression's compiled code, golden against TOT (needs RUN_ARGS=--artifacts)
if [ -d "$M/golden.csv.artifacts" ] || ls "$M"/*.artifacts >/dev/null 2>&1; then
  python3 -m harness explain "$M/compare.csv" --out "$M/explain" --limit 3 > "$M/explain.txt" 2>&1 || true
  tail -15 "$M/explain.txt"
fi
[ -n "${OUT:-}" ] && tar czf "$OUT/flaggems.tgz" --exclude='*.artifacts' -C "$RESULTS" plain-flaggems machine-flaggems.txt
