#!/usr/bin/env bash
# The test command: lint, the two real environments the pipeline tests need, then the whole test suite
# (CPU only; Triton kernels run under TRITON_INTERPRET=1).
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check .
ruff format --check .
python3 -m harness env create envs/venv-golden.yaml >/dev/null
python3 -m harness env create envs/venv-tot.yaml >/dev/null
python3 -m pytest -q "$@"
