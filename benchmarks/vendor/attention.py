"""torch's fused attention on the same inputs as kernels/attention.py, one entry per SDPA backend.

Each op is ``torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)`` with exactly one
backend allowed (``torch.nn.attention.sdpa_kernel``), so a timing names the library that ran:

  * ``sdpa (flash)``: SDPBackend.FLASH_ATTENTION, PyTorch's bundled FlashAttention-2 kernels (sm80+).
  * ``sdpa (efficient)``: SDPBackend.EFFICIENT_ATTENTION, the xFormers / CUTLASS memory-efficient kernel.
  * ``sdpa (cudnn)``: SDPBackend.CUDNN_ATTENTION, cuDNN's fused flash attention (on Hopper its sm90 kernels).

The math backend (an S×S matrix in memory) is not a contender and is left out. Grouped-query cases (GQA > 1)
pass ``enable_gqa=True`` (torch >= 2.5), so K/V are read at their own size; a backend that refuses GQA gets K and V
expanded to H heads beforehand (``repeat_interleave``, outside the timed call), is named ``... K/V expanded``, and
reads GQA times more K/V bytes than our kernel. A backend that refuses a case altogether is left out of the
returned ops, with torch's reason printed on stderr. Each op is run once here (which also warms it up).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F

#: the largest shapes of suites/attention.yaml (S = 16384, both head dims, causal and not), its GQA cases, the
#: fp16 variant of the largest, and a short-sequence case (S = 1024) where launch and tail effects weigh more
CASES: list[dict[str, Any]] = [
    {"B": 1, "H": 16, "GQA": 1, "S": 16384, "D": 128, "causal": False, "dtype": "bf16"},
    {"B": 1, "H": 16, "GQA": 1, "S": 16384, "D": 128, "causal": True, "dtype": "bf16"},
    {"B": 1, "H": 32, "GQA": 1, "S": 16384, "D": 64, "causal": False, "dtype": "bf16"},
    {"B": 1, "H": 32, "GQA": 1, "S": 16384, "D": 64, "causal": True, "dtype": "bf16"},
    {"B": 1, "H": 16, "GQA": 1, "S": 16384, "D": 128, "causal": True, "dtype": "fp16"},
    {"B": 2, "H": 32, "GQA": 4, "S": 8192, "D": 128, "causal": True, "dtype": "bf16"},
    {"B": 1, "H": 64, "GQA": 8, "S": 4096, "D": 128, "causal": True, "dtype": "bf16"},
    {"B": 16, "H": 16, "GQA": 1, "S": 1024, "D": 128, "causal": False, "dtype": "bf16"},
    {"B": 16, "H": 16, "GQA": 1, "S": 1024, "D": 128, "causal": True, "dtype": "bf16"},
]


def backends() -> dict[str, Any]:
    """Our names for the fused SDPA backends this torch has."""
    from torch.nn.attention import SDPBackend

    names = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION", "cudnn": "CUDNN_ATTENTION"}
    return {n: getattr(SDPBackend, b) for n, b in names.items() if hasattr(SDPBackend, b)}


def sdpa_op(
    backend: Any, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, gqa: bool
) -> Callable[[], torch.Tensor]:
    """SDPA with only ``backend`` allowed (``gqa``: pass enable_gqa=True, K/V having fewer heads than Q)."""
    from torch.nn.attention import sdpa_kernel

    kwargs = {"is_causal": causal, "enable_gqa": True} if gqa else {"is_causal": causal}

    def op() -> torch.Tensor:
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, **kwargs)

    return op


def _try(op: Callable[[], torch.Tensor]) -> str | None:
    """Why ``op`` cannot run (torch's warnings name the reasons a backend was refused), None when it ran."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            op()
        except (RuntimeError, TypeError, ValueError) as exc:
            reasons = "; ".join(str(w.message).splitlines()[0] for w in caught)
            return f"{str(exc).splitlines()[0]}{f' ({reasons})' if reasons else ''}"
    return None


def vendor_ops(params: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    """``{name: op}`` for each SDPA backend that runs this case (see the module doc), on our kernel's inputs."""
    q, k, v, causal = inputs["q"], inputs["k"], inputs["v"], bool(inputs["causal"])
    groups = q.shape[1] // k.shape[1]
    ops: dict[str, Callable[[], Any]] = {}
    expanded: tuple[torch.Tensor, torch.Tensor] | None = None
    for name, backend in backends().items():
        op = sdpa_op(backend, q, k, v, causal, groups > 1)
        why = _try(op)
        label = f"sdpa ({name})"
        if why and groups > 1:
            if expanded is None:
                expanded = (k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1))
            op_expanded = sdpa_op(backend, q, *expanded, causal, False)
            if _try(op_expanded) is None:
                print(f"{label}: enable_gqa refused ({why}); K/V expanded to {q.shape[1]} heads", file=sys.stderr)
                op, label, why = op_expanded, f"sdpa ({name}, K/V expanded)", None
        if why:
            print(f"{label}: left out for {params}: {why}", file=sys.stderr)
            continue
        ops[label] = op
    return ops
