"""The best torch paths beside ``scaled_mxfp4_gemm`` (Y = mxfp4(X) · Wᵀ, X bf16, W MXFP4), for a lead-written script
that times them against the kernel on the GPU on the kernel's own inputs (``make_inputs``).

torch has no MXFP4 matmul on Hopper (sm90 has no fp4 MMA; Triton itself emulates ``tl.dot_scaled`` there through
the bf16 MMA), so no torch path is the same op at the same rate. What each entry is, and what to compare it with:

- ``torch.mm bf16 (cuBLAS) on dequantized MXFP4 X, W``: X quantized to MXFP4 by the torch reference helper and
  both operands dequantized to bf16 *beforehand* (untimed); the timed op is one cuBLAS bf16 GEMM (rocBLAS /
  hipBLASLt on AMD). The very same products (e2m1 · 2^e is exact in bf16) at the bf16 MMA rate: the fair roof for
  the kernel's GEMM dispatch on sm90, where dot_scaled runs as upcast + bf16 wgmma. It does not quantize X, so
  the kernel's end-to-end time (both dispatches) also pays the encode dispatch it leaves out.
- ``torch._scaled_mm fp8 e4m3 row-wise (X, W quantized beforehand)``: X (bf16) and the dequantized W quantized to
  fp8 e4m3 with one fp32 scale per row (per token of X, per output channel of W), untimed; the timed op is one
  cuBLASLt fp8 GEMM with bf16 output: the nearest hardware low-precision path on sm90 (2× the bf16 MMA rate). Not
  the same math (3 mantissa bits and one scale per row instead of 1 mantissa bit and one scale per 32 elements):
  a speed reference for the GEMM dispatch, not an accuracy-equivalent one (its result differs from the kernel's
  reference by about the MXFP4 rounding itself: 0.12 relative Frobenius error on N(0, 1) data, measured on the
  CPU at M×N×K = 40×48×96; do not check it against the kernel's tolerance).
- ``torch fp8 row-wise quantize of X + torch._scaled_mm (end to end)``: the same with X's quantization inside the
  timed op as torch ops (amax, divide, cast: several kernels): the counterpart of the kernel's end-to-end time
  (encode dispatch + GEMM dispatch), W still quantized offline as the kernel's W is.

The fp8 entries are left out, with the reason printed to stderr, where torch refuses row-wise ``_scaled_mm``
(an older CUDA / cuBLASLt, a GPU without fp8, or a ROCm build without row-wise scaling).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from kernels import common as C  # noqa: E402

#: the seed's shape first (10000×16384×16384: K = 512 groups of 32), then the family's other largest shapes
CASES: list[dict[str, Any]] = [
    {"M": 10000, "N": 16384, "K": 16384, "out_dtype": "bf16"},
    {"M": 16384, "N": 16384, "K": 16384, "out_dtype": "bf16"},
    {"M": 4096, "N": 16384, "K": 16384, "out_dtype": "bf16"},
    {"M": 10000, "N": 8192, "K": 8192, "out_dtype": "bf16"},
    {"M": 1024, "N": 8192, "K": 8192, "out_dtype": "bf16"},
]


def fp8_rowwise(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(fp8 e4m3 values, fp32 scales (rows, 1)): one scale per row, amax / fp8 max."""
    dt = C.fp8_dtype()
    fmax = torch.finfo(dt).max
    s = t.float().abs().amax(dim=1, keepdim=True).clamp_min(1e-12) / fmax
    return (t.float() / s).clamp(-fmax, fmax).to(dt), s


def scaled_mm_problem() -> str | None:
    """Why row-wise fp8 ``torch._scaled_mm`` cannot run here (None when a tiny one does)."""
    dev = C.device()
    try:
        a, sa = fp8_rowwise(torch.ones((16, 32), device=dev))
        b, sb = fp8_rowwise(torch.ones((16, 32), device=dev))
        torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb.t(), out_dtype=torch.bfloat16)
    except (RuntimeError, ValueError, NotImplementedError, TypeError) as err:
        return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return None


def vendor_ops(params: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    """Named zero-argument callables, each running one torch path on ``inputs`` (see the module docstring)."""
    x, w, ws = inputs["x"], inputs["w"], inputs["w_scale"]
    w32 = C.mxfp4_dequantize(w, ws)
    xd = C.mxfp4_dequantize(*C.mxfp4_quantize(x.float())).to(torch.bfloat16)
    wd = w32.to(torch.bfloat16)
    ops: dict[str, Callable[[], Any]] = {
        "torch.mm bf16 (cuBLAS) on dequantized MXFP4 X, W": lambda: torch.mm(xd, wd.t()),
    }
    why = scaled_mm_problem()
    if why:
        print(f"scaled_mxfp4 vendor: fp8 torch._scaled_mm paths left out: {why}", file=sys.stderr)
        return ops
    wq, sw = fp8_rowwise(w32)
    wq_t, sw_t = wq.t(), sw.t()  # (K, N) column-major and (1, N): the layout cuBLASLt wants for B
    xq, sx = fp8_rowwise(x)

    def prequantized() -> torch.Tensor:
        return torch._scaled_mm(xq, wq_t, scale_a=sx, scale_b=sw_t, out_dtype=torch.bfloat16)

    def end_to_end() -> torch.Tensor:
        q, s = fp8_rowwise(x)
        return torch._scaled_mm(q, wq_t, scale_a=s, scale_b=sw_t, out_dtype=torch.bfloat16)

    ops["torch._scaled_mm fp8 e4m3 row-wise (X, W quantized beforehand)"] = prequantized
    ops["torch fp8 row-wise quantize of X + torch._scaled_mm (end to end)"] = end_to_end
    return ops
