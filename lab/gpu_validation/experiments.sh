#!/usr/bin/env bash
# One-off GPU experiments: each answered a question once (the date and the answer are in its comment and in the
# report it wrote); kept so the answer can be checked again, not re-run by a maintainer. `run.sh STEP` reaches
# these too. Settings as in run.sh (RESULTS, TAG, RUN_ARGS, FILTER, ...).
#
#   lab/gpu_validation/experiments.sh STEP...   STEP: offset | aa-fresh | aa-b2b | aa-twice | placements-ab | trace | power | placement | safety | multigpu-w1
set -euo pipefail
source "$(dirname "$0")/lib.sh"

for step in "$@"; do
  case $step in
    offset)  # where harness and ncu differ: ncu without its cache flush, and the harness with idle gaps
      F=lab/gpu_validation/fidelity.py
      CASES=${CASES:-$R/fidelity-cases.json}
      NCU="ncu --csv --metrics gpu__time_duration.sum --clock-control none -k regex:^_"
      stamp "ncu golden"; $NCU python3 $F launch --cases "$CASES" > "$R/offset-ncu.csv" 2>/dev/null
      stamp "ncu golden --cache-control none"
      $NCU --cache-control none python3 $F launch --cases "$CASES" > "$R/offset-ncu-nocache.csv" 2>/dev/null
      stamp "harness timing with idle gaps"; python3 $F gap --cases "$CASES" --out "$R/offset-gap.json"
      ;;
    aa-fresh)  # A/A with every rep round in a new worker process, both runs
      for s in 1 2; do
        stamp "run golden A/A fresh-process rounds $s start"
        h run --env envs/golden.yaml --suite "$SUITE" --out "$R/golden-fresh-$s.csv" --resume \
          --fresh-process-rounds 2>&1 | tail -2
        stamp "run golden A/A fresh-process rounds $s end"
      done
      h compare "$R/golden-fresh-1.csv" "$R/golden-fresh-2.csv" --out "$R/compare-aa-fresh.csv" \
        --markdown "$R/compare-aa-fresh.md" | tee "$R/compare-aa-fresh.txt" | tail -12
      ;;
    aa-b2b)  # A/A with launches back to back (--launch-gap 0, the default before 07:00 on 2026-11-22), golden twice
      for s in 1 2; do
        stamp "run golden A/A back to back $s start"
        h run --env envs/golden.yaml --suite "$SUITE" --out "$R/golden-b2b-$s.csv" --resume --launch-gap 0 2>&1 | tail -2
        stamp "run golden A/A back to back $s end"
      done
      h compare "$R/golden-b2b-1.csv" "$R/golden-b2b-2.csv" --out "$R/compare-aa-b2b.csv" \
        --markdown "$R/compare-aa-b2b.md" | tee "$R/compare-aa-b2b.txt" | tail -12
      ;;
    aa-twice)  # golden twice, one run after the other: TAG names the files, RUN_ARGS are extra `harness run`
               # options (e.g. --unthrottle-ms 20), FILTER narrows the suite (e.g. /B16_ for the ms-long cases)
      tag=${TAG:-twice}
      for s in 1 2; do
        stamp "run golden A/A $tag $s start"
        # shellcheck disable=SC2086 # RUN_ARGS is a list of options
        h run --env envs/golden.yaml --suite "$SUITE" ${FILTER:+--filter "$FILTER"} --out "$R/golden-$tag-$s.csv" \
          --resume ${RUN_ARGS:-} 2>&1 | tail -2
        stamp "run golden A/A $tag $s end"
      done
      h compare "$R/golden-$tag-1.csv" "$R/golden-$tag-2.csv" --out "$R/compare-aa-$tag.csv" \
        --markdown "$R/compare-aa-$tag.md" | tee "$R/compare-aa-$tag.txt" | tail -14
      ;;
    placements-ab)  # golden processes alternating between two settings (A: the defaults, B: B_ARGS), one per
                    # round in ROUNDS ("1 2"; a later call can add "3"); A/A within each setting is compared after
      for rnd in ${ROUNDS:-1 2}; do
        for v in A B; do
          args=""; [ $v = B ] && args=${B_ARGS:---no-move-inputs}
          stamp "run golden $v round $rnd start ($args)"
          # shellcheck disable=SC2086 # args is a list of options
          h run --env envs/golden.yaml --suite "$SUITE" ${FILTER:+--filter "$FILTER"} \
            --out "$R/golden-$v-$rnd.csv" --resume $args 2>&1 | tail -1
          stamp "run golden $v round $rnd end"
        done
      done
      ;;
    trace)  # every launch of every rep with its addresses, as `harness run` times them (launch_trace.py;
            # TRACE_ARGS e.g. "--every 2 --warm", TRACE_PROCS names one process each, TRACE_FILTER)
      for proc in ${TRACE_PROCS:-1 2}; do
        stamp "launch trace $proc ${TRACE_ARGS:-}"
        # shellcheck disable=SC2086 # TRACE_ARGS is a list of options
        python3 lab/gpu_validation/launch_trace.py --reps "${TRACE_REPS:-40}" --out "$R/trace-$proc.json" \
          ${TRACE_ARGS:-} \
          --filter "${TRACE_FILTER:-prequant.*/B16_M(256|512)_N8192|a16wfp4/B16_M256_N8192}" | tee "$R/trace-$proc.txt"
      done
      ;;
    power)  # the SM clock (NVML) next to every launch's time for a few ms-long cases, four launch spacings
      stamp "power trace"
      python3 lab/gpu_validation/power_trace.py --out "$R/power-trace.json" \
        --filter "${POWER_FILTER:-bf16/B16_M2048_|prequant.*/B16_M256_|a16wfp4/B16_M256_}" | tee "$R/power-trace.txt"
      ;;
    placement)  # does where a per-launch buffer lands set the time? (fp8 prequant's quantized X, 40 reps)
      stamp "placement"
      python3 lab/gpu_validation/placement.py --reps 40 --out "$R/placement.json" \
        --filter "${PLACEMENT_FILTER:-prequant.*/B16_M(256|512|1024)_N8192}" | tee "$R/placement.txt"
      ;;
    safety)  # every refusal and warning of issue 21 that needs a GPU, the two stacks and real workers
      S="$R/safety"; mkdir -p "$S"; L="$R/safety.txt"; F=${FILTER:-'B128_M(16|256)_N512_K128$'}
      try() { local rc=0; echo "\$ $*" >>"$L"; "$@" >>"$L" 2>&1 || rc=$?; echo "exit $rc" >>"$L"; }
      stamp "safety start"
      try env -u HARNESS_TOT_TRITON python3 -m harness env show envs/tot.yaml  # unset overlay: 2
      try python3 -m harness env show envs/golden.yaml
      try python3 -m harness env show envs/tot.yaml
      h run --env envs/golden.yaml --out "$S/golden.csv" --with-env envs/tot.yaml --with-out "$S/tot.csv" \
        --suite "$SUITE" --filter "$F" >"$S/run.log" 2>&1 &
      sleep 8  # the first run holds both locks by now: a second one on the same OUT is refused, --resume too
      try python3 -m harness run --env envs/golden.yaml --out "$S/golden.csv" --suite "$SUITE" --filter "$F" --resume
      rc=0; wait $! || rc=$?; echo "first run: exit $rc" >>"$L"; tail -15 "$S/run.log" >>"$L"
      try python3 -m harness run --env envs/golden.yaml --out "$S/golden.csv" --suite "$SUITE" --filter "$F" \
        --resume --launches 7  # changed options: 2
      try python3 -m harness compare "$S/golden.csv" "$S/tot.csv" --out "$S/compare.csv" --markdown "$S/compare.md" \
        --require-same-gpu --fail-on-regression  # same GPU: 0 or 1
      try python3 -m harness compare "$S/golden.csv" "$S/tot.csv" --out "$S/golden.csv"  # over an input: 2
      h run --env envs/golden.yaml --out "$S/golden-aa.csv" --suite "$SUITE" --filter "$F" >/dev/null 2>&1 || true
      try python3 -m harness compare "$S/golden.csv" "$S/golden-aa.csv" --fail-on-regression  # same Triton: 2
      python3 - "$S/golden.csv" "$S/tot.csv" >>"$L" <<'PY'
