"""Check every kernel against its high-precision reference on the GPU (or the CPU interpreter), odd shapes,
split-K and bias included. Prints one line per case and exits 1 if any case fails.

    python benchmarks/gpu_correctness.py [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
import triton  # noqa: E402

from kernels import REGISTRY, load  # noqa: E402
from kernels import _common as C  # noqa: E402
from kernels._config import resolve  # noqa: E402

SHAPES = [  # (B, M, N, K, extra)
    (4, 16, 512, 128, {}),
    (4, 100, 128, 512, {"bias": True}),
    (2, 333, 257, 320, {}),
    (2, 64, 8192, 1024, {"NUM_KSPLIT": 4}),
    (1, 2048, 1024, 2048, {}),
]
_T = {"GROUP_SIZE_M": 8}
#: the kernel variants a config can ask for, on shapes with ragged tiles, a last partial wave, bias, odd K groups
VARIANTS = [  # (kernel, B, M, N, K, config overrides + bias)
    (
        "batched_gemm_bf16",
        3,
        200,
        512,
        128,
        {
            "bias": True,
            "PERSISTENT": 1,
            "BLOCK_SIZE_M": 128,
            "BLOCK_SIZE_N": 128,
            "BLOCK_SIZE_K": 128,
            "num_warps": 8,
            "num_stages": 3,
            **_T,
        },
    ),
    (
        "batched_gemm_bf16",
        5,
        100,
        384,
        256,
        {
            "PERSISTENT": 2,
            "EPILOGUE_SUBTILE": 1,
            "BLOCK_SIZE_M": 64,
            "BLOCK_SIZE_N": 128,
            "BLOCK_SIZE_K": 64,
            "num_warps": 4,
            "num_stages": 3,
            **_T,
        },
    ),
    (
        "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant",
        3,
        200,
        512,
        384,
        {"bias": True, "QUANT_PASS": 1, "BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "num_warps": 4, "num_stages": 3, **_T},
    ),
    (
        "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant",
        5,
        100,
        384,
        1152,
        {
            "bias": True,
            "QUANT_PASS": 1,
            "PERSISTENT": 1,
            "K_GROUPS": 2,
            "BLOCK_SIZE_M": 128,
            "BLOCK_SIZE_N": 128,
            "num_warps": 8,
            "num_stages": 3,
            **_T,
        },
    ),
    (
        "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant",
        2,
        64,
        8192,
        1024,
        {"QUANT_PASS": 1, "NUM_KSPLIT": 4},
    ),
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    lines = [f"# triton {triton.__version__}, torch {torch.__version__}, backend {C.backend()}, arch {C.arch()}"]
    if C.backend() != "interp":
        lines.append(f"# GPU {torch.cuda.get_device_name()}")
    bad = 0
    runs = [(name, *shape) for name in REGISTRY for shape in SHAPES] + VARIANTS
    for name, B, M, N, K, extra in runs:
        k = load(name)
        case = {"B": B, "M": M, "N": N, "K": K, "bias": extra.get("bias", False)}
        why = k.supported(case) if hasattr(k, "supported") else None
        if why:
            lines.append(f"SKIP {name:>24.24} {B}x{M}x{N}x{K}: {why}")
            continue
        try:
            r = resolve(k.CONFIG_NAME, C.arch(), M, N, K)
            cfg = dict(r.config, **{x: v for x, v in extra.items() if x != "bias"})
            inputs = k.make_inputs(case, seed=1234 + M)
            C.poison_(inputs["y"])
            t0 = time.perf_counter()
            y = k.launch(inputs, cfg)
            if C.backend() != "interp":
                torch.cuda.synchronize()
            dt = time.perf_counter() - t0
            err = C.rel_frobenius(y, k.reference(inputs))
            tol = k.tolerance(case)
            ok = err <= tol
        except Exception as exc:  # noqa: BLE001
            ok, err, tol, dt, r = False, float("nan"), float("nan"), 0.0, None
            lines.append(f"ERROR {name} {B}x{M}x{N}x{K}: {type(exc).__name__}: {str(exc)[:300]}")
        bad += not ok
        src = r.source if r else ""
        over = {x: v for x, v in extra.items() if x not in ("bias", *_T)}
        src += f" + {over}" if over else ""
        lines.append(
            f"{'PASS' if ok else 'FAIL'} {name:>24.24} B={B} M={M} N={N} K={K}{' bias' if case['bias'] else ''}"
            f": rel_err={err:.2e} (tol {tol:g}) first launch {dt:.2f}s [{src}]"
        )
    lines.append(f"# {bad} failures")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        a.out.write_text(text)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
