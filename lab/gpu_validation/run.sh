#!/usr/bin/env bash
# GPU validation, the steps a maintainer re-runs: golden (the machine's Triton) vs TOT (a second Triton on an
# overlay path) on one or more CUDA GPUs. lab/README.md says what each step is for and which report it made; the
# one-off experiments are in experiments.sh (this script hands it any step it does not know).
#
#   lab/gpu_validation/run.sh STEP...
#     correctness | suite | aa | fidelity | all   the committed single-GPU comparison (all: those four)
#     suite-il, aa-il, three-way                  the same with reps interleaved (three-way: golden, TOT, golden;
#                                                 RUN_ARGS: more run options, e.g. --gpus all)
#     sweep, pick                                 golden config sweeps of SWEEPS (suites/sweep_sm90_*), then
#                                                 tune_pick.py into CONFIGS (a copy of kernels/configs)
#     vendor                                      benchmarks/vendor_baseline.py (golden), FAMILIES
#     bisect                                      which release made each regression of BISECT_COMPARES slower:
#                                                 BISECT_VERSIONS from STAGE/<version>/p*/ (`harness env pack`)
#     retune, after                               harness retune of COMPARE within BUDGET minutes, then golden +
#                                                 TOT with the retuned configs: RESULTS/retune, RESULTS/after
#     shards                                      the sharded workflow: SHARDS shards, one per GPU, merge, compare
#     history                                     ROUNDS of golden + TOT, each --record'ed, then the history
#     gpus                                        SUITE golden + TOT on GPU 0, then on every GPU (--gpus all)
#     clocks                                      issue 46: golden over CLOCK_SUITE (the library), each rep's
#                                                 second clock against CUPTI: RESULTS/clocks/stats.txt
#     plain                                       issue 42: the plain command, three-way (TAG, SUITE, FILTER,
#                                                 GPUS, RUN_ARGS): RESULTS/plain-TAG/ and its stats
#     mg-aa, mg-three, ceilings, mg-sweep         multi-GPU: A/A or three-way at W = 1, 2 (FILTER, TAG,
#                                                 RUN_ARGS), NVLink/HBM ceilings, the 1,000-point sweep
#     aiter                                       issue 33: AITER's own batched GEMMs from a staged snapshot
#                                                 (AITER_CHECKOUT, default .stage/aiter), three-way: RESULTS/aiter/
#     aiter-pr                                    issue 33: two commits of AITER (a PR and its parent), one
#                                                 Triton (AITER_PR_STAGE, default .stage/aiter-pr): RESULTS/aiter-pr/
#
#   TIMEOUT / DEADLINE   seconds a harness run may take / the epoch second a call ends (SIGTERM: it stops clean,
#                        --resume goes on in the next call)
#   HARNESS_TOT_TRITON   folder with the TOT triton package (default /tmp/triton-3.9.0)
#   RESULTS              where outputs go (default reports/gpu-validation); $OUT/results.tgz too when OUT is set
#   SUITE                default suites/batched_gemm.yaml
set -euo pipefail
source "$(dirname "$0")/lib.sh"

