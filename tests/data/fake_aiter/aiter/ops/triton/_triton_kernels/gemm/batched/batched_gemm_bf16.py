"""Y[b] = X[b] @ W[b]^T on bf16/fp16, one program per output tile (stand-in for AITER's kernel)."""

import triton
import triton.language as tl

from aiter.ops.triton.utils._triton import arch_info  # noqa: F401 - imported at load, as AITER's utils do
from aiter.ops.triton.utils.gemm_config_utils import compute_splitk_params, get_gemm_config


@triton.jit
def _batched_gemm_bf16_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_ab, stride_am, stride_ak, stride_bb, stride_bk, stride_bn, stride_cb, stride_cm, stride_cn,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr, NUM_KSPLIT: tl.constexpr, SPLITK_BLOCK_SIZE: tl.constexpr,
    waves_per_eu: tl.constexpr,
):  # fmt: skip
    pid_b = tl.program_id(0)
    pid = tl.program_id(1)
    tiles_n = tl.cdiv(N, BLOCK_SIZE_N)
    pid_m, pid_n = pid // tiles_n, pid % tiles_n
    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a = a_ptr + pid_b * stride_ab + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b = b_ptr + pid_b * stride_bb + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, SPLITK_BLOCK_SIZE // BLOCK_SIZE_K):  # a constexpr bound: the interpreter's loops need one
        ka = offs_k + k * BLOCK_SIZE_K
        x = tl.load(a, mask=(offs_m[:, None] < M) & (ka[None, :] < K), other=0.0)
        w = tl.load(b, mask=(ka[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
        a += BLOCK_SIZE_K * stride_ak
        b += BLOCK_SIZE_K * stride_bk
    c = c_ptr + pid_b * stride_cb + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _get_config(M, N, K, B=None):
    config, tuned, _, _ = get_gemm_config("BATCHED_GEMM-A16W16", M, N, K, B=B)
    return compute_splitk_params(config, K), tuned
