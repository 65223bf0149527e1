"""O = softmax(Q Kᵀ / √D [+ causal mask]) V: a FlashAttention-2-style fused forward pass, bf16 or fp16 inputs.

Layout: q and o are (B, H, S, D), k and v (B, H/GQA, S, D), all contiguous in D; query head h reads K/V head
h // GQA (grouped-query attention; GQA = 1 is plain multi-head attention). Queries and keys have the same length
S; the causal mask is the usual top-left one (query i sees keys 0..i).

One program per (query block of BLOCK_M rows, batch·head). It keeps its Q tile in registers and streams K/V in
blocks of BLOCK_N keys, with the online softmax: per row a running max m and a running sum l of exp2(s − m), the
fp32 accumulator rescaled by exp2(m_old − m_new) whenever the max grows, divided by l once at the end. Scores are
scaled by log2(e)/√D in fp32 so that exp2 (one MUFU instruction) replaces exp. P is cast to the input dtype for
the P·V product (as FlashAttention does: the tensor cores take 16-bit operands); both products accumulate in
fp32.

The K/V blocks of a program fall in two kinds, each its own loop so that only the few that need it pay for
masking:
  * full blocks, every key visible to every row: no mask, unmasked loads. Non-causal: keys [0, S//BLOCK_N·BLOCK_N).
    Causal: the keys before the query block's diagonal, [0, ⌊m0/BLOCK_N⌋·BLOCK_N) for the block starting at m0.
  * masked blocks: causal, the max(BLOCK_M//BLOCK_N, 1) blocks on the diagonal (key ≤ query and key < S; tiles
    are powers of two, so these always cover the query block); non-causal, the one ragged tail block when S is
    not a multiple of BLOCK_N (key < S; a constexpr EVEN_N drops it).
The masked loops have constexpr trip counts. Every row sees key 0 in the first block it processes, so the
running max is finite from the first block on and a fully masked later block contributes exactly zero.
Causal launches run the query blocks in reverse (the longest programs first) so the short ones fill the tail.

Interpreters: Triton 3.6's interpreter cannot run a loop whose bounds are runtime values (under numpy 2 its
``range`` calls int() on a one-element array and fails), and the full-block loop's trip count is a runtime value
(it depends on S, and for causal on the program id). The constexpr-trip-count form of that loop, ⌈S/BLOCK_N⌉
trips with a runtime ``if`` skipping the blocks past the bound, is slow on the GPU: the K/V loads sit under a
branch, which Triton's software pipeliner does not pipeline (compiled for sm_90 with BLOCK 128x64, D 128, 3
stages, its non-causal loop has no cp.async where the runtime-bound loop has 24), and it recompiles for every S.
So the kernel has two drivers of that one loop, picked by the constexpr STATIC_LOOPS, around the same block step
(``_attn_block``) and the same masked loops and epilogue:
  * STATIC_LOOPS=False (GPUs, and Triton >= 3.9's interpreter): ``for start_n in range(0, hi, BLOCK_N)``, a
    runtime-bound loop the pipeliner overlaps with the tensor-core work.
  * STATIC_LOOPS=True (only Triton < 3.9's interpreter): ``for j in range(MAX_FULL_BLOCKS)`` (constexpr,
    ⌈S/BLOCK_N⌉) with a runtime ``if j·BLOCK_N < hi`` around the same step.
Both visit the same blocks in the same order with the same arithmetic, so they agree bit for bit; the CPU tests
run the GPU driver under Triton 3.9's interpreter, the static one under 3.6's, and both under 3.9's to show they
agree.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import triton
import triton.language as tl

from harness import ConfigLookup, KernelSpec, Param, Plot, dim, dtype, split_config
from kernels import common as C

#: log2(e): the scores are scaled by log2(e)/sqrt(D) so the softmax can use exp2
LOG2E = 1.4426950408889634
#: float64 elements of one reference score chunk (B·H·rows·S): 2**27 is 1 GiB
REFERENCE_CHUNK = 2**27


def _flops(p: dict[str, Any]) -> float:
    """Two products of 2·S·S·D per (batch, head); causal counts the unmasked half only (the usual convention)."""
    return 4.0 * p["B"] * p["H"] * p["S"] ** 2 * p["D"] * (0.5 if p["causal"] else 1.0)


def _bytes(p: dict[str, Any]) -> float:
    """q and o (B, H, S, D), k and v (B, H/GQA, S, D), 2 bytes each, each read or written once."""
    return 2.0 * p["B"] * p["S"] * p["D"] * (2 * p["H"] + 2 * (p["H"] // p["GQA"]))


SPEC = KernelSpec(
    name="attention_fwd",
    description="O = softmax(Q K^T / sqrt(D), causal or not) V, bf16 or fp16, GQA, fp32 accumulation (flash fwd)",
    params=(
        dim("B", help="batch"),
        dim("H", help="query heads"),
        Param("GQA", "int", 1, min=1, help="query heads per K/V head (H must be a multiple of it)"),
        dim("S", help="sequence length (queries = keys)"),
        Param("D", "int", choices=(64, 128), help="head dimension"),
        Param("causal", "bool", False, help="top-left causal mask: query i sees keys 0..i"),
        dtype(("bf16", "fp16"), "bf16"),
    ),
    flops=_flops,
    bytes=_bytes,
    peak="bf16",
    dtype="{dtype}",
    # against the float64 reference the interpreter gives 2.0e-4 to 2.6e-4 with fp16 (P rounded to fp16 for P·V, O
    # rounded once): 3e-3 leaves a margin; bf16 has 3 fewer mantissa bits (8x the rounding error)
    tolerance={"bf16": 2e-2, "fp16": 3e-3},
    # causal specializes too: it changes the work per program (a triangle, heaviest first) and adds masked
    # diagonal blocks (half their scores wasted; a smaller tile wastes less), so other tiles may win; one file per
    # (D, causal) keeps the tuned buckets of one from overwriting the other's
    config=ConfigLookup("ATTN-FWD", bucket="S", specialize=("D", "causal")),
    config_keys=("BLOCK_M", "BLOCK_N"),
    check=lambda p: None if p["H"] % p["GQA"] == 0 else f"H={p['H']} is not a multiple of GQA={p['GQA']}",
    plot=Plot(x="S", series=("D", "causal")),
)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


@triton.jit
def _attn_block(
    acc, l_i, m_i, q, k_base, v_base, start_n, offs_m, S, stride_ks, stride_vs, qk_scale,
    BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, MASK: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    """One K/V block of the online softmax: the new (acc, l, m) after keys [start_n, start_n + BLOCK_N).

    MASK: keys >= S are loaded as zeros and scored -inf; with CAUSAL also keys after the row's query."""
    kv = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    k_ptrs = k_base + kv[:, None] * stride_ks + offs_d[None, :]
    v_ptrs = v_base + kv[:, None] * stride_vs + offs_d[None, :]
    if MASK:
        k = tl.load(k_ptrs, mask=kv[:, None] < S, other=0.0)
        v = tl.load(v_ptrs, mask=kv[:, None] < S, other=0.0)
    else:
        k = tl.load(k_ptrs)
        v = tl.load(v_ptrs)
    s = tl.dot(q, tl.trans(k))  # (BLOCK_M, BLOCK_N) fp32 raw scores
    if MASK:
        keep = kv[None, :] < S
        if CAUSAL:
            keep = keep & (kv[None, :] <= offs_m[:, None])
        s = tl.where(keep, s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)  # qk_scale > 0: max(s)·c is max(s·c)
    p = tl.math.exp2(s * qk_scale - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)  # rescales what was summed under the old max (1 when it did not grow)
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None]
    acc = tl.dot(p.to(v.dtype), v, acc)
    return acc, l_i, m_new


