"""The kernels' public helpers (``from kernels import common``): device facts (``backend()``, ``arch()``,
``device()``), random inputs that are never zeros, the correctness metric and the output poison the worker uses,
MXFP4 helpers, the split-K reduce kernel. What a user's kernel file, an adapter of another library's op and the
worker may import; names with a leading underscore stay private to the shipped kernels. Needs only torch and
triton (it runs inside each environment's worker)."""

from __future__ import annotations

import os
from typing import Any

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET", "0") == "1"
MXFP4_GROUP = 32
#: the e2m1 magnitudes for codes 0..7 (bit 3 is the sign)
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def backend() -> str:
    """'interp' (CPU interpreter), 'hip' (AMD) or 'cuda' (NVIDIA)."""
    if INTERPRET:
        return "interp"
    return "hip" if torch.version.hip else "cuda"


def arch() -> str:
    """The config-file arch: ``sm90`` on Hopper, ``gfx942`` / ``gfx950`` on AMD, ``interp`` on the CPU."""
    b = backend()
    if b == "interp":
        return "interp"
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    if b == "hip":
        return props.gcnArchName.split(":")[0]
    return f"sm{props.major}{props.minor}"


def device() -> str:
    return "cpu" if INTERPRET else "cuda"


def fp8_dtype() -> torch.dtype:
    """OCP e4m3 on NVIDIA and gfx950; the fnuz variant on gfx942 (MI300)."""
    if backend() == "hip" and arch() == "gfx942":
        return torch.float8_e4m3fnuz
    return torch.float8_e4m3fn


def rand(
    shape: tuple[int, ...], dtype: torch.dtype, gen: torch.Generator, dev: str, scale: float = 1.0
) -> torch.Tensor:
    """Standard normal values (never zeros: zeros hide unwritten outputs and run faster than real data)."""
    x = torch.randn(shape, generator=gen, device=dev, dtype=torch.float32) * scale
    return x.to(dtype)


def generator(seed: int, dev: str) -> torch.Generator:
    g = torch.Generator(device=dev)
    g.manual_seed(seed)
    return g


def rel_frobenius(out: torch.Tensor, ref: torch.Tensor) -> float:
    """‖out − ref‖ / ‖ref‖ in float64; NaN or Inf anywhere in ``out`` gives inf (never passes)."""
    o, r = out.double(), ref.double()
    if not torch.isfinite(o).all():
        return float("inf")
    den = torch.linalg.vector_norm(r).item()
    return torch.linalg.vector_norm(o - r).item() / max(den, 1e-300)


def poison_(y: torch.Tensor) -> torch.Tensor:
    """Fill an output with NaN so any element the kernel fails to write is caught by the check."""
    return y.fill_(float("nan"))


# ----------------------------------------------------------------------------------------------- MXFP4
def mxfp4_scale_exponent(amax: torch.Tensor) -> torch.Tensor:
    """Biased e8m0 exponent e such that amax / 2**(e-127) <= 6 (e2m1's largest magnitude), exactly.

    amax = m * 2**E with m in [1, 2): e = E - 2 if m <= 1.5 else E - 1 (integer arithmetic on the bits,
    so the kernel and this reference agree bit for bit). Clamped to [1, 253].
    """
    bits = amax.float().contiguous().view(torch.int32)
    bexp = (bits >> 23) & 0xFF
    mant = bits & 0x7FFFFF
    e = bexp - 2 + (mant > 0x400000).to(torch.int32)
    return e.clamp(1, 253)


def e2m1_encode(v: torch.Tensor) -> torch.Tensor:
    """float32 → 4-bit e2m1 codes (uint8 0..15), round to nearest, ties up, saturating at 6."""
    a = v.abs()
    code = torch.zeros_like(a, dtype=torch.int32)
    for t in (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0):
        code += (a >= t).to(torch.int32)
    return (code | ((v < 0).to(torch.int32) << 3)).to(torch.uint8)


def e2m1_decode(codes: torch.Tensor) -> torch.Tensor:
    lut = torch.tensor(E2M1_VALUES, dtype=torch.float32, device=codes.device)
    mag = lut[(codes & 7).long()]
    return torch.where((codes & 8) != 0, -mag, mag)


#: rows × K elements (de)quantized at once: the encode's temporaries are many times the input's size, and a worker
#: shares its GPU with the other stacks' workers (a 16×8192×8192 weight needs 4 GiB as float32, its encode several
#: times that)
MXFP4_CHUNK = 1 << 26