for step in "$@"; do
  case $step in
    correctness)  # every case of suites/correctness.yaml (CORRECTNESS_STACKS: golden tot)
      for s in ${CORRECTNESS_STACKS:-golden tot}; do
        stamp "correctness $s"
        if [ $s = golden ]; then py=python3; else py=tot_py; fi
        $py lab/gpu_correctness.py --out "$R/correctness-$s.txt" | tail -3 || true
      done
      ;;
    sweep)  # golden config sweeps, resumable: SWEEPS names suites/sweep_sm90_<name>.yaml
      for f in ${SWEEPS:-attention norms gemm scaled_mxfp4}; do
        stamp "sweep $f start"
        hrun --env envs/golden.yaml --suite "suites/sweep_sm90_$f.yaml" --out "$R/sweep-$f.csv" --resume \
          --reps 1 --launches 10 --compile-jobs 16 2>&1 | tail -2
        stamp "sweep $f end"
      done
      ;;
    pick)  # the sweeps' fastest configs per bucket, over a copy of the shipped files
      [ -n "$CONFIGS" ] || { echo "pick needs CONFIGS" >&2; exit 2; }
      mkdir -p "$CONFIGS" && cp -n kernels/configs/*.json "$CONFIGS"/
      python3 benchmarks/tune_pick.py "$R"/sweep-*.csv --out "$CONFIGS" --summary "$R/picked.md" | tail -40
      export HARNESS_CONFIG_DIR=$CONFIGS
      tar czf "$R/configs.tgz" -C "$CONFIGS" .
      ;;
    vendor)  # every family against torch's best path, golden stack
      stamp "vendor baselines"
      # shellcheck disable=SC2046 # one --family option per name
      python3 benchmarks/vendor_baseline.py --out "$R/vendor-ratios.md" --csv "$R/vendor.csv" \
        $(for f in ${FAMILIES:-batched_gemm attention norms gemm scaled_mxfp4}; do echo --family $f; done) | tail -5
      ;;
    bisect)  # each committed H100 regression: the first release slower than golden (3.7.0, 3.7.1, 3.8.0 by default)
      export HARNESS_TRITON_DIR=${HARNESS_TRITON_DIR:-/tmp/triton}
      versions=${BISECT_VERSIONS:-3.7.0 3.7.1 3.8.0}
      tv=${TOT_VERSION:-3.9.0}  # TOT's overlay from its bundle too, when the node has none yet
      if [ ! -d "$HARNESS_TOT_TRITON/triton" ] && [ -d "${STAGE:-.stage}/$tv" ]; then
        h env unpack "${STAGE:-.stage}/$tv" --dest "$HARNESS_TOT_TRITON" 2>&1 | tail -2
      fi
      for v in $versions; do
        stamp "unpack triton $v"
        [ -f "$HARNESS_TRITON_DIR/$v/.harness-overlay.json" ] || h env unpack "${STAGE:-.stage}/$v" 2>&1 | tail -2
      done
      for c in ${BISECT_COMPARES:-reports/h100-triton-3.6.0-vs-3.9.0/compare.csv reports/h100-library-triton-3.6.0-vs-3.9.0/compare.csv}; do
        name=$(basename "$(dirname "$c")")
        stamp "bisect $name start"
        hbisect "$c" --versions "$(echo $versions | tr ' ' ,)" --mode overlay --golden envs/golden.yaml \
          --tot envs/tot.yaml --out "$R/bisect-$name" --artifacts 2>&1 | tail -${BISECT_TAIL:-45}
        stamp "bisect $name end"
      done
      ;;
    suite-il)  # golden and TOT in one run, reps interleaved in time (both stacks see the same GPU state)
      stamp "run golden+tot interleaved start"
      hrun --env envs/golden.yaml --out "$R/golden.csv" --with-env envs/tot.yaml --with-out "$R/tot.csv" \
        --suite "$SUITE" --resume --artifacts ${RUN_ARGS:-} 2>&1 | tail -3
      stamp "run golden+tot interleaved end"
      h compare "$R/golden.csv" "$R/tot.csv" --out "$R/compare.csv" --markdown "$R/compare.md" --worst 15 \
        | tee "$R/compare.txt" | tail -25
      ;;
    three-way)  # golden, TOT and golden again in one run, reps interleaved: golden vs TOT and its A/A together
      stamp "run golden+tot+golden interleaved start"
      hrun --env envs/golden.yaml --out "$R/golden.csv" --with-env envs/tot.yaml --with-out "$R/tot.csv" \
        --with-env envs/golden.yaml --with-out "$R/golden-aa.csv" --suite "$SUITE" --resume --artifacts ${RUN_ARGS:-} 2>&1 | tail -4
      stamp "run golden+tot+golden interleaved end"
      compare_with_aa "$R" golden tot golden-aa
      grep -E "cases|regressions|improvement|nothing" "$R/compare.txt" "$R/compare-aa.txt" | head -20 || true
      ;;
    aa-il)  # golden twice in one run, interleaved: what the rule flags here is noise
      stamp "run golden A/A interleaved start"
      hrun --env envs/golden.yaml --out "$R/golden-aa-1.csv" --with-env envs/golden.yaml \
        --with-out "$R/golden-aa-2.csv" --suite "$SUITE" --resume --compile-jobs 8 ${RUN_ARGS:-} 2>&1 | tail -3
      stamp "run golden A/A interleaved end"
      h compare "$R/golden-aa-1.csv" "$R/golden-aa-2.csv" --out "$R/compare-aa.csv" --markdown "$R/compare-aa.md" \
        | tee "$R/compare-aa.txt" | tail -12
      ;;
    suite)  # the two stacks one after the other (the committed H100/H200 reports)
      for s in golden tot; do
        stamp "run $s start"
        h run --env envs/$s.yaml --suite "$SUITE" --out "$R/$s.csv" --resume --artifacts 2>&1 | tail -2
        stamp "run $s end"
      done
      h compare "$R/golden.csv" "$R/tot.csv" --out "$R/compare.csv" --markdown "$R/compare.md" --worst 15 \
        | tee "$R/compare.txt" | tail -25
      ;;
    aa)
      stamp "run golden A/A start"
      h run --env envs/golden.yaml --suite "$SUITE" --out "$R/golden-aa.csv" --resume 2>&1 | tail -2
      stamp "run golden A/A end"
      h compare "$R/golden.csv" "$R/golden-aa.csv" --out "$R/compare-aa.csv" --markdown "$R/compare-aa.md" \
        | tee "$R/compare-aa.txt" | tail -12
      ;;
    fidelity)
      F=lab/gpu_validation/fidelity.py
      python3 $F pick --results "$R/golden.csv" --n 36 --out "$R/fidelity-cases.json"
      # every Triton kernel of the ops (names start with _; the flush between launches is torch's fill kernel)
      NCU="ncu --csv --metrics gpu__time_duration.sum --clock-control none -k regex:^_"
      stamp "ncu golden"; $NCU python3 $F launch --cases "$R/fidelity-cases.json" > "$R/ncu-golden.csv" 2>/dev/null
      stamp "ncu golden again"; $NCU python3 $F launch --cases "$R/fidelity-cases.json" > "$R/ncu-golden-2.csv" 2>/dev/null
      stamp "ncu tot"; PYTHONPATH="$HARNESS_TOT_TRITON" $NCU python3 $F launch --cases "$R/fidelity-cases.json" \
        > "$R/ncu-tot.csv" 2>/dev/null
      stamp "ncu + CUPTI on an empty kernel (ncu's launch bracket)"
      ncu --csv --metrics gpu__time_duration.sum --clock-control none -k regex:_empty_kernel python3 $F empty \
        > "$R/ncu-empty.csv" 2>/dev/null
      python3 $F empty --out "$R/empty-cupti.json"
      stamp "do_bench"
      python3 $F dobench --cases "$R/fidelity-cases.json" --out "$R/dobench-golden.json"
      tot_py $F dobench --cases "$R/fidelity-cases.json" --out "$R/dobench-tot.json"
      python3 $F report --cases "$R/fidelity-cases.json" \
        --stack "golden=$R/golden.csv,$R/ncu-golden.csv,$R/dobench-golden.json" \
        --stack "tot=$R/tot.csv,$R/ncu-tot.csv,$R/dobench-tot.json" \
        --ncu2 "golden=$R/ncu-golden-2.csv" --empty "$R/ncu-empty.csv,$R/empty-cupti.json" --out "$R/fidelity.csv"
      ;;
    shards)  # the sharded workflow on one machine: shard I on GPU I-1 only (CUDA_VISIBLE_DEVICES, as a runner of
             # its own), both stacks in each, all at once; then the merge job's merge (--suite) and compare
             # (--require-same-gpu: every case's golden and TOT rows name one GPU): RESULTS/shards/
      n=${SHARDS:-$(nvidia-smi -L | grep -c '^GPU')}
      S=$R/shards
      stamp "shards $n start"
      for i in $(seq 1 "$n"); do
        mkdir -p "$S/shard-$i"
        CUDA_VISIBLE_DEVICES=$((i - 1)) hrun --env envs/golden.yaml --out "$S/shard-$i/golden.csv" \
          --with-env envs/tot.yaml --with-out "$S/shard-$i/tot.csv" --suite "$SUITE" --shard "$i/$n" --resume \
          ${TIMES:+--times "$TIMES"} >"$S/shard-$i.log" 2>&1 &
      done
      wait
      stamp "shards $n end"
      for s in golden tot; do
        # shellcheck disable=SC2046 # one argument per shard
        h merge $(for i in $(seq 1 "$n"); do echo "$S/shard-$i/$s.csv"; done) --out "$S/$s.csv" --suite "$SUITE" \
          || echo "merge $s: exit $?"
      done
      h compare "$S/golden.csv" "$S/tot.csv" --out "$S/compare.csv" --markdown "$S/compare.md" --require-same-gpu \
        2>&1 | tail -25 || true
      python3 - "$S"/shard-*/golden.csv <<'PY'
