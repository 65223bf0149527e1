#!/usr/bin/env bash
# Issue 45's GPU proof on one 4-GPU node, one device call per PHASE (each inside the call's 10 minutes; a run cut
# at DEADLINE stops clean and the same phase again with RESUME=1 goes on). NVLink multicast off in every process.
#
#   lab/gpu_validation/issue45.sh probe [PARTS...]   carry Triton parts (call.sh); the node's facts and ceilings
#                                                    (NVLink, HBM, mm); rank_clock.py: where the W = 4 rank skew
#                                                    comes from (every W = 4 case; the small ones again in a
#                                                    fresh group; the small W = 2 ones on GPUs 0,1)
#   lab/gpu_validation/issue45.sh w4 [PARTS...]      the README's plain command at W = 4, twins included (120
#                                                    cases), golden, TOT, golden again, --artifacts; compare, A/A,
#                                                    explain of the confident regressions, the ranks' figures
#   lab/gpu_validation/issue45.sh w12                golden at W = 2 (GPUs 0,1) and W = 1 (GPUs 2,3, --gpus all)
#                                                    at once, twins and vendors included: the scaling's other two
#   lab/gpu_validation/issue45.sh barrier            rank_clock.py at W = 4 (M <= 16: fused, twins, vendors) under each
#                                                    rank barrier (--barrier harness, twice, vector): can the release
#                                                    be simultaneous? (the skew of the first W = 4 runs was its release)
#   lab/gpu_validation/issue45.sh sweep              suites/sweep_multigpu.yaml, golden, one rep of 10 launches:
#                                                    W = 1 (GPUs 0,1, --gpus all) and W = 2 (GPUs 2,3) at
#                                                    once, then W = 4
#
# Outputs: .harness/gpu/i45-PHASE/, and $OUT/PHASE.tgz (worker logs and compiled kernels left out).
set -euo pipefail
cd "$(dirname "$0")/../.."
export RESULTS=${RESULTS:-.harness/gpu} PYTHONUNBUFFERED=1 TRITON_DEFAULT_FP_FUSION=1
export DEADLINE=${DEADLINE:-$(($(date +%s) + 570))}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export HARNESS_TOT_TRITON=${HARNESS_TOT_TRITON:-/tmp/triton-3.9.0}
phase=$1
shift
D=$RESULTS/i45-$phase
mkdir -p "$D"
resume=${RESUME:+--resume}
MG=suites/multigpu.yaml
h() { python3 -m harness "$@"; }
left() { echo $(( DEADLINE - $(date +%s) )); }
stamp() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$D/timeline.txt"; }
run_cut() {  # a harness run cut at DEADLINE (SIGTERM keeps what it measured; RESUME=1 goes on)
  local t; t=$(left)
  [ "$t" -gt 10 ] || { echo "no time left for: $*"; return 0; }
  timeout -s TERM "$t" python3 -m harness run "$@" || echo "harness run: exit $?"
}
facts() {
  { nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.max.sm --format=csv; nvidia-smi topo -m; date -u
    git log -1 --format=%H; } > "$D/machine.txt" 2>&1 || true
}
bundle() {
  [ -n "${OUT:-}" ] || return 0
  tar czf "$OUT/$phase.tgz" --exclude='*.logs' --exclude='*.artifacts' -C "$RESULTS" "i45-$phase"
}
if [[ ${1:-} == */p[0-9]* ]]; then  # Triton parts carried in this call: gathered, unpacked once all are there
  bash lab/gpu_validation/call.sh "$@"
