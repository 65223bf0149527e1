#!/usr/bin/env bash
# Issue 42's GPU proof, one device call per PHASE (each well inside the call's 10 minutes; a phase cut at DEADLINE
# stops clean and the same phase again with RESUME=1 goes on). Every run is `run.sh plain`: the README's plain
# command, golden, TOT and golden again interleaved, then the plain compare of each pair; the method of before
# (--processes 1) runs beside it on other GPUs of the same node, at the same time, for the cost.
#
#   lab/gpu_validation/issue42.sh stage PARTS...      carry Triton parts (call.sh), unpack when all are there
#   lab/gpu_validation/issue42.sh w2                  W = 2 (80 cases): new on GPUs 0,1; before on 2,3 (a 4-GPU node)
#   lab/gpu_validation/issue42.sh w2-alone            W = 2, new only, on GPUs 0,1 (a 2-GPU node)
#   lab/gpu_validation/issue42.sh w4                  W = 4 (80 cases), new, every GPU
#   lab/gpu_validation/issue42.sh library             suites/library.yaml --gpus all, new
#   lab/gpu_validation/issue42.sh w1                  W = 1 (80 cases) --gpus all: new, then before
#
# Outputs: .harness/gpu/plain-TAG/ (results, sidecars, comparisons, stats.txt), and $OUT/PHASE.tgz.
set -euo pipefail
cd "$(dirname "$0")/../.."
export RESULTS=${RESULTS:-.harness/gpu} PYTHONUNBUFFERED=1
export DEADLINE=${DEADLINE:-$(($(date +%s) + 570))}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$RESULTS"
phase=$1
shift
resume=${RESUME:+--resume}
plain() {  # TAG SUITE FILTER GPUS RUN_ARGS
  TAG=$1 SUITE=$2 FILTER=$3 GPUS=$4 RUN_ARGS="$5 $resume" bash lab/gpu_validation/run.sh plain
}
facts() {
  { nvidia-smi --query-gpu=index,name,uuid,driver_version --format=csv; nvidia-smi topo -m; date -u; git log -1 --format=%H; } \
    > "$RESULTS/machine-$phase.txt" 2>&1 || true
}
bundle() {  # the phase's folders, without worker logs and compiled kernels, into $OUT
  [ -n "${OUT:-}" ] || return 0
  tar czf "$OUT/$phase.tgz" --exclude='*.logs' --exclude='*.artifacts' -C "$RESULTS" "$@" "machine-$phase.txt"
  tar czf "$OUT/$phase-logs.tgz" -C "$RESULTS" $(cd "$RESULTS" && find "$@" -maxdepth 1 -name '*.logs') 2>/dev/null || true
}
MG=suites/multigpu.yaml
case $phase in
  stage)
    bash lab/gpu_validation/call.sh "$@"
    nvidia-smi -L
    ;;
  w2)
    facts
    plain w2 $MG '_W2$' 0,1 "" > "$RESULTS/w2.out" 2>&1 &
    plain w2-before $MG '_W2$' 2,3 "--processes 1" > "$RESULTS/w2-before.out" 2>&1 &
    wait
    tail -n 12 "$RESULTS/w2.out" "$RESULTS/w2-before.out"
    bundle plain-w2 plain-w2-before
    ;;
  w2-alone)
    facts
    plain w2 $MG '_W2$' 0,1 "" 2>&1 | tail -n 14
    bundle plain-w2
    ;;
  w4)
    facts
    plain w4 $MG '_W4$' "" "" 2>&1 | tail -n 14
    bundle plain-w4
    ;;
  library)
    facts
    plain library suites/library.yaml "" "" "--gpus all" 2>&1 | tail -n 14
    bundle plain-library
    ;;
  w1)
    facts
    plain w1 $MG '^(?!.*_W\d)(?!.*SCATTERnone)' "" "--gpus all" 2>&1 | tail -n 14
    plain w1-before $MG '^(?!.*_W\d)(?!.*SCATTERnone)' "" "--gpus all --processes 1" 2>&1 | tail -n 14
    bundle plain-w1 plain-w1-before
    ;;
  *)
    echo "issue42.sh: unknown phase $phase" >&2
    exit 2
    ;;
esac