def _row_chunks(n_rows: int, k: int) -> list[slice]:
    step = max(1, MXFP4_CHUNK // max(k, 1))
    return [slice(i, i + step) for i in range(0, n_rows, step)]


def mxfp4_quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(..., K) float → packed e2m1 (..., K/2) uint8 (low nibble = even k) and e8m0 scales (..., K/32)."""
    *lead, K = x.shape
    flat = x.reshape(-1, K)
    packed = torch.empty((flat.shape[0], K // 2), dtype=torch.uint8, device=x.device)
    scales = torch.empty((flat.shape[0], K // MXFP4_GROUP), dtype=torch.uint8, device=x.device)
    for rows in _row_chunks(flat.shape[0], K):
        packed[rows], scales[rows] = _mxfp4_quantize_rows(flat[rows])
    return packed.reshape(*lead, K // 2), scales.reshape(*lead, K // MXFP4_GROUP)


def _mxfp4_quantize_rows(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    n, K = x.shape
    g = x.float().reshape(n, K // MXFP4_GROUP, MXFP4_GROUP)
    e = mxfp4_scale_exponent(g.abs().amax(dim=-1))
    inv = ((254 - e) << 23).view(torch.float32)  # 2**(127 - e), exact
    codes = e2m1_encode(g * inv.unsqueeze(-1)).reshape(n, K)
    return codes[:, 0::2] | (codes[:, 1::2] << 4), e.to(torch.uint8)


def mxfp4_dequantize(packed: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`mxfp4_quantize`, in float32."""
    *lead, Kh = packed.shape
    flat, fs = packed.reshape(-1, Kh), scales.reshape(-1, scales.shape[-1])
    out = torch.empty((flat.shape[0], Kh * 2), dtype=torch.float32, device=packed.device)
    for rows in _row_chunks(flat.shape[0], Kh * 2):
        out[rows] = _mxfp4_dequantize_rows(flat[rows], fs[rows])
    return out.reshape(*lead, Kh * 2)


def _mxfp4_dequantize_rows(packed: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    n, Kh = packed.shape
    codes = torch.stack([packed & 0xF, packed >> 4], dim=-1).reshape(n, Kh * 2)
    vals = e2m1_decode(codes).reshape(n, Kh * 2 // MXFP4_GROUP, MXFP4_GROUP)
    scale = ((scales.to(torch.int32)) << 23).view(torch.float32)  # 2**(e - 127)
    return (vals * scale.unsqueeze(-1)).reshape(n, Kh * 2)


@triton.jit
def _mxfp4_quant_tile(x, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    """A (BLOCK_M, BLOCK_K) fp32 tile → packed e2m1 (BLOCK_M, BLOCK_K//2) uint8 + e8m0 (BLOCK_M, BLOCK_K//32)."""
    g = tl.reshape(x, (BLOCK_M, BLOCK_K // 32, 32))
    amax = tl.max(tl.abs(g), axis=2)
    bits = amax.to(tl.int32, bitcast=True)
    e = ((bits >> 23) & 0xFF) - 2 + ((bits & 0x7FFFFF) > 0x400000).to(tl.int32)
    e = tl.minimum(tl.maximum(e, 1), 253)
    inv = ((254 - e) << 23).to(tl.float32, bitcast=True)
    v = g * inv[:, :, None]
    a = tl.abs(v)
    code = (
        (a >= 0.25).to(tl.int32)
        + (a >= 0.75).to(tl.int32)
        + (a >= 1.25).to(tl.int32)
        + (a >= 1.75).to(tl.int32)
        + (a >= 2.5).to(tl.int32)
        + (a >= 3.5).to(tl.int32)
        + (a >= 5.0).to(tl.int32)
    )
    code = code | ((v < 0).to(tl.int32) << 3)
    code = tl.reshape(code, (BLOCK_M, BLOCK_K // 2, 2))
    lo, hi = tl.split(code)
    packed = (lo | (hi << 4)).to(tl.uint8)
    return packed, e.to(tl.uint8)


# -------------------------------------------------------------------------------------------- split-K
@triton.jit
def _splitk_reduce_kernel(
    pp_ptr,
    y_ptr,
    M,
    N,
    stride_pb,
    stride_pk,
    stride_pm,
    stride_pn,
    stride_yb,
    stride_ym,
    stride_yn,
    NUM_KSPLIT: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    """y[b] = sum over k-splits of the fp32 partials (scales and bias were applied by the main kernel)."""
    pid_b = tl.program_id(1)
    pid = tl.program_id(0)
    num_n = tl.cdiv(N, BLOCK_N)
    offs_m = (pid // num_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = (pid % num_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    base = pp_ptr + pid_b * stride_pb + offs_m[:, None] * stride_pm + offs_n[None, :] * stride_pn
    for k in range(NUM_KSPLIT):
        acc += tl.load(base + k * stride_pk, mask=mask, other=0.0)
    y = y_ptr + pid_b * stride_yb + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y, acc.to(y_ptr.dtype.element_ty), mask=mask)


def splitk_reduce(pp: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    B, S, M, N = pp.shape
    bm, bn = 16, 64
    grid = (triton.cdiv(M, bm) * triton.cdiv(N, bn), B)
    _splitk_reduce_kernel[grid](pp, y, M, N, *pp.stride(), *y.stride(), NUM_KSPLIT=S, BLOCK_M=bm, BLOCK_N=bn)
    return y


def splitk_plan(K: int, config: dict[str, Any], k_align: int) -> tuple[int, int]:
    """(NUM_KSPLIT, SPLITK_BLOCK_SIZE): each split covers a multiple of BLOCK_SIZE_K (and of ``k_align``)."""
    ks = int(config.get("NUM_KSPLIT", 1) or 1)
    bk = int(config["BLOCK_SIZE_K"])
    if ks <= 1:
        return 1, triton.cdiv(K, bk) * bk
    step = max(bk, k_align)
    per = triton.cdiv(triton.cdiv(K, ks), step) * step
    return triton.cdiv(K, per), per


def grid(B: int, M: int, N: int, config: dict[str, Any], num_ksplit: int = 1) -> tuple[int, int]:
    """(tiles, B): the tile index varies fastest, so CTAs resident together work on one batch and reuse its
    X rows and W columns from L2 (batch-fastest order made the 8192^2 family re-read W from DRAM per CTA)."""
    return (num_ksplit * triton.cdiv(M, config["BLOCK_SIZE_M"]) * triton.cdiv(N, config["BLOCK_SIZE_N"]), B)


@triton.jit
def _tile_ids(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr, NUM_KSPLIT: tl.constexpr):
    """(pid_m, pid_n, pid_k) for program ``pid``; GROUP_M > 1 gives the grouped (L2-friendly) order."""
    pid_k = pid % NUM_KSPLIT
    pid = pid // NUM_KSPLIT
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    if GROUP_M == 1:
        pid_m = pid // num_n
        pid_n = pid % num_n
    else:
        per_group = GROUP_M * num_n
        group = pid // per_group
        first_m = group * GROUP_M
        size_m = min(num_m - first_m, GROUP_M)
        pid_m = first_m + ((pid % per_group) % size_m)
        pid_n = (pid % per_group) // size_m
    return pid_m, pid_n, pid_k


def triton_version() -> tuple[int, ...]:
    return tuple(int(p) for p in triton.__version__.split("+")[0].split(".")[:2] if p.isdigit())


def dot_scaled_unsupported() -> str | None:
    if INTERPRET and triton_version() < (3, 9):
        return f"tl.dot_scaled is not supported by the Triton {triton.__version__} interpreter (needs >= 3.9)"
    return None


# ------------------------------------------------------------------------------ persistent TMA kernels
def tma_unsupported(*tensors: torch.Tensor) -> str | None:
    """Why the persistent TMA variant cannot run on these tensors here (None when it can). It needs Hopper or
    newer (or the Triton >= 3.9 interpreter: 3.6's cannot run a loop with tensor bounds), a unit last stride,
    and 16-byte aligned base pointers and outer strides (TMA descriptor rules)."""
    if backend() == "hip":
        return "TMA descriptors are NVIDIA-only"
    if INTERPRET and triton_version() < (3, 9):
        return f"the Triton {triton.__version__} interpreter cannot run the persistent loop (needs >= 3.9)"
    if backend() == "cuda" and torch.cuda.get_device_capability()[0] < 9:
        return "TMA needs sm90 or newer"
    for t in tensors:
        if t.stride(-1) != 1 or t.data_ptr() % 16 or any(s * t.element_size() % 16 for s in t.stride()[:-1]):
            return f"a {tuple(t.shape)} tensor with strides {t.stride()} is not TMA-aligned (16 bytes)"
    return None


def num_sms() -> int:
    if INTERPRET:
        return 2
    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


def num_tiles(B: int, M: int, N: int, config: dict[str, Any]) -> int:
    return B * triton.cdiv(M, config["BLOCK_SIZE_M"]) * triton.cdiv(N, config["BLOCK_SIZE_N"])


def persistent_programs(B: int, M: int, N: int, config: dict[str, Any]) -> int:
    """Programs of a persistent launch: ``PERSISTENT`` per SM, never more than there are output tiles."""
    return max(1, min(num_tiles(B, M, N, config), num_sms() * int(config["PERSISTENT"])))


def descriptor(t: torch.Tensor, block: list[int]) -> Any:
    """A host-side TMA descriptor over ``t`` (out-of-bounds loads read zeros, out-of-bounds stores are dropped)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    return TensorDescriptor.from_tensor(t, block)


def use_persistent(meta: dict[str, Any], num_ksplit: int, *tensors: torch.Tensor) -> bool:
    """A config asks for the persistent TMA variant with ``PERSISTENT: n`` (n programs per SM); split-K configs
    and tensors TMA cannot address use the pointer kernel with the same tiles."""
    return bool(meta.get("PERSISTENT")) and num_ksplit == 1 and tma_unsupported(*tensors) is None


@triton.jit
def _persistent_tile(i, pid, M, N, NUM_PROGRAMS, NUM_TILES, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                     GROUP_M: tl.constexpr):  # fmt: skip
    """(batch, first row, first column, live) of the i-th tile of program ``pid``. Past the last tile (live is
    False) the batch index runs out of range: TMA reads zeros there and drops the stores, so the loop needs no
    branch, but pointer loads (scales, bias) must be masked with ``live``
    (``offs < tl.where(live, N, 0)``: the interpreter cannot AND a block mask with a scalar)."""
    tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    t = pid + i * NUM_PROGRAMS
    pid_m, pid_n, _ = _tile_ids(t % tiles, M, N, BLOCK_M, BLOCK_N, GROUP_M, 1)
    return t // tiles, pid_m * BLOCK_M, pid_n * BLOCK_N, t < NUM_TILES


@triton.jit
def _bias_row(bias_ptr, b, stride_bias_b, off_n, N, live, BLOCK_N: tl.constexpr):
    """The (1, BLOCK_N) fp32 bias row of batch ``b`` for a persistent tile (zeros past the last tile)."""
    offs_n = off_n + tl.arange(0, BLOCK_N)
    bias = tl.load(bias_ptr + b.to(tl.int64) * stride_bias_b + offs_n, mask=offs_n < tl.where(live, N, 0), other=0.0)
    return bias.to(tl.float32)[None, :]


@triton.jit
def _store_tile(y_desc, acc, b, off_m, off_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SUBTILE: tl.constexpr):
    """Store an fp32 tile through a TMA descriptor in the output dtype: whole, or as two (BLOCK_M, BLOCK_N/2)
    halves (SUBTILE=1; the descriptor's block is then half as wide)."""
    if SUBTILE:
        halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
        lo, hi = tl.split(halves)
        y_desc.store([b, off_m, off_n], lo.to(y_desc.dtype).reshape(1, BLOCK_M, BLOCK_N // 2))
        y_desc.store([b, off_m, off_n + BLOCK_N // 2], hi.to(y_desc.dtype).reshape(1, BLOCK_M, BLOCK_N // 2))
    else:
        y_desc.store([b, off_m, off_n], acc.to(y_desc.dtype).reshape(1, BLOCK_M, BLOCK_N))


# ------------------------------------------------------------------------------------- host-side launch
#: the config keys every GEMM kernel takes as meta-parameters
TILE_KEYS = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M")


def tile_meta(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: meta[k] for k in TILE_KEYS}


def splitk_target(y: torch.Tensor, num_ksplit: int) -> tuple[torch.Tensor, tuple[int, int, int, int]]:
    """Where a main kernel writes, and its (b, m, n, k-split) strides: ``y`` itself without split-K, else fp32
    partials (B, NUM_KSPLIT, M, N) that :func:`splitk_finish` reduces into ``y``."""
    if num_ksplit == 1:
        return y, (*y.stride(), 0)
    B, M, N = y.shape
    out = torch.empty((B, num_ksplit, M, N), dtype=torch.float32, device=y.device)
    return out, (out.stride(0), out.stride(2), out.stride(3), out.stride(1))


def splitk_finish(out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return y if out is y else splitk_reduce(out, y)
