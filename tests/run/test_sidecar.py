"""The sidecar a run writes: the stack, the method, and each kernel's SPEC summary (what later stages show)."""

from __future__ import annotations

import json

from harness.envs.spec import load_env_spec
from harness.inputs.suite import load_suite
from harness.results.schema import SCHEMA_VERSION, sidecar_path
from harness.run.options import RunOptions, run_options
from harness.run.sidecar import run_sidecar, sidecar_triton, update_sidecar, write_sidecar
from tests.conftest import DATA, ROOT

INFO = {
    "python": {"executable": "/usr/bin/python3", "version": "3.12"},
    "triton": {"version": "3.6.0", "path": "/site/triton"},
    "torch": {"version": "2.11"},
    "knobs": {},
    "backend": "interp",
    "arch": "interp",
    "gpu": {"name": "CPU interpreter"},
}


def test_the_sidecar_records_the_kernels_and_is_updated_in_place(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_TEST_PYTHON", "python3")
    spec = load_env_spec(DATA / "cpu-env.yaml")
    cases = load_suite(ROOT / "examples" / "softmax.yaml")
    opts = RunOptions()
    out = tmp_path / "r.csv"
    meta = run_sidecar(spec, INFO, opts, "wallclock", 3, run_options(spec, opts, "s"), cases, out, "s.yaml")
    assert meta["schema_version"] == SCHEMA_VERSION == 2 and meta["timing"] == "wallclock"
    assert meta["kernels"]["softmax"]["peak"] == "memory" and meta["kernels"]["softmax"]["plot"]["x"] == "N"
    assert meta["kernel_sources"] == {"softmax": str(ROOT / "examples" / "softmax.py")}  # what retune loads
    write_sidecar(out, meta)
    update_sidecar(out, gpu={"after": {"temperature_c": 40}}, precompile={"jobs": 2})
    back = json.loads(sidecar_path(out).read_text())
    assert (
        back["gpu"] == {"name": "CPU interpreter", "after": {"temperature_c": 40}} and back["precompile"]["jobs"] == 2
    )
    assert sidecar_triton(out) == INFO["triton"] and sidecar_triton(tmp_path / "none.csv") == {}