@triton.jit
def _attn_fwd_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, S, H, GQA, qk_scale,
    stride_qb, stride_qh, stride_qs, stride_kb, stride_kh, stride_ks,
    stride_vb, stride_vh, stride_vs, stride_ob, stride_oh, stride_os,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
    EVEN_N: tl.constexpr, DIAG_BLOCKS: tl.constexpr, STATIC_LOOPS: tl.constexpr, MAX_FULL_BLOCKS: tl.constexpr,
):  # fmt: skip
    # causal: the last query blocks have the most keys; launching them first keeps the tail of the grid short
    start_m = tl.num_programs(0) - 1 - tl.program_id(0) if CAUSAL else tl.program_id(0)
    pid_bh = tl.program_id(1)  # batch·head is the slow grid axis: the CTAs resident together share K/V in L2
    off_b = (pid_bh // H).to(tl.int64)
    off_h = pid_bh % H
    off_hk = (off_h // GQA).to(tl.int64)
    k_base = k_ptr + off_b * stride_kb + off_hk * stride_kh
    v_base = v_ptr + off_b * stride_vb + off_hk * stride_vh

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q_ptrs = q_ptr + off_b * stride_qb + off_h.to(tl.int64) * stride_qh + offs_m[:, None] * stride_qs + offs_d[None, :]
    q = tl.load(q_ptrs, mask=offs_m[:, None] < S, other=0.0)

    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)

    # full blocks: keys below the diagonal block (causal) or every whole block (not causal)
    hi = (start_m * BLOCK_M // BLOCK_N) * BLOCK_N if CAUSAL else (S // BLOCK_N) * BLOCK_N
    if STATIC_LOOPS:
        for j in range(MAX_FULL_BLOCKS):
            if j * BLOCK_N < hi:
                acc, l_i, m_i = _attn_block(
                    acc, l_i, m_i, q, k_base, v_base, j * BLOCK_N, offs_m, S, stride_ks, stride_vs, qk_scale,
                    BLOCK_N, HEAD_DIM, False, CAUSAL,
                )  # fmt: skip
    else:
        for start_n in range(0, hi, BLOCK_N):
            acc, l_i, m_i = _attn_block(
                acc, l_i, m_i, q, k_base, v_base, start_n, offs_m, S, stride_ks, stride_vs, qk_scale,
                BLOCK_N, HEAD_DIM, False, CAUSAL,
            )  # fmt: skip

    # masked blocks: the diagonal (causal; tiles are powers of two, so these cover [m0, m0 + BLOCK_M)) or the
    # ragged tail (not causal)
    if CAUSAL:
        for j in range(DIAG_BLOCKS):
            acc, l_i, m_i = _attn_block(
                acc, l_i, m_i, q, k_base, v_base, hi + j * BLOCK_N, offs_m, S, stride_ks, stride_vs, qk_scale,
                BLOCK_N, HEAD_DIM, True, CAUSAL,
            )  # fmt: skip
    elif not EVEN_N:
        acc, l_i, m_i = _attn_block(
            acc, l_i, m_i, q, k_base, v_base, hi, offs_m, S, stride_ks, stride_vs, qk_scale,
            BLOCK_N, HEAD_DIM, True, CAUSAL,
        )  # fmt: skip

    acc = acc / l_i[:, None]
    o_ptrs = o_ptr + off_b * stride_ob + off_h.to(tl.int64) * stride_oh + offs_m[:, None] * stride_os + offs_d[None, :]
    tl.store(o_ptrs, acc.to(o_ptr.dtype.element_ty), mask=offs_m[:, None] < S)


def static_loops() -> bool:
    """Whether this stack needs the constexpr-bound loop driver: only Triton < 3.9's interpreter (module doc)."""
    return C.INTERPRET and C.triton_version() < (3, 9)


def make_inputs(case: dict[str, Any], seed: int) -> dict[str, Any]:
    B, H, S, D, G = (int(case[k]) for k in ("B", "H", "S", "D", "GQA"))
    if H % G:
        raise ValueError(f"H={H} query heads is not a multiple of GQA={G} (query heads per K/V head)")
    dt = DTYPES[case["dtype"]]
    dev = C.device()
    g = C.generator(seed, dev)
    q = C.rand((B, H, S, D), dt, g, dev)
    k = C.rand((B, H // G, S, D), dt, g, dev)
    v = C.rand((B, H // G, S, D), dt, g, dev)
    y = torch.empty((B, H, S, D), dtype=dt, device=dev)
    return {"q": q, "k": k, "v": v, "causal": bool(case["causal"]), "y": y}


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    return run(inputs, config, static_loops())


def run(inputs: dict[str, Any], config: dict[str, Any], static: bool) -> torch.Tensor:
    """``launch`` with the loop driver chosen by the caller (tests run both under Triton 3.9's interpreter)."""
    q, k, v, y, causal = inputs["q"], inputs["k"], inputs["v"], inputs["y"], inputs["causal"]
    B, H, S, D = q.shape
    for t in (q, k, v, y):
        if t.stride(-1) != 1:
            raise ValueError(f"attention_fwd needs tensors contiguous in D, got strides {t.stride()}")
    meta, opts = split_config(config, C.backend())
    bm, bn = int(meta["BLOCK_M"]), int(meta["BLOCK_N"])
    grid = (triton.cdiv(S, bm), B * H)
    _attn_fwd_kernel[grid](
        q, k, v, y, S, H, H // k.shape[1], LOG2E / math.sqrt(D),
        *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *y.stride()[:3],
        HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal, EVEN_N=S % bn == 0,
        DIAG_BLOCKS=max(bm // bn, 1), STATIC_LOOPS=static,
        MAX_FULL_BLOCKS=triton.cdiv(S, bn) if static else 1, **opts,
    )  # fmt: skip
    return y


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    """softmax(Q Kᵀ/√D) V in float64, in chunks of query rows (a whole S×S float64 score matrix per head would
    not fit on the GPU at S = 16384); K/V heads are shared by GQA query heads through a broadcast."""
    q, k, v, causal = inputs["q"], inputs["k"], inputs["v"], inputs["causal"]
    B, H, S, D = q.shape
    Hk = k.shape[1]
    kd = k.double().unsqueeze(2)  # (B, Hk, 1, S, D)
    vd = v.double().unsqueeze(2)
    out = torch.empty((B, H, S, D), dtype=torch.float64, device=q.device)
    rows = max(1, REFERENCE_CHUNK // (B * H * S))
    for r0 in range(0, S, rows):
        r1 = min(S, r0 + rows)
        qc = q[:, :, r0:r1].double().reshape(B, Hk, H // Hk, r1 - r0, D)
        s = torch.matmul(qc, kd.transpose(-1, -2)) / math.sqrt(D)  # (B, Hk, GQA, rows, S)
        if causal:
            qi = torch.arange(r0, r1, device=q.device)[:, None]
            s.masked_fill_(torch.arange(S, device=q.device)[None, :] > qi, float("-inf"))
        out[:, :, r0:r1] = torch.matmul(torch.softmax(s, dim=-1), vd).reshape(B, H, r1 - r0, D)
    return out
