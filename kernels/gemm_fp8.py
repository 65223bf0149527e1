"""Y = (X · Wᵀ) · scales for fp8 e4m3 X (M, K) and W (N, K) (nn.Linear's layout), fp32 scales, bf16 Y.

``scaling: tensor``: one scale for X and one for W (per-tensor quantization); ``scaling: row``: one per row of X
(per token) and one per row of W (per output channel). fp32 accumulation; the scales multiply the fp32 tile after
the K loop. e4m3fn on NVIDIA and gfx950, e4m3fnuz on gfx942 (``common.fp8_dtype``).

The kernels, variants and config keys are kernels/gemm.py's (``SCALES`` set to 1 or 2): the pointer kernel with
grouped tile order and split-K (each K slice's partial is scaled, so their sum is), and the persistent TMA kernel
(``PERSISTENT: n``). On Hopper each BLOCK_SIZE_K-deep chain of fp8 MMAs is promoted into the fp32 accumulator
with ordinary adds (kernels/gemm.py says why), as cuBLAS does without ``use_fast_accum``.
"""

from __future__ import annotations

from typing import Any

import torch

from harness import ConfigLookup, KernelSpec, Param, Plot, dim
from kernels import common as C
from kernels.gemm import ROW_SCALES, TENSOR_SCALES, run_gemm

#: bytes of the scales each scaling reads: two fp32 numbers, or M + N of them
SCALE_BYTES = {"tensor": lambda p: 8, "row": lambda p: 4 * (p["M"] + p["N"])}
SPEC = KernelSpec(
    name="gemm_fp8",
    description="Y = (X W^T) x_scale w_scale, fp8 e4m3 in, per-tensor or per-row (token/channel) fp32 scales, bf16 out",
    params=(
        dim("M"),
        dim("N"),
        dim("K"),
        Param("scaling", "str", "tensor", choices=("tensor", "row"), id="{value}scale"),
    ),
    flops=lambda p: 2.0 * p["M"] * p["N"] * p["K"],
    bytes=lambda p: p["M"] * p["K"] + p["N"] * p["K"] + SCALE_BYTES[p["scaling"]](p) + 2 * p["M"] * p["N"],
    peak="fp8",
    dtype="fp8",
    tolerance=1e-2,
    config=ConfigLookup("GEMM-A8W8-FP8", bucket="M", specialize=("N", "K")),
    #: kernels/gemm.py's GEMM_CONFIG_KEYS, as a literal: the driver reads a SPEC without importing other modules
    config_keys=(
        "BLOCK_SIZE_M",
        "BLOCK_SIZE_N",
        "BLOCK_SIZE_K",
        "GROUP_SIZE_M",
        "NUM_KSPLIT",
        "PERSISTENT",
        "EPILOGUE_SUBTILE",
    ),
    hooks=("supported",),
    plot=Plot(x="M", series=("N", "K", "scaling")),
)
SCALES = {"tensor": TENSOR_SCALES, "row": ROW_SCALES}


def supported(params: dict[str, Any]) -> str | None:
    """fp8 e4m3 tensor-core dots need sm89+ on NVIDIA (Triton refuses fp8e4nv below) and CDNA3+ on AMD."""
    if C.backend() == "cuda" and torch.cuda.get_device_capability() < (8, 9):
        return "fp8 e4m3 dots need sm89 or newer (Triton has no fp8e4nv below)"
    if C.backend() == "hip" and C.arch() not in ("gfx942", "gfx950"):
        return f"fp8 e4m3 dots need gfx942 or gfx950, not {C.arch()}"
    return None


def quantize(
    v: torch.Tensor, per_row: bool, fp8: torch.dtype, shape: tuple[int, ...]
) -> tuple[torch.Tensor, torch.Tensor]:
    """(fp8 values, fp32 scales of ``shape``): v / s rounded to fp8 with s = max|v| / the format's largest value,
    over each row (``per_row``) or the whole tensor, as per-token / per-channel / per-tensor quantizers do."""
    amax = v.abs().amax(dim=1, keepdim=True) if per_row else v.abs().amax().reshape(1, 1)
    fmax = torch.finfo(fp8).max
    s = amax.clamp_min(1e-12) / fmax
    q = (v / s).clamp(-fmax, fmax).to(fp8)
    return q, s.reshape(shape).contiguous()


def make_inputs(case: dict[str, Any], seed: int) -> dict[str, Any]:
    """fp8 X and W quantized from normal values (so their codes spread over fp8's range as real ones do), with
    x_scale (M, 1) / w_scale (1, N) for ``row``, (1, 1) each for ``tensor``: the shapes torch._scaled_mm takes."""
    M, N, K = (int(case[k]) for k in "MNK")
    per_row = case["scaling"] == "row"
    dev = C.device()
    g = C.generator(seed, dev)
    fp8 = C.fp8_dtype()
    x, xs = quantize(C.rand((M, K), torch.float32, g, dev), per_row, fp8, (M, 1) if per_row else (1, 1))
    w, ws = quantize(C.rand((N, K), torch.float32, g, dev, scale=K**-0.5), per_row, fp8, (1, N) if per_row else (1, 1))
    y = torch.empty((M, N), dtype=torch.bfloat16, device=dev)
    return {"x": x, "w": w, "x_scale": xs, "w_scale": ws, "scaling": case["scaling"], "y": y}


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    scales = SCALES[inputs["scaling"]]
    return run_gemm(inputs["x"], inputs["w"], inputs["y"], config, inputs["x_scale"], inputs["w_scale"], scales)


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    """X and W dequantized in float64, then multiplied."""
    x = inputs["x"].double() * inputs["x_scale"].double()
    w = inputs["w"].double() * inputs["w_scale"].double().reshape(-1, 1)
    return x @ w.T
