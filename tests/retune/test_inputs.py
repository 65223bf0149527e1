"""harness/retune/inputs.py: COMPARE's cases rebuilt as suite cases and located in the config files."""

from __future__ import annotations

import json

import pandas as pd

from harness.compare.compare import Comparison
from harness.retune.inputs import case_infos, family_configs, kernel_sources, load_kernels, snapshot, suite_values
from harness.verdict.rule import Rule
from tests.conftest import DATA

TOY = str(DATA / "retune_kernel.py")


def comparison(rows: list[dict], sources: dict | None = None) -> Comparison:
    env = {"kernel_sources": sources or {}}
    return Comparison(table=pd.DataFrame(rows), rule=Rule(), golden_env=env, tot_env={})


def row(case_id, params, verdict="regression", **kw):
    base = {"kernel": "retune_toy", "case_id": case_id, "params": json.dumps(params), "verdict": verdict,
            "golden_us": 30.0, "tot_us": 60.0, "delta_pct": 100.0, "golden_config": "", "tot_config": ""}  # fmt: skip
    return {**base, **kw}


def test_kernels_by_name_or_by_the_file_a_sidecar_recorded():
    cmp = comparison([], {"retune_toy": TOY, "ghost": "/nowhere/ghost.py"})
    assert kernel_sources(cmp)["retune_toy"] == TOY
    found, notes = load_kernels(["batched_gemm_a8w8", "retune_toy", "ghost", "lost"], kernel_sources(cmp))
    assert sorted(found) == ["batched_gemm_a8w8", "retune_toy"]
    assert notes[0].startswith("ghost: kernel '/nowhere/ghost.py': file /nowhere/ghost.py not found")
    assert notes[1] == "lost: not a registered kernel and no sidecar names its file: left alone"


def test_cases_located_in_the_files():
    files = snapshot(DATA / "retune_configs")
    rows = [
        row("M8_N16", {"M": 8, "N": 16, "seed": 0}, tot_config='{"BLOCK_N": 32, "SPLIT": 1, "num_warps": 1}'),
        row("M32_N48", {"M": 32, "N": 48, "seed": 0}, verdict="ok", tot_config='{"BLOCK_N": 64}'),
        row("M32_N32_cfg-BLOCK_N64", {"M": 32, "N": 32, "seed": 0}),  # a sweep case: not the files' to fix
    ]
    cmp = comparison(rows, {"retune_toy": TOY})
    kernels, _ = load_kernels(["retune_toy"], kernel_sources(cmp))
    cases, notes = case_infos(cmp, kernels, files, "interp")
    a, b = cases
    assert (a.key, a.target, a.where.file, a.where.bucket) == ("retune_toy/M8_N16", True, "interp-RETUNE-TOY.json",
                                                                "M_LEQ_16")  # fmt: skip
    assert a.where.config == {"BLOCK_N": 32, "SPLIT": 1, "num_warps": 1} and a.lookup.key == "N=16"
    assert (b.where.file, b.where.bucket, b.target) == ("interp-RETUNE-TOY-N=48.json", "any", False)
    assert notes[0] == "retune_toy M32_N32_cfg-BLOCK_N64: not a case of the kernel's files: left alone"
    assert notes[1].startswith("1 cases of COMPARE ran other configs than the config files give now")
    assert case_infos(cmp, kernels, files, "gfx942")[0] == []  # no file for that arch: nothing to locate


def test_values_from_sweep_suites_and_config_files(tmp_path):
    (tmp_path / "sweep.yaml").write_text(
        "entries:\n"
        "  - kernel: [retune_toy, other]\n    config: {BLOCK_N: [16, 256], num_warps: 8}\n"
        "  - kernel: other\n    config: {BLOCK_N: [512]}\n"
    )
    (tmp_path / "broken.yaml").write_text("entries: [")
    assert suite_values({"retune_toy"}, tmp_path) == {"BLOCK_N": [16, 256], "num_warps": [8]}
    cfgs = family_configs("RETUNE-TOY", DATA / "retune_configs")
    assert {c["BLOCK_N"] for c in cfgs} == {16, 32, 64, 128}  # every arch's file, per-shape files too
