"""Each kernel against its high-precision reference under TRITON_INTERPRET=1 (fp16 variants: the interpreter
computes bf16 dots wrongly), split-K and bias included; the config resolver; the MXFP4 helpers."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before any @triton.jit runs

import pytest  # noqa: E402
import torch  # noqa: E402

from kernels import KernelLoadError, load  # noqa: E402
from kernels import _common as C  # noqa: E402
from kernels._config import ConfigError, pick_bucket, resolve, split_config  # noqa: E402

if os.environ.get("TRITON_INTERPRET") != "1":
    pytest.skip("kernel tests run under the interpreter", allow_module_level=True)

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
    case = {"B": B, "M": M, "N": N, "K": K, "dtype": "fp16", "out_dtype": "fp16", "bias": bias}
    cfg = dict(resolve(k.CONFIG_NAME, C.arch(), M, N, K).config, NUM_KSPLIT=ks)
    inputs = k.make_inputs(case, seed=M)
    assert not (inputs["x"].float() == 0).all()
    C.poison_(inputs["y"])
    y = k.launch(inputs, cfg)
    assert torch.isfinite(y.float()).all(), "every output element written"
    assert C.rel_frobenius(y, k.reference(inputs)) <= k.tolerance(case)


PREQUANT = "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant"


@pytest.mark.parametrize("shape, ks, bias", [((2, 40, 48, 200), 1, True), ((1, 33, 32, 384), 3, False)])
def test_prequant_quant_pass_is_bit_identical_to_the_fused_kernel(shape, ks, bias):
    """X quantized once by a first kernel (QUANT_PASS) and X quantized inside the K loop: the same arithmetic."""
    k = load(PREQUANT)
    B, M, N, K = shape
    case = {"B": B, "M": M, "N": N, "K": K, "dtype": "fp16", "out_dtype": "fp16", "bias": bias}
    cfg = dict(resolve(k.CONFIG_NAME, C.arch(), M, N, K).config, NUM_KSPLIT=ks)
    inputs = k.make_inputs(case, seed=5)
    fused = k.launch(inputs, cfg).clone()
    C.poison_(inputs["y"])
    two = k.launch(inputs, dict(cfg, QUANT_PASS=1))
    assert torch.equal(two, fused)
    assert C.rel_frobenius(two, k.reference(inputs)) <= k.tolerance(case)
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
    case = {"B": 2, "M": 16, "N": 32, "K": 64, "dtype": "fp16", "out_dtype": "fp16"}
    inputs = k.make_inputs(case, 0)
    y = k.launch(inputs, dict(resolve(k.CONFIG_NAME, C.arch(), 16, 32, 64).config, PERSISTENT=1))
    assert C.rel_frobenius(y, k.reference(inputs)) <= k.tolerance(case)


def test_wrong_result_is_caught():
    k = load("batched_gemm_bf16")
    case = {"B": 1, "M": 16, "N": 32, "K": 64, "dtype": "fp16"}
    inputs = k.make_inputs(case, 0)
    y = k.launch(inputs, resolve(k.CONFIG_NAME, "interp", 16, 32, 64).config)
    y[0, 0, :] += 1.0
    assert C.rel_frobenius(y, k.reference(inputs)) > k.tolerance(case)
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


def test_bucket_rule():
    b = {"M_LEQ_16": 1, "M_LEQ_256": 2, "M_GEQ_4096": 3, "any": 4}
    assert [pick_bucket(b, m) for m in (1, 16, 17, 256, 257, 4095, 4096, 10**6)] == [
        "M_LEQ_16",
        "M_LEQ_16",
        "M_LEQ_256",
        "M_LEQ_256",
        "any",
        "any",
        "M_GEQ_4096",
        "M_GEQ_4096",
    ]
    assert pick_bucket({"M_LEQ_16": 1}, 17) is None


def test_resolve_specific_file_replaces_default(tmp_path):
    (tmp_path / "sm90-X.json").write_text('{"any": {"BLOCK_SIZE_M": 64}}')
    (tmp_path / "sm90-X-N=512-K=128.json").write_text('{"M_LEQ_32": {"BLOCK_SIZE_M": 16}, "any": {"BLOCK_SIZE_N": 8}}')
    r = resolve("X", "sm90", 16, 512, 128, tmp_path)
    assert r.config == {"BLOCK_SIZE_M": 16} and r.tuned and "N=512-K=128" in r.file
    r = resolve("X", "sm90", 64, 512, 128, tmp_path)
    assert r.config == {"BLOCK_SIZE_N": 8} and not r.tuned  # 'any' of the N/K file: not tuned, never merged
    r = resolve("X", "sm90", 64, 256, 128, tmp_path, overrides={"num_warps": 8})
    assert r.config == {"BLOCK_SIZE_M": 64, "num_warps": 8} and r.file == "sm90-X.json"
    with pytest.raises(ConfigError, match="no default config"):
        resolve("X", "gfx950", 1, 1, 1, tmp_path)


def test_backend_only_options_never_reach_nvidia():
    cfg = {
        "BLOCK_SIZE_M": 64,
        "num_warps": 8,
        "num_stages": 2,
        "waves_per_eu": 2,
        "matrix_instr_nonkdim": 16,
        "kpack": 1,
    }
    meta, opts = split_config(cfg, "cuda")
    assert meta == {"BLOCK_SIZE_M": 64} and opts == {"num_warps": 8, "num_stages": 2}
    meta, opts = split_config(cfg, "hip")
    assert opts["waves_per_eu"] == 2 and opts["kpack"] == 1


def test_every_shipped_config_file_parses():
    from kernels._config import CONFIG_DIR, _read

    files = sorted(CONFIG_DIR.glob("*.json"))
    assert len(files) >= 20
    for f in files:
        assert _read(str(f))


def test_unknown_kernel():
    with pytest.raises(KernelLoadError, match="unknown kernel"):
        load("nope")
