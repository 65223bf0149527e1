"""Each kernel against the best torch path for the same math, side by side in one process, kernel-only time
through CUPTI (torch.profiler; an L2 flush before every launch, excluded). Writes a markdown table.

    python benchmarks/vendor_baseline.py --out docs/vendor-ratios.md

Largest shape of each suite family: B=128 M=2048 (N,K)=(512,128) and (128,512); B=16 M=2048 N=K=8192.
Torch paths: bf16 `torch.bmm` (cuBLAS); int8 `torch._int_mm` per batch + the per-token / per-channel scaling;
fp8 two rows: `torch._scaled_mm` per batch with row-wise scales on X quantized beforehand (less work and coarser
math than our kernel, which quantizes bf16 X per 128-wide K group), and the same math in torch: X quantized per
(row, 128-group) by torch ops, then `torch._scaled_mm` per batch with DeepSeek-style 1x128 (X) × 128x128 (W, the
per-tensor scale in every block) scales — cuBLAS on sm90, CUDA >= 12.9; checked against our reference first and
left out, with the reason printed, where torch refuses it; fp4 a bf16 `torch.bmm` on the dequantized inputs
(Hopper has no fp4 MMA: Triton emulates `tl.dot_scaled` through bf16 there).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402
import triton  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

from harness.worker.timing import attribute_dispatches, kernel_events
from kernels import _common as C  # noqa: E402
from kernels import load  # noqa: E402
from kernels._config import resolve  # noqa: E402
from kernels.batched_gemm_a8w8_prequant import torch_group_quant  # noqa: E402

SHAPES = [(128, 2048, 512, 128), (128, 2048, 128, 512), (16, 2048, 8192, 8192)]
FLUSH = "_flush_marker"


@triton.jit
def _flush_marker(ptr, n, BLOCK: triton.language.constexpr):
    offs = triton.language.program_id(0) * BLOCK + triton.language.arange(0, BLOCK)
    v = triton.language.load(ptr + offs, mask=offs < n, other=0)
    if triton.language.sum(v, axis=0) == 123456789:
        triton.language.store(ptr, 0)


def cupti_us(op, n: int = 20) -> float:
    buf = torch.zeros(64 * 1024 * 1024, dtype=torch.int32, device="cuda")
    grid = (triton.cdiv(buf.numel(), 8192),)
    for _ in range(3):
        op()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            _flush_marker[grid](buf, buf.numel(), BLOCK=8192)
            op()
        torch.cuda.synchronize()
    times, _ = attribute_dispatches(kernel_events(prof), FLUSH, n)
    return statistics.median(times)


def blockwise_op(x: torch.Tensor, w: torch.Tensor, w_scale: torch.Tensor, quantize_in_op: bool = True):
    """X group-quantized by torch (inside the timed op, or once beforehand), then torch._scaled_mm with 1x128 ×
    128x128 scales per batch. Scale layouts as cuBLASLt requires them (M-major A scales, K-blocks of B rounded up
    to a multiple of 4)."""
    B, M, K = x.shape
    N, L = w.shape[1], K // 128
    L4 = -(-L // 4) * 4
    sb = w_scale.reshape(1, 1).expand(N // 128, L4).contiguous().t()  # (L4, N/128), stride (1, L4)

    def quant():  # the kernels' quantization in torch ops (K is a multiple of 128 at these shapes)
        xq, s = torch_group_quant(x, w.dtype)
        # scales (B, L, M): each batch's (M, L) view has stride (1, M)
        return xq.reshape(B, M, K), s.reshape(B, M, L).transpose(1, 2).contiguous()

    pre = None if quantize_in_op else quant()

    def op():
        xq, st = quant() if pre is None else pre
        return [
            torch._scaled_mm(xq[b], w[b].t(), scale_a=st[b].t(), scale_b=sb, out_dtype=torch.bfloat16) for b in range(B)
        ]

    return op


def torch_paths(name: str, inp: dict) -> list[tuple[str, object]]:
    x, w = inp["x"], inp["w"]
    if name == "batched_gemm_bf16":
        return [("torch.bmm", lambda: torch.bmm(x, w.transpose(1, 2)))]
    if name == "batched_gemm_a8w8":
        xs, ws = inp["x_scale"], inp["w_scale"]

        def op():
            for b in range(x.shape[0]):
                (torch._int_mm(x[b], w[b].t()).float() * xs[b] * ws[b]).to(torch.bfloat16)

        return [("torch._int_mm x B + scale", op)]
    if name.startswith("batched_gemm_a8w8_a_per"):
        fmax = torch.finfo(C.fp8_dtype()).max
        s = x.float().abs().amax(-1, keepdim=True).clamp_min(1e-10) / fmax
        xq = (x.float() / s).clamp(-fmax, fmax).to(C.fp8_dtype())
        ws = inp["w_scale"].expand(1, w.shape[1]).contiguous()

        def rowwise():
            for b in range(x.shape[0]):
                torch._scaled_mm(xq[b], w[b].t(), scale_a=s[b], scale_b=ws, out_dtype=torch.bfloat16)

        paths = [("torch._scaled_mm (row-wise, X quantized beforehand; less work) x B", rowwise)]
        for label, in_op in (
            ("torch group-quant + torch._scaled_mm (1x128 × 128x128) x B (same math)", True),
            ("torch._scaled_mm (1x128 × 128x128, X quantized beforehand) x B", False),
        ):
            try:
                op = blockwise_op(x, w, inp["w_scale"], in_op)
                err = C.rel_frobenius(torch.stack(op()), load(name).reference(inp))
                if err > 1e-2:
                    raise RuntimeError(f"wrong result: relative error {err:.3g}")
                paths.append((label, op))
            except (RuntimeError, ValueError) as e:  # torch or cuBLAS refusing the recipe
                print(f"left out {label}: {str(e).splitlines()[0]}", file=sys.stderr)
        return paths
    xd = (C.mxfp4_dequantize(x, inp["x_scale"]) if name == "batched_gemm_afp4wfp4" else x.float()).to(torch.bfloat16)
    wd = C.mxfp4_dequantize(w, inp["w_scale"]).to(torch.bfloat16)
    return [("torch.bmm on dequantized bf16", lambda: torch.bmm(xd, wd.transpose(1, 2)))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    ap.add_argument("--kernel", action="append", help="only these kernels (repeatable; default all five)")
    a = ap.parse_args()
    rows = [
        f"GPU {torch.cuda.get_device_name()}, triton {triton.__version__}, torch {torch.__version__}; "
        "CUPTI kernel time, median of 20 launches after an L2 flush.",
        "",
        "| kernel | B×M×N×K | ours µs | torch path | torch µs | ours / torch | config |",
        "|---|---|---:|---|---:|---:|---|",
    ]
    for name in a.kernel or [
        "batched_gemm_bf16",
        "batched_gemm_a8w8",
        "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant",
        "batched_gemm_a16wfp4",
        "batched_gemm_afp4wfp4",
    ]:
        k = load(name)
        for B, M, N, K in SHAPES:
            case = {"B": B, "M": M, "N": N, "K": K}
            r = resolve(k.CONFIG_NAME, C.arch(), M, N, K)
            inp = k.make_inputs(case, 0)
            ours = cupti_us(lambda k=k, inp=inp, cfg=r.config: k.launch(inp, cfg))
            variant = "+".join(f for f in ("QUANT_PASS", "PERSISTENT") if r.config.get(f))
            source = r.source + (f" ({variant})" if variant else "")
            for label, op in torch_paths(name, inp):
                ref = cupti_us(op)
                rows.append(
                    f"| {name} | {B}×{M}×{N}×{K} | {ours:.1f} | {label} | {ref:.1f} | {ours / ref:.2f} | {source} |"
                )
                print(rows[-1], flush=True)
            del inp
            torch.cuda.empty_cache()
    text = "\n".join(rows) + "\n"
    if a.out:
        a.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
