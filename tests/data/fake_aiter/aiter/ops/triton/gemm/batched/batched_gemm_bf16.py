"""The public op of the stand-in library: batched_gemm_bf16(XQ, WQ, bias, dtype, splitK, YQ, config)."""

import torch
import triton

from aiter.ops.triton._triton_kernels.gemm.batched.batched_gemm_bf16 import _batched_gemm_bf16_kernel, _get_config


def batched_gemm_bf16(XQ, WQ, bias=None, dtype=torch.bfloat16, splitK=None, YQ=None, config=None):
    assert XQ.shape[0] == WQ.shape[0], "Incompatible Batch dimensions!!!"
    assert XQ.shape[2] == WQ.shape[2], "Incompatible K dimensions!!!"
    assert bias is None, "the stand-in has no bias"
    WQ = WQ.transpose(1, 2)
    B, M, K = XQ.shape
    N = WQ.shape[2]
    if YQ is None:
        YQ = torch.empty((B, M, N), dtype=dtype, device=XQ.device)
    if config is None:
        config, _ = _get_config(M, N, K, B=B)
    grid = (B, triton.cdiv(M, config["BLOCK_SIZE_M"]) * triton.cdiv(N, config["BLOCK_SIZE_N"]))
    _batched_gemm_bf16_kernel[grid](
        XQ, WQ, YQ, M, N, K, *XQ.stride(), *WQ.stride(), *YQ.stride(), **config
    )  # fmt: skip
    return YQ
