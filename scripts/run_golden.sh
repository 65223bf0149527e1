#!/usr/bin/env bash
# Run the suite under the golden stack. Override: ENV_SPEC, SUITE, OUT_CSV; extra arguments go to `harness run`.
set -euo pipefail
cd "$(dirname "$0")/.."
ENV_SPEC=${ENV_SPEC:-envs/golden.yaml}
SUITE=${SUITE:-suites/batched_gemm.yaml}
OUT_CSV=${OUT_CSV:-results/golden.csv}
exec python3 -m harness run --env "$ENV_SPEC" --suite "$SUITE" --out "$OUT_CSV" "$@"
