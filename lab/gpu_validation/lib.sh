# Sourced by lab/gpu_validation/run.sh and experiments.sh: the settings and helpers every step uses.
# shellcheck shell=bash
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export HARNESS_TOT_TRITON=${HARNESS_TOT_TRITON:-/tmp/triton-3.9.0}
export TRITON_DEFAULT_FP_FUSION=1 PYTHONUNBUFFERED=1
R=${RESULTS:-reports/gpu-validation}
SUITE=${SUITE:-suites/batched_gemm.yaml}
mkdir -p "$R"
# the staged wheel's tools (ptxas-blackwell, cuobjdump, ...) must be executable
[ -d "$HARNESS_TOT_TRITON/triton/backends/nvidia/bin" ] && chmod +x "$HARNESS_TOT_TRITON"/triton/backends/nvidia/bin/* || true
h() { python3 -m harness "$@"; }
# a harness run cut at TIMEOUT seconds, or at the epoch second DEADLINE (the device's per-call limit): SIGTERM keeps
# what it measured (exit 143) and a later call resumes it
hrun() {
  local rc=0 t=${TIMEOUT:-100000}
  [ -n "${DEADLINE:-}" ] && t=$(( DEADLINE - $(date +%s) )) && [ "$t" -gt 5 ] || { [ -z "${DEADLINE:-}" ] || { echo "harness run: no time left"; return 0; }; }
  timeout -s TERM "$t" python3 -m harness run "$@" || rc=$?
  [ $rc = 0 ] || echo "harness run: exit $rc"
}
# `harness bisect`, cut like hrun; --resume: a later call goes on where the last one stopped
hbisect() {
  local rc=0 t=${TIMEOUT:-100000}
  [ -n "${DEADLINE:-}" ] && t=$(( DEADLINE - $(date +%s) )) && [ "$t" -gt 5 ] || { [ -z "${DEADLINE:-}" ] || { echo "harness bisect: no time left"; return 0; }; }
  timeout -s TERM "$t" python3 -m harness bisect "$@" --resume || rc=$?
  [ $rc = 0 ] || echo "harness bisect: exit $rc"
}
# `harness retune` cut the same way (SIGTERM: it stops clean; the same command again resumes from its --out)
hretune() {
  local rc=0 t=${TIMEOUT:-100000}
  [ -n "${DEADLINE:-}" ] && t=$(( DEADLINE - $(date +%s) )) && [ "$t" -gt 5 ] || { [ -z "${DEADLINE:-}" ] || { echo "harness retune: no time left"; return 0; }; }
  timeout -s TERM "$t" python3 -m harness retune "$@" || rc=$?
  [ $rc = 0 ] || echo "harness retune: exit $rc (143: cut short; run the step again to resume)"
}
CONFIGS=${CONFIGS:-}
[ -n "$CONFIGS" ] && [ -d "$CONFIGS" ] && export HARNESS_CONFIG_DIR=$CONFIGS
# a folder's comparisons: BASE vs NEW (compare.*), judged with the A/A's process noise (--aa), and BASE vs AGAIN,
# the A/A itself (compare-aa.*), each with its markdown
compare_with_aa() {
  local d=$1 base=$2 new=$3 again=$4
  h compare "$d/$base.csv" "$d/$new.csv" --out "$d/compare.csv" --markdown "$d/compare.md" --worst 15 \
    --aa "$d/$again.csv" > "$d/compare.txt" 2>&1 || true
  h compare "$d/$base.csv" "$d/$again.csv" --out "$d/compare-aa.csv" --markdown "$d/compare-aa.md" \
    > "$d/compare-aa.txt" 2>&1 || true
}
tot_py() { PYTHONPATH="$HARNESS_TOT_TRITON${PYTHONPATH:+:$PYTHONPATH}" python3 "$@"; }
stamp() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$R/timeline.txt"; }


# the device tool brings back at most 8 files of 16 MiB: results, worker logs, compiled kernels
pack_out() {
  [ -n "${OUT:-}" ] && [ -z "${LAB_NESTED:-}" ] || return 0
  tar czf "$OUT/results.tgz" --exclude='*.artifacts' --exclude='*.logs' "$R"
  tar czf "$OUT/logs.tgz" "$R"/*.logs "$R"/*/*.logs 2>/dev/null || true
  for s in golden tot; do
    [ -d "$R/$s.artifacts" ] && tar cJf "$OUT/artifacts-$s.txz" -C "$R" "$s.artifacts"
  done
  ls -la "$OUT"
}
