#!/usr/bin/env bash
# The test command: lint, then the whole test suite (CPU only; Triton kernels run under TRITON_INTERPRET=1).
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check .
ruff format --check .
python3 -m pytest -q "$@"
