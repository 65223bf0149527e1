"""harness/kernel_api/spec.py: what a kernel declares, and what follows from it for one case (pure, no torch)."""

from __future__ import annotations

import pytest

from harness.kernel_api.spec import (
    ConfigLookup,
    KernelSpec,
    Param,
    Plot,
    SpecError,
    config_label,
    dim,
    dtype,
)

GEMM = KernelSpec(
    name="gemm",
    params=(dim("M"), dim("N"), dim("K"), dtype(("bf16", "fp16"), "bf16"), Param("bias", "bool", False)),
    flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
    bytes=lambda p: 2.0 * (p["M"] * p["K"] + p["N"] * p["K"] + p["M"] * p["N"]),
    dtype="{dtype}",
    tolerance={"bf16": 1e-2, "fp16": 2e-3},
    config=ConfigLookup("GEMM"),
    plot=Plot(x="M", series=("N", "K")),
)


def test_case_params_fill_defaults_and_check_types():
    p = GEMM.case_params({"M": 16, "N": 32.0, "K": 64}, "here")
    assert p == {"M": 16, "N": 32, "K": 64, "dtype": "bf16", "bias": False, "seed": 0} and type(p["N"]) is int
    with pytest.raises(SpecError, match="here: missing 'K'"):
        GEMM.case_params({"M": 16, "N": 32}, "here")
    with pytest.raises(SpecError, match="here: gemm has no parameter 'B'"):
        GEMM.case_params({"M": 1, "N": 1, "K": 1, "B": 2}, "here")
    with pytest.raises(SpecError, match="here: M: must be >= 1, got 0"):
        GEMM.case_params({"M": 0, "N": 1, "K": 1}, "here")
    with pytest.raises(SpecError, match="dtype: 'fp8' is not one of bf16, fp16"):
        GEMM.case_params({"M": 1, "N": 1, "K": 1, "dtype": "fp8"}, "here")


@pytest.mark.parametrize(
    "value, typ, ok",
    [(1, "int", 1), (1.0, "int", 1), (1.5, "int", None), (True, "int", None), ("1", "int", None), (1, "float", 1),
     (float("inf"), "float", None), (True, "bool", True), (0, "bool", None), ("x", "str", "x"), (1, "str", None)],
)  # fmt: skip
def test_types_are_strict(value, typ, ok):
    p = Param("x", typ)
    if ok is None:
        with pytest.raises(SpecError):
            p.check(value, "w")
    else:
        assert p.check(value, "w") == ok


def test_case_ids_leave_defaults_out_and_name_the_seed_and_the_config():
    p = GEMM.case_params({"M": 16, "N": 32, "K": 64}, "t")
    assert GEMM.case_id(p) == "M16_N32_K64"
    p = GEMM.case_params({"M": 16, "N": 32, "K": 64, "dtype": "fp16", "bias": True, "seed": 2}, "t")
    assert GEMM.case_id(p, {"BLOCK_SIZE_M": 64, "num_warps": 4}) == "M16_N32_K64_fp16_bias_seed2_cfg-BM64-w4"


def test_what_follows_from_a_case():
    p = GEMM.case_params({"M": 2, "N": 3, "K": 4, "dtype": "fp16"}, "t")
    assert (GEMM.flops_of(p), GEMM.bytes_of(p), GEMM.peak_of(p), GEMM.dtype_of(p)) == (48.0, 52.0, "bf16", "fp16")
    assert GEMM.tolerance_of(p) == 2e-3 and GEMM.world_size_of(p) == 1
    assert GEMM.config.file_key(p) == "N=3-K=4"
    assert GEMM.summary()["plot"] == {"x": "M", "series": ["N", "K"], "y": ""}


def test_world_size_from_a_parameter_and_peak_from_a_function():
    spec = KernelSpec(
        name="ag",
        params=(dim("W", 1), dtype(("fp8", "bf16"))),
        flops=lambda p: 1.0,
        bytes=lambda p: 1.0,
        peak=lambda p: "fp8" if p["dtype"] == "fp8" else "bf16",
        world_size="W",
    )
    p = spec.case_params({"W": 4, "dtype": "fp8"}, "t")
    assert spec.world_size_of(p) == 4 and spec.peak_of(p) == "fp8" and spec.summary()["peak"] == "by case"


def test_bad_results_of_a_formula_are_refused():
    bad = KernelSpec(name="b", params=(), flops=lambda p: -1, bytes=lambda p: "x", tolerance={"bf16": 1e-2})
    with pytest.raises(SpecError, match="flops must be a finite number >= 0"):
        bad.flops_of({})
    with pytest.raises(SpecError, match="bytes must be a finite number"):
        bad.bytes_of({})
    with pytest.raises(SpecError, match="tolerance has no entry for dtype ''"):
        bad.tolerance_of({})


def test_config_label_is_the_one_short_form():
    assert config_label({"num_warps": 4, "BLOCK_SIZE_M": 64, "PERSISTENT": 1}) == "BM64 PERSISTENT1 w4"


def test_a_cross_parameter_check_refuses_a_combination():
    spec = KernelSpec(
        name="attn",
        params=(dim("H"), dim("GQA", 1)),
        flops=lambda p: 1.0,
        bytes=lambda p: 1.0,
        check=lambda p: None if p["H"] % p["GQA"] == 0 else f"H={p['H']} is not a multiple of GQA={p['GQA']}",
    )
    assert spec.case_params({"H": 8, "GQA": 4}, "w")["GQA"] == 4
    with pytest.raises(SpecError, match="w: H=6 is not a multiple of GQA=4"):
        spec.case_params({"H": 6, "GQA": 4}, "w")


def test_link_bytes_are_optional_counted_like_the_others_and_checked():
    """``link_bytes``: what one rank sends over the GPU links (the report's NVLink roof); None when undeclared."""
    from dataclasses import replace

    p = {"M": 4, "N": 8, "K": 2, "dtype": "bf16", "bias": False}
    assert GEMM.link_bytes_of(p) is None
    sent = replace(GEMM, link_bytes=lambda q: 2.0 * q["M"] * q["N"])
    assert sent.link_bytes_of(p) == 64.0
    with pytest.raises(SpecError, match="link_bytes must be a finite number >= 0"):
        replace(GEMM, link_bytes=lambda q: -1).link_bytes_of(p)
    with pytest.raises(SpecError, match="gemm: link_bytes must be a function of the parameters"):
        replace(GEMM, link_bytes=3)