import json, sys
for f in sys.argv[1:]:
    m = json.load(open(f + ".env.json"))
    print(f, {k: m["gpu"].get(k) for k in ("name", "uuid", "pci_bus_id")}, m["host"], m["triton"], sorted(m["run_options"]))
PY
      stamp "safety end"
      ;;
    multigpu-w1)  # the multi-GPU kernel (gemm_all_scatter) and its baselines at W = 1 on one GPU: golden and TOT
                  # interleaved through the harness (FILTER: a few cases of suites/multigpu.yaml), then the torchrun
                  # smoke of lab/gpu_validation/multigpu_smoke.py under each stack: RESULTS/multigpu-w1/
      M="$R/multigpu-w1"; mkdir -p "$M"
      export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
      stamp "multigpu W=1 start"
      hrun --env envs/golden.yaml --out "$M/golden.csv" --with-env envs/tot.yaml --with-out "$M/tot.csv" \
        --suite suites/multigpu.yaml --filter "${FILTER:-^(?!.*_W[0-9]).*/M(16|1024)_N4096_K14336}" --resume 2>&1 | tail -3
      h compare "$M/golden.csv" "$M/tot.csv" --out "$M/compare.csv" >"$M/compare.txt" 2>&1 || true
      tail -20 "$M/compare.txt"
      for s in golden tot; do
        if [ $s = golden ]; then py=python3; else py=tot_py; fi
        $py -m torch.distributed.run --standalone --nproc-per-node 1 lab/gpu_validation/multigpu_smoke.py \
          --reps 20 --filter 'M(1|1024)_N4096_K14336' >"$M/smoke-$s.txt" 2>&1 || echo "smoke $s: exit $?"
        tail -12 "$M/smoke-$s.txt"
      done
      stamp "multigpu W=1 end"
      ;;
    *) echo "unknown step $step (lab/README.md lists them)" >&2; exit 2 ;;
  esac
done
pack_out