fi
case $phase in
  probe)
    facts
    stamp "ceilings"
    python3 lab/nvlink_bandwidth.py --out "$D/ceilings.yaml" 2>&1 | tail -4
    python3 lab/gpu_validation/hbm_mm.py >> "$D/ceilings.yaml"
    grep -v "^#" "$D/ceilings.yaml"
    RC=(python3 -m torch.distributed.run --standalone)
    stamp "rank clock W=4, every case"
    timeout -s TERM "$(left)" "${RC[@]}" --nproc-per-node 4 lab/gpu_validation/rank_clock.py --filter '_W4' \
      --launches 30 --out "$D/w4.json" > "$D/w4.txt" 2>&1 || echo "rank_clock w4: exit $?"
    tail -n 5 "$D/w4.txt"
    stamp "rank clock W=4 again, M <= 16, a fresh group"
    timeout -s TERM "$(left)" "${RC[@]}" --nproc-per-node 4 lab/gpu_validation/rank_clock.py \
      --filter '/M(1|16)_.*_W4' --launches 30 --out "$D/w4-again.json" > "$D/w4-again.txt" 2>&1 || echo "exit $?"
    tail -n 3 "$D/w4-again.txt"
    stamp "rank clock W=2, M <= 16, GPUs 0,1"
    CUDA_VISIBLE_DEVICES=0,1 timeout -s TERM "$(left)" "${RC[@]}" --nproc-per-node 2 \
      lab/gpu_validation/rank_clock.py --filter '/M(1|16)_.*_W2' --launches 30 --out "$D/w2.json" \
      > "$D/w2.txt" 2>&1 || echo "rank_clock w2: exit $?"
    tail -n 3 "$D/w2.txt"
    stamp "probe end"
    bundle
    ;;
  w4)
    facts
    stamp "w4 three-way start"
    run_cut --env envs/golden.yaml --out "$D/golden.csv" --with-env envs/tot.yaml --with-out "$D/tot.csv" \
      --with-env envs/golden.yaml --with-out "$D/golden-aa.csv" --suite $MG --filter '_W4(_cfg-SCATTERnone)?$' \
      --artifacts $resume > "$D/run.txt" 2>&1
    stamp "w4 three-way end"
    tail -n 4 "$D/run.txt"
    if [ "$(left)" -gt 20 ]; then
      h compare "$D/golden.csv" "$D/tot.csv" --out "$D/compare.csv" --markdown "$D/compare.md" > "$D/compare.txt" 2>&1 || true
      h compare "$D/golden.csv" "$D/golden-aa.csv" --out "$D/compare-aa.csv" --markdown "$D/compare-aa.md" \
        > "$D/compare-aa.txt" 2>&1 || true
      h explain "$D/compare.csv" --out "$D/explain" > "$D/explain.txt" 2>&1 || true
      tail -n 3 "$D/explain.txt"
      python3 lab/gpu_validation/multigpu_stats.py "$D" > "$D/stats.txt" 2>&1 || true
      python3 lab/gpu_validation/confirm_stats.py "$D" > "$D/confirm.txt" 2>&1 || true
      head -n 30 "$D/stats.txt"
    fi
    bundle
    ;;
  w12)
    facts
    stamp "w12 start"
    ( export CUDA_VISIBLE_DEVICES=0,1
      run_cut --env envs/golden.yaml --out "$D/w2-golden.csv" --suite $MG --filter '_W2(_cfg-SCATTERnone)?$' \
        $resume > "$D/w2.txt" 2>&1 ) &
    ( export CUDA_VISIBLE_DEVICES=2,3
      run_cut --env envs/golden.yaml --out "$D/w1-golden.csv" --suite $MG --filter '^(?!.*_W\d)' --gpus all \
        $resume > "$D/w1.txt" 2>&1 ) &
    wait
    stamp "w12 end"
    tail -n 3 "$D/w2.txt" "$D/w1.txt"
    bundle
    ;;
  barrier)
    facts
    for b in harness twice vector; do
      stamp "rank clock W=4, barrier $b"
      timeout -s TERM "$(left)" python3 -m torch.distributed.run --standalone --nproc-per-node 4 \
        lab/gpu_validation/rank_clock.py --filter '/M(1|16)_.*_W4' --launches 30 --barrier $b \
        --out "$D/barrier-$b.json" > "$D/barrier-$b.txt" 2>&1 || echo "rank_clock $b: exit $?"
    done
    python3 lab/gpu_validation/rank_clock.py --summarize "$D"/barrier-*.json | tee "$D/summary.txt"
    bundle
    ;;
  sweep)
    facts
    S=suites/sweep_multigpu.yaml
    stamp "sweep W=1,2 start"
    ( export CUDA_VISIBLE_DEVICES=0,1
      run_cut --env envs/golden.yaml --suite $S --filter '^(?!.*_W\d)' --out "$D/sweep-w1.csv" --reps 1 \
        --launches 10 --compile-jobs 16 --gpus all --resume > "$D/sweep-w1.txt" 2>&1 ) &
    ( export CUDA_VISIBLE_DEVICES=2,3
      run_cut --env envs/golden.yaml --suite $S --filter '_W2_' --out "$D/sweep-w2.csv" --reps 1 --launches 10 \
        --compile-jobs 16 --resume > "$D/sweep-w2.txt" 2>&1 ) &
    wait
    stamp "sweep W=4 start"
    run_cut --env envs/golden.yaml --suite $S --filter '_W4_' --out "$D/sweep-w4.csv" --reps 1 --launches 10 \
      --compile-jobs 16 --resume > "$D/sweep-w4.txt" 2>&1
    stamp "sweep end"
    tail -n 2 "$D"/sweep-w*.txt
    bundle
    ;;
  *)
    echo "issue45.sh: unknown phase $phase" >&2
    exit 2
    ;;
esac