import sys
from harness.results.load import load_results
for f in sys.argv[1:]:
    df = load_results(f)
    print(f, len(df), "cases", sorted(set(df["gpu"].astype(str))), f"{df['time_us'].sum() / 1e3:.1f} ms timed")
PY
      ;;
    history)  # issue 23 on a GPU: `--record` as runs and comparisons finish, then what the history makes of them
      HD="$R/history"
      mkdir -p "$HD"
      export HARNESS_DB="$HD/history.sqlite"
      F=${FILTER:-'B128_M(16|256)_N512_K128$'}
      for i in $(seq 1 "${ROUNDS:-4}"); do
        stamp "history round $i"
        hrun --env envs/golden.yaml --with-env envs/tot.yaml --with-out "$HD/tot-$i.csv" --out "$HD/golden-$i.csv" \
          --suite "$SUITE" --filter "$F" --record 2>&1 | { grep '^history:' || true; } | tee -a "$HD/record.txt"
        h compare "$HD/golden-$i.csv" "$HD/tot-$i.csv" --out "$HD/compare-$i.csv" --record >"$HD/compare-$i.txt" 2>&1 || true
        grep '^history:' "$HD/compare-$i.txt" | tee -a "$HD/record.txt" || true
      done
      h history list >"$HD/list.txt"
      h history regressions >"$HD/regressions.txt"
      h history changepoints --min-points 4 >"$HD/changepoints.txt"
      h history trend batched_gemm_bf16 >"$HD/trend-bf16.txt" || true
      h report --history "$HARNESS_DB" --out "$HD/report"
      stamp "history end"
      ;;
    retune)  # remove COMPARE's TOT regressions by config changes that slow no case (golden or TOT), within BUDGET
             # minutes of measuring: the new files go to RESULTS/retune/configs (--dry-run: this tree's
             # kernels/configs stay as they are; copy them there to commit), with retune.md/.html/.json and
             # retune.diff. COMPARE: default the committed H100 comparison of suites/batched_gemm.yaml (30 regressions)
      C=${COMPARE:-reports/h100-triton-3.6.0-vs-3.9.0/compare.csv}
      stamp "retune start: $C, budget ${BUDGET:-25} min"
      # shellcheck disable=SC2086 # RETUNE_ARGS is a list of options (e.g. --kernel NAME)
      hretune "$C" --env envs/tot.yaml --golden-env envs/golden.yaml --budget-min "${BUDGET:-25}" \
        --out "$R/retune" --dry-run ${RETUNE_ARGS:-} 2>&1 | grep -v "━" | tail -30
      stamp "retune end"
      ;;
    after)  # the fresh comparison after the retune: the shipped configs with RESULTS/retune/configs on top, golden
            # and TOT interleaved over SUITE (with artifacts), compare, explain what is left, the HTML report
      A="$R/after"; mkdir -p "$A/configs"
      cp kernels/configs/*.json "$A/configs/" && cp "$R"/retune/configs/*.json "$A/configs/" 2>/dev/null || true
      stamp "after-retune run start"
      HARNESS_CONFIG_DIR="$A/configs" hrun --env envs/golden.yaml --out "$A/golden.csv" --with-env envs/tot.yaml \
        --with-out "$A/tot.csv" --suite "$SUITE" --resume --artifacts 2>&1 | tail -3
      stamp "after-retune run end"
      h compare "$A/golden.csv" "$A/tot.csv" --out "$A/compare.csv" --markdown "$A/compare.md" --worst 15 \
        | tee "$A/compare.txt" | tail -25 || true
      h explain "$A/compare.csv" --out "$A/explain" --limit 30 2>&1 | tail -2 || true
      h report --compare "$A/compare.csv" --out "$A/report" --retune "$R/retune/retune.json" 2>&1 | tail -1 || true
      ;;
    plain)  # issue 42's proof: the README's plain command, golden, TOT and golden again in one run, nothing else
            # on its command line but the selection; then the plain compare of each pair. TAG names the folder
            # (RESULTS/plain-TAG), SUITE and FILTER select, GPUS (CUDA_VISIBLE_DEVICES) gives it its GPUs, RUN_ARGS
            # adds options (--gpus all; --processes 1 for the method of before, the cost baseline)
      M="$R/plain-${TAG:-run}"; mkdir -p "$M"
      export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
      stamp "plain ${TAG:-run} start"
      date +%s > "$M/wall.txt"
      # shellcheck disable=SC2086 # RUN_ARGS: several options
      ( [ -n "${GPUS:-}" ] && export CUDA_VISIBLE_DEVICES=$GPUS
        hrun --env envs/golden.yaml --suite "$SUITE" ${FILTER:+--filter "$FILTER"} --out "$M/golden.csv" \
          --with-env envs/tot.yaml --with-out "$M/tot.csv" --with-env envs/golden.yaml --with-out "$M/golden-aa.csv" \
          ${RUN_ARGS:-} > "$M/run.txt" 2>&1 )
      date +%s >> "$M/wall.txt"
      tail -4 "$M/run.txt"
      h compare "$M/golden.csv" "$M/tot.csv" --out "$M/compare.csv" --markdown "$M/compare.md" > "$M/compare.txt" 2>&1 || true
      h compare "$M/golden.csv" "$M/golden-aa.csv" --out "$M/compare-aa.csv" --markdown "$M/compare-aa.md" \
        > "$M/compare-aa.txt" 2>&1 || true
      stamp "plain ${TAG:-run} end"
      python3 lab/gpu_validation/confirm_stats.py "$M" | tee "$M/stats.txt"
      ;;
    clocks)  # issue 46 item 3: the README's plain command, golden, over SUITE (default the library suite), every
             # rep with its second clock (CUDA events around each launch); clock_stats.py → RESULTS/clocks/stats.txt
      M="$R/clocks"; mkdir -p "$M"
      stamp "clocks start"
      hrun --env envs/golden.yaml --suite "${CLOCK_SUITE:-suites/library.yaml}" --out "$M/golden.csv" --resume \
        > "$M/run.txt" 2>&1
      stamp "clocks end"
      tail -3 "$M/run.txt"
      python3 lab/gpu_validation/clock_stats.py "$M/golden.csv" | tee "$M/stats.txt" | head -60
      ;;
    mg-aa|mg-three)  # W = 2 (and 1) in lockstep timing: golden twice (mg-aa), or golden, TOT and golden again
                     # (mg-three), reps interleaved; FILTER (mg-aa default: every W = 2 case; mg-three: W <= 2);
                     # then compare, A/A and the ranks' figures (multigpu_stats.py): RESULTS/STEP[-TAG]/
                     # (HARNESS_LOCKSTEP=0: the method before lockstep, for docs/multigpu-timing.md)
      M="$R/$step${TAG:+-$TAG}"; mkdir -p "$M"
      export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
      stamp "$step start"
      if [ "$step" = mg-aa ]; then
        hrun --env envs/golden.yaml --out "$M/golden.csv" --with-env envs/golden.yaml --with-out "$M/golden-aa.csv" \
          --suite suites/multigpu.yaml --filter "${FILTER:-_W2$}" --compile-jobs 8 --resume ${RUN_ARGS:-} 2>&1 | tail -3
      else
        hrun --env envs/golden.yaml --out "$M/golden.csv" --with-env envs/tot.yaml --with-out "$M/tot.csv" \
          --with-env envs/golden.yaml --with-out "$M/golden-aa.csv" --suite suites/multigpu.yaml \
          --filter "${FILTER:-^(?!.*_W4)}" --compile-jobs 8 --resume ${RUN_ARGS:-} 2>&1 | tail -3
        h compare "$M/golden.csv" "$M/tot.csv" --out "$M/compare.csv" --markdown "$M/compare.md" --aa "$M/golden-aa.csv" \
          >"$M/compare.txt" 2>&1 || true
      fi
      h compare "$M/golden.csv" "$M/golden-aa.csv" --out "$M/compare-aa.csv" --markdown "$M/compare-aa.md" \
        >"$M/compare-aa.txt" 2>&1 || true
      stamp "$step end"
      python3 lab/gpu_validation/multigpu_stats.py "$M" | tee "$M/stats.txt"
      ;;
    ceilings)  # the roofline's measured ceilings: NVLink egress per GPU (nvlink_bandwidth.py), HBM copy, bf16 mm
      export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
      nvidia-smi topo -m > "$R/topo.txt" 2>&1 || true
      python3 lab/nvlink_bandwidth.py --out "$R/ceilings.yaml" 2>&1 | tail -8
      python3 lab/gpu_validation/hbm_mm.py >> "$R/ceilings.yaml"
      cat "$R/ceilings.yaml" | grep -v "^#"
      ;;
    mg-sweep)  # the Iris seed's sweep: every config of suites/sweep_multigpu.yaml at W = 1 and 2, golden, one rep
      export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
      stamp "mg-sweep start"
      hrun --env envs/golden.yaml --suite suites/sweep_multigpu.yaml --filter "${FILTER:-^(?!.*_W4)}" \
        --out "$R/mg-sweep.csv" --reps 1 --launches 10 --compile-jobs 16 --resume 2>&1 | tail -3
      stamp "mg-sweep end"
      ;;
    gpus)  # one node's GPUs together: SUITE golden + TOT on GPU 0 alone, then on every GPU (--gpus all), each
           # from empty compile caches; FILTER
      for g in ${GPUS_RUNS:-0 all}; do  # GPUS_RUNS=0 / all: one of the two per call (a call is 10 minutes)
        rm -rf .harness/cache/golden .harness/cache/tot  # both runs compile from scratch
        stamp "gpus $g start"
        t0=$(date +%s)
        hrun --env envs/golden.yaml --out "$R/gpus-$g-golden.csv" \
          --with-env envs/tot.yaml --with-out "$R/gpus-$g-tot.csv" --suite "$SUITE" --gpus "$g" \
          ${FILTER:+--filter "$FILTER"} --compile-jobs 8 --resume 2>&1 | tail -2
        echo "gpus $g: $(( $(date +%s) - t0 )) s" | tee -a "$R/gpus-wall.txt"
        stamp "gpus $g end"
        h compare "$R/gpus-$g-golden.csv" "$R/gpus-$g-tot.csv" --out "$R/gpus-$g-compare.csv" \
          > "$R/gpus-$g-compare.txt" 2>&1 || true
        python3 lab/gpu_validation/phases.py "$R/gpus-$g-golden.csv" "$R/gpus-$g-tot.csv" | tee "$R/gpus-$g-phases.txt"
      done
      ;;
    aiter)  # issue 33's GPU proof: AITER's real batched GEMMs through examples/aiter's adapter, from the snapshot
      # that lab/gpu_validation/aiter_stage.py staged (AITER_CHECKOUT, default .stage/aiter: carry it), configs
      # from AITER's own gfx950 files (AITER ships no sm90 ones). Golden, TOT and golden again, reps
      # interleaved; compare, A/A, explain, report, aiter_stats.py: RESULTS/aiter/ (summary.md).
      # AITER_KERNELS (default bf16 a8w8): the MXFP4 ops assert gfx950/gfx1250 in AITER's wrappers (skipped on
      # an H100); prequant is left out until its fp8 path is checked. AITER_FILTER (default M in 16, 64,
      # 128, 256, 1024, 2048: 36 of the 48 cases, every config and bucket but a8w8's M_LEQ_512, whose config
      # M = 1024 runs; AITER_FILTER=. for all 48): about 36 cases x 3 stacks x 3 reps x 0.25 s + compile.
      # AITER_SUITE: another suite of the adapter (examples/aiter/cpu.yaml: a dry run on the CPU interpreter)
      A="$R/aiter"; mkdir -p "$A"
      AITER_CHECKOUT=${AITER_CHECKOUT:-.stage/aiter}
      [[ $AITER_CHECKOUT == /* ]] || AITER_CHECKOUT=$PWD/$AITER_CHECKOUT  # the suite reads it relative to itself
      export AITER_CHECKOUT
      if [ ! -d "$AITER_CHECKOUT/aiter/ops/triton" ]; then
        echo "aiter: no AITER snapshot in $AITER_CHECKOUT (python3 lab/gpu_validation/aiter_stage.py; carry .stage/aiter)" >&2
        exit 2
      fi
      kernels=()
      for k in ${AITER_KERNELS:-bf16 a8w8}; do kernels+=(--kernel "aiter_batched_gemm_${k#aiter_batched_gemm_}"); done
      stamp "aiter three-way start: $(cat "$AITER_CHECKOUT/.git_archival.txt" 2>/dev/null | head -1)"
      hrun --env envs/golden.yaml --out "$A/golden.csv" --with-env envs/tot.yaml --with-out "$A/tot.csv" \
        --with-env envs/golden.yaml --with-out "$A/golden-aa.csv" --suite "${AITER_SUITE:-examples/aiter/batched_gemm.yaml}" \
        "${kernels[@]}" --filter "${AITER_FILTER:-_M(16|64|128|256|1024|2048)_}" --compile-jobs 8 --resume \
        --artifacts 2>&1 | tail -6
      stamp "aiter three-way end"
      if [ -n "${DEADLINE:-}" ] && [ "$(date +%s)" -ge $((DEADLINE - 5)) ]; then
        # cut: what was measured is kept for pack_out; the same step in the next call resumes, then compares
        echo "aiter: cut at DEADLINE; run the step again to finish and compare"
      else
        compare_with_aa "$A" golden tot golden-aa
        h explain "$A/compare.csv" --out "$A/explain" --limit 10 > "$A/explain.txt" 2>&1 || true
        h report --compare "$A/compare.csv" --out "$A/report" > "$A/report.txt" 2>&1 || true
        for s in golden tot; do  # the compiled kernels, for explain elsewhere (results.tgz leaves them out)
          if [ -d "$A/$s.artifacts" ]; then tar cJf "$A/artifacts-$s.txz" -C "$A" "$s.artifacts"; fi
        done
        stamp "aiter compared"
        python3 lab/gpu_validation/aiter_stats.py "$A" || true
      fi
      ;;
    aiter-pr)  # issue 33 item 7: two commits of AITER under one Triton (golden), as AITER's CI compares a PR against
               # main. Staged by `aiter_stage.py --pr REV --out .stage/aiter-pr` (AITER_PR_STAGE; carry it): main/ is
               # REV's parent, pr/ is REV (default fc01c4f00f, AITER #4075 "Fix int32 overflow in batched _gemm_bf16":
               # int64 tile offsets in the bf16 kernel). main, the PR and main again run one after the other (a suite
               # names one checkout, so they cannot interleave; main again is the A/A), bf16 only
               # (AITER_PR_KERNELS), AITER_FILTER as in `aiter` (18 cases); compare, A/A, explain (the PR's assembly
               # beside main's), report, aiter_stats.py: RESULTS/aiter-pr/
      P="$R/aiter-pr"; mkdir -p "$P"
      S=${AITER_PR_STAGE:-.stage/aiter-pr}
      [[ $S == /* ]] || S=$PWD/$S
      for v in main pr; do
        if [ ! -d "$S/$v/aiter/ops/triton" ]; then
          echo "aiter-pr: no AITER snapshot in $S/$v (python3 lab/gpu_validation/aiter_stage.py --pr REV --out .stage/aiter-pr)" >&2
          exit 2
        fi
      done
      kernels=()
      for k in ${AITER_PR_KERNELS:-bf16}; do kernels+=(--kernel "aiter_batched_gemm_${k#aiter_batched_gemm_}"); done
      for v in main pr; do  # golden's stack under the checkout's name: compare and explain say main and pr
        sed "s/^name: golden\$/name: $v/" envs/golden.yaml > "$P/$v.env.yaml"
      done
      for run in main pr main-again; do
        stamp "aiter-pr $run start: $(head -1 "$S/${run%-again}/.git_archival.txt" 2>/dev/null)"
        AITER_CHECKOUT=$S/${run%-again} hrun --env "$P/${run%-again}.env.yaml" --out "$P/$run.csv" \
          --suite "${AITER_SUITE:-examples/aiter/batched_gemm.yaml}" "${kernels[@]}" \
          --filter "${AITER_FILTER:-_M(16|64|128|256|1024|2048)_}" --compile-jobs 8 --resume --artifacts 2>&1 | tail -3
      done
      stamp "aiter-pr runs end"
      if [ -n "${DEADLINE:-}" ] && [ "$(date +%s)" -ge $((DEADLINE - 5)) ]; then
        echo "aiter-pr: cut at DEADLINE; run the step again to finish and compare"
      else
        compare_with_aa "$P" main pr main-again
        # the assembly of the PR beside main's, for the cases of the largest change, flagged or not
        h explain "$P/compare.csv" --out "$P/explain" --case . --limit 6 > "$P/explain.txt" 2>&1 || true
        h report --compare "$P/compare.csv" --out "$P/report" > "$P/report.txt" 2>&1 || true
        for s in main pr; do
          if [ -d "$P/$s.artifacts" ]; then tar cJf "$P/artifacts-$s.txz" -C "$P" "$s.artifacts"; fi
        done
        stamp "aiter-pr compared"
        python3 lab/gpu_validation/aiter_stats.py "$P" --stacks main,pr,main-again || true
      fi
      ;;
    all) "$0" correctness suite aa fidelity ;;
    *) LAB_NESTED=1 bash lab/gpu_validation/experiments.sh "$step" ;;  # a one-off experiment, or unknown there
  esac
done
pack_out
