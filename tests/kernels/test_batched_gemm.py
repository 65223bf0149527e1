"""Each kernel against its high-precision reference under TRITON_INTERPRET=1 (fp16 variants: the interpreter
computes bf16 dots wrongly), split-K and bias included; the config resolver; the MXFP4 helpers."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any @triton.jit runs

import pytest  # noqa: E402
import torch  # noqa: E402

from harness.inputs.kernel import load_kernel  # noqa: E402
from harness.kernel_api.configs import resolve  # noqa: E402
from harness.worker.cases import load_kernel as import_kernel  # noqa: E402
from kernels import common as C  # noqa: E402
from tests.conftest import ROOT  # noqa: E402

if os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("kernel tests run under the interpreter", allow_module_level=True)


def load(name: str):
    """The kernel module of a shipped kernel, as the worker imports it."""
    return import_kernel(load_kernel(name).source, str(ROOT))


def params(k, **given):
    """A case's full parameters, as a suite would give them (defaults filled in)."""
    return k.SPEC.case_params({n: v for n, v in given.items() if k.SPEC.param(n)}, "test")


def config(k, M: int, N: int, K: int) -> dict:
    return dict(resolve(k.SPEC.config.family, C.arch(), M, f"N={N}-K={K}").config)


GEMMS = [
    "batched_gemm_bf16",
    "batched_gemm_a8w8",
    "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant",
]


@pytest.mark.parametrize("name", GEMMS)
@pytest.mark.parametrize(
    "shape, ks, bias", [((2, 16, 32, 256), 1, False), ((1, 40, 48, 200), 1, True), ((1, 33, 32, 384), 3, False)]
)
def test_kernel_matches_reference(name, shape, ks, bias):
    k = load(name)
    B, M, N, K = shape
    case = params(k, **{"B": B, "M": M, "N": N, "K": K, "dtype": "fp16", "out_dtype": "fp16", "bias": bias})
    cfg = dict(config(k, M, N, K), NUM_KSPLIT=ks)
    inputs = k.make_inputs(case, seed=M)
    assert not (inputs["x"].float() == 0).all()
    C.poison_(inputs["y"])
    y = k.launch(inputs, cfg)
    assert torch.isfinite(y.float()).all(), "every output element written"
    assert C.rel_frobenius(y, k.reference(inputs)) <= k.SPEC.tolerance_of(case)


PREQUANT = "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant"


@pytest.mark.parametrize("shape, ks, bias", [((2, 40, 48, 200), 1, True), ((1, 33, 32, 384), 3, False)])
def test_prequant_quant_pass_is_bit_identical_to_the_fused_kernel(shape, ks, bias):
    """X quantized once by a first kernel (QUANT_PASS) and X quantized inside the K loop: the same arithmetic."""
    k = load(PREQUANT)
    B, M, N, K = shape
    case = params(k, **{"B": B, "M": M, "N": N, "K": K, "dtype": "fp16", "out_dtype": "fp16", "bias": bias})
    cfg = dict(config(k, M, N, K), NUM_KSPLIT=ks)
    inputs = k.make_inputs(case, seed=5)
    fused = k.launch(inputs, cfg).clone()
    C.poison_(inputs["y"])
    two = k.launch(inputs, dict(cfg, QUANT_PASS=1))
    assert torch.equal(two, fused)
    assert C.rel_frobenius(two, k.reference(inputs)) <= k.SPEC.tolerance_of(case)
    xq, s = k.quantize_x(inputs["x"], inputs["w"].dtype)
    assert s.shape == (B, -(-K // 128), M) and (s > 0).all() and xq.dtype == inputs["w"].dtype


def test_persistent_configs_fall_back_where_tma_cannot_run():
    """A PERSISTENT config on a stack that cannot run the TMA kernel (here: the 3.6 interpreter) runs the pointer
    kernel with the same tiles; TMA's alignment rules are checked per tensor."""
    x = torch.empty(2, 16, 200, dtype=torch.float16)
    why = C.tma_unsupported(x)
    if C.triton_version() < (3, 9):
        assert "interpreter" in why
        assert not C.use_persistent({"PERSISTENT": 1}, 1, x)
    else:
        assert why is None and C.use_persistent({"PERSISTENT": 1}, 1, x)
        assert not C.use_persistent({"PERSISTENT": 1}, 2, x), "split-K configs keep the pointer kernel"
        assert "not TMA-aligned" in C.tma_unsupported(torch.empty(2, 16, 202, dtype=torch.float16)[..., :201])
    k = load("batched_gemm_bf16")
    case = params(k, **{"B": 2, "M": 16, "N": 32, "K": 64, "dtype": "fp16", "out_dtype": "fp16"})
    inputs = k.make_inputs(case, 0)
    y = k.launch(inputs, dict(config(k, 16, 32, 64), PERSISTENT=1))
    assert C.rel_frobenius(y, k.reference(inputs)) <= k.SPEC.tolerance_of(case)


def test_wrong_result_is_caught():
    k = load("batched_gemm_bf16")
    case = params(k, **{"B": 1, "M": 16, "N": 32, "K": 64, "dtype": "fp16"})
    inputs = k.make_inputs(case, 0)
    y = k.launch(inputs, config(k, 16, 32, 64))
    y[0, 0, :] += 1.0
    assert C.rel_frobenius(y, k.reference(inputs)) > k.SPEC.tolerance_of(case)
    y[0, 0, 0] = float("nan")
    assert C.rel_frobenius(y, k.reference(inputs)) == float("inf")


def test_mxfp4_round_trip_and_scale_rule():
    x = torch.randn(4, 64) * torch.logspace(-3, 3, 64)
    q, s = C.mxfp4_quantize(x)
    assert q.shape == (4, 32) and s.shape == (4, 2) and q.dtype == torch.uint8
    d = C.mxfp4_dequantize(q, s)
    g = x.reshape(4, 2, 32).abs().amax(-1)
    scale = torch.pow(2.0, s.float() - 127)
    assert (g / scale <= 6.0).all() and (g / scale > 3.0).all()  # the smallest power of two that fits
    # the widest e2m1 step is 4 -> 6: no value is further than 1 scale unit from its code
    assert ((d - x).abs() <= scale.repeat_interleave(32, -1)).all()
    assert C.e2m1_decode(C.e2m1_encode(torch.tensor([0.0, 0.3, 0.8, 1.3, 2.6, 4.9, 5.1, -7.0]))).tolist() == [
        0.0,
        0.5,
        1.0,
        1.5,
        3.0,
        4.0,
        6.0,
        -6.0,
    ]


def test_mxfp4_in_row_chunks_is_the_same_as_at_once(monkeypatch):
    """Big weights are (de)quantized a few rows at a time (bounded temporaries on a shared GPU): same bits."""
    x = torch.randn(3, 5, 128) * torch.logspace(-2, 2, 128)
    whole = C.mxfp4_quantize(x)
    back = C.mxfp4_dequantize(*whole)
    monkeypatch.setattr(C, "MXFP4_CHUNK", 2 * 128)  # two rows a chunk: 8 chunks, the last one short
    q, s = C.mxfp4_quantize(x)
    assert torch.equal(q, whole[0]) and torch.equal(s, whole[1]) and q.shape == (3, 5, 64)
    assert torch.equal(C.mxfp4_dequantize(q, s), back)
