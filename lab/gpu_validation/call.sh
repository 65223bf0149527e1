#!/usr/bin/env bash
# One device call of a session that brings Triton releases in parts (`harness env pack`: parts of <= 16 MiB, as
# many a call as its 64 MiB upload holds beside the repository: three for 3.9.0) and measures meanwhile.
#
#   lab/gpu_validation/call.sh [VERSION/PART...] [STEP...]     e.g.  call.sh 3.9.0/p0 3.9.0/p1 3.9.0/p2 retune
#
# VERSION/PART: the carried folder .stage/VERSION/PART, gathered into STAGE/VERSION/ on the node; once every part
# of a release is there it is unpacked (TOT_VERSION into HARNESS_TOT_TRITON, the others into
# HARNESS_TRITON_DIR/VERSION, where `harness bisect --mode overlay` looks). Then run.sh STEP... with this
# session's settings (RESULTS, STAGE, ...), cut at DEADLINE like every run.sh step. A step already finished in an
# earlier call (its marker in RESULTS/done/) is skipped, so every call can name the same steps.
set -euo pipefail
cd "$(dirname "$0")/../.."
export RESULTS=${RESULTS:-.harness/gpu} STAGE=${STAGE:-/tmp/stage} HARNESS_TRITON_DIR=${HARNESS_TRITON_DIR:-/tmp/triton}
export TOT_VERSION=${TOT_VERSION:-3.9.0}
export HARNESS_TOT_TRITON=${HARNESS_TOT_TRITON:-/tmp/triton-$TOT_VERSION}
mkdir -p "$RESULTS/done"
while [[ ${1:-} == */p[0-9]* ]]; do  # one or more parts (as many as the upload holds beside the repository)
  v=${1%/*} part=${1#*/}
  shift
  mkdir -p "$STAGE/$v" && cp -r ".stage/$v/$part" "$STAGE/$v/"
  want=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['parts']))" "$STAGE/$v/$part/manifest.json")
  have=$(find "$STAGE/$v" -name '*.part[0-9]*' | wc -l)
  echo "call.sh: triton $v part $part: $have of $want parts here"
  if [ "$have" = "$want" ]; then
    if [ "$v" = "$TOT_VERSION" ]; then dest=$HARNESS_TOT_TRITON; else dest=$HARNESS_TRITON_DIR/$v; fi
    [ -d "$dest/triton" ] || python3 -m harness env unpack "$STAGE/$v" --dest "$dest" 2>&1 | grep -v "━" | tail -2
  fi
done
for step in "$@"; do
  if [ -f "$RESULTS/done/$step" ]; then echo "call.sh: $step already done"; continue; fi
  rc=0
  bash lab/gpu_validation/run.sh "$step" || rc=$?
  # a step is done when it was not cut: DEADLINE not reached (run.sh's steps stop clean and resume)
  if [ $rc = 0 ] && { [ -z "${DEADLINE:-}" ] || [ "$(date +%s)" -lt "$((DEADLINE - 5))" ]; }; then
    touch "$RESULTS/done/$step"
  fi
done
