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
    assert res["blocks"] == 3 and res["compile_s"] >= 0
    logs = sorted((tmp_path / "logs").glob("worker-*.log"))
    assert 2 <= len(logs) <= 3  # one per job, and one more only where the crash's job had a block left


def _req(kernel: str, dtype: str = "fp16", key: str | None = None, **over) -> dict:
    lookup = {"family": "F", "key": key, "value": 1} if key else None
    return {"kernel": kernel, "dtype": dtype, "overrides": over, "lookup": lookup, "library": None}


def test_cases_that_share_kernels_compile_in_one_block_largest_first():
    """One worker compiles the cases that likely share binaries in turn (the second finds the first's in the
    cache); the bucket value (lookup 'value') does not split a block, the config file key, dtype and overrides do."""
    from harness.run.precompile import compile_blocks

    a1, a2 = _req("gemm", key="N=1-K=2"), {**_req("gemm", key="N=1-K=2"), "case_id": "other M"}
    a2["lookup"] = {**a2["lookup"], "value": 64}
    b = _req("gemm", key="N=4-K=4")
    c16, c32 = _req("norm"), _req("norm", dtype="fp32")
    d1, d2, d3 = _req("attn"), _req("attn"), _req("attn", BLOCK=64)
    blocks = compile_blocks([a1, b, c16, a2, d1, c32, d2, d3])
    assert blocks == [[a1, a2], [d1, d2], [b], [c16], [c32], [d3]]
