"""Compiling a suite in parallel worker processes before measuring it."""

from __future__ import annotations

import sys

from tests.conftest import DATA


def test_precompile_shards_cases_over_workers_and_survives_crashes(tmp_path, monkeypatch):
    """The parallel compile pass: every case goes to one of N workers (compile only, nothing kept); a kernel that
    kills its worker costs that worker, not the pass. (Here under the interpreter; on a GPU it fills the cache.)"""
    from harness.envs.spec import load_env_spec
    from harness.inputs.suite import load_suite
    from harness.run.cases import worker_case
    from harness.run.precompile import precompile

    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    spec = load_env_spec(str(DATA / "cpu-env.yaml"))
    cases = [worker_case(c) for c in load_suite(DATA / "faults.yaml") if c.name in ("good", "crash", "wrong")]
    assert len(cases) == 3
    res = precompile(spec, "wallclock", cases, tmp_path / "logs", jobs=2, timeout_s=120)
    assert res["jobs"] == 2 and res["cases"] == 2  # good and wrong answered; crash took its worker down
    logs = sorted((tmp_path / "logs").glob("worker-*.log"))
    assert len(logs) == 2  # one per shard, the crashed worker not restarted (its shard had nothing left)
