#!/usr/bin/env bash
# Measure a suite on a Slurm cluster: a job array of N shards (perf-array.sbatch: one task per shard, both stacks
# on the task's GPUs), then merge.sbatch once every task has ended (merge, compare, report). RESULTS must be on a
# file system every node sees, and so must this checkout and the two environments.
#
#   scripts/slurm/submit.sh [--shards N] [--gpus-per-task G] [--suite S] [--results DIR] [--golden-env E]
#       [--tot-env E] [--times PREV.csv] [--only I,J] [--no-fail] [-- SBATCH_OPTION...]
#
# Defaults: 4 shards, 1 GPU each (0: no GPU, the CPU interpreter), suites/library.yaml, results/slurm-<time>,
# envs/golden.yaml and envs/tot.yaml. --only reruns some shards into an existing --results (their tasks resume),
# then merges again. Options after `--` go to both sbatch calls (--partition, --account, --time, --exclusive, ...).
# HARNESS_RUN_ARGS adds `harness run` options (e.g. "--reps 5 --artifacts"); HARNESS_PYTHON the interpreter.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SHARDS=${SHARDS:-4} GPUS_PER_TASK=${GPUS_PER_TASK:-1} SUITE=${SUITE:-suites/library.yaml}
RESULTS=${RESULTS:-} GOLDEN_ENV=${GOLDEN_ENV:-envs/golden.yaml} TOT_ENV=${TOT_ENV:-envs/tot.yaml}
TIMES=${TIMES:-} ONLY= FAIL_ON_REGRESSION=${FAIL_ON_REGRESSION:-1}
die() { echo "submit.sh: $*" >&2; exit 2; }
# a path given here is made absolute (the jobs run from the checkout); a name such as an env NAME is kept
abs() { if [ -e "$1" ]; then realpath "$1"; else printf '%s' "$1"; fi; }
while (($#)); do
  case $1 in
    --shards) SHARDS=${2:?}; shift 2 ;;
    --gpus-per-task) GPUS_PER_TASK=${2:?}; shift 2 ;;
    --suite) SUITE=${2:?}; shift 2 ;;
    --results) RESULTS=${2:?}; shift 2 ;;
    --golden-env) GOLDEN_ENV=${2:?}; shift 2 ;;
    --tot-env) TOT_ENV=${2:?}; shift 2 ;;
    --times) TIMES=${2:?}; shift 2 ;;
    --only) ONLY=${2:?}; shift 2 ;;
    --no-fail) FAIL_ON_REGRESSION=0; shift ;;
    --) shift; break ;;
    *) die "unknown option $1 (see the usage at the top of $0)" ;;
  esac
done
[[ $SHARDS =~ ^[1-9][0-9]*$ ]] || die "--shards $SHARDS: expected a number of shards from 1"
[[ $GPUS_PER_TASK =~ ^[0-9]+$ ]] || die "--gpus-per-task $GPUS_PER_TASK: expected a number of GPUs (0: none)"
[[ -z $ONLY || $ONLY =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--only $ONLY: expected shard numbers such as 3,5"
for i in ${ONLY//,/ }; do ((i >= 1 && i <= SHARDS)) || die "--only: shard $i is not one of 1..$SHARDS"; done
[ -n "$RESULTS" ] || { [ -z "$ONLY" ] || die "--only needs the --results of the first submission"; }
SUITE=$(abs "$SUITE") GOLDEN_ENV=$(abs "$GOLDEN_ENV") TOT_ENV=$(abs "$TOT_ENV")
[ -f "$SUITE" ] || [ -f "$ROOT/$SUITE" ] || die "--suite $SUITE: no such file"
[ -z "$TIMES" ] || TIMES=$(abs "$TIMES")
[ -z "$TIMES" ] || [ -f "$TIMES" ] || [ -f "$ROOT/$TIMES" ] || die "--times $TIMES: no such file"
RESULTS=${RESULTS:-$ROOT/results/slurm-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$RESULTS/logs"
RESULTS=$(realpath "$RESULTS")
export HARNESS_ROOT=$ROOT SHARDS GPUS_PER_TASK SUITE RESULTS GOLDEN_ENV TOT_ENV TIMES FAIL_ON_REGRESSION
gres=()
if ((GPUS_PER_TASK > 0)); then gres=(--gres="gpu:$GPUS_PER_TASK"); fi
array=$(sbatch --parsable --export=ALL --array="${ONLY:-1-$SHARDS}" "${gres[@]}" \
  --output="$RESULTS/logs/shard-%a.out" "$@" "$ROOT/scripts/slurm/perf-array.sbatch")
array=${array%%;*}
merge=$(sbatch --parsable --export=ALL --dependency="afterany:$array" --kill-on-invalid-dep=yes \
  --output="$RESULTS/logs/merge.out" "$@" "$ROOT/scripts/slurm/merge.sbatch") \
  || die "array job $array was submitted but the merge job was not (sbatch said why above): scancel $array, or" \
    "submit the merge later with --only and the same --results"
merge=${merge%%;*}
echo "array job: $array (shards ${ONLY:-1-$SHARDS} of $SHARDS, ${GPUS_PER_TASK} GPUs each)"
echo "merge job: $merge (after every shard has ended)"
echo "results: $RESULTS (logs/ per task; compare.md and report/index.html once merged); watch: squeue -j $array,$merge"
