"""C = A · Bᵀ over W GPUs, each rank computing its N/W columns and storing them into every rank's C (all-scatter).

A (M, K) is the same on every rank; B (N, K) is split by rows: rank r owns rows [r·N/W, (r+1)·N/W) (its slice
B_r, (N/W, K)), so rank r computes C[:, r·N/W : (r+1)·N/W] = A · B_rᵀ. Each output tile is stored straight from
the kernel into the output Y (M, N) of every rank, through peer pointers of a symmetric-memory allocation
(torch.distributed._symmetric_memory: ``empty`` + ``rendezvous``; ``buffer_ptrs`` are the bases of every rank's
allocation, ``offset`` this tensor's place in it). After the launch every rank holds the whole C: an all-gather
fused into the GEMM's epilogue, the pattern of the Iris seed's GEMM + AllScatter.

Synchronization (W > 1): the Triton kernel is bracketed by two ``_SymmetricMemory.barrier(channel=0)`` launches
on the current stream (a one-block kernel: a release signal to every peer, an acquire wait for every peer,
system scope). The one after the kernel is what correctness needs: no rank reads its Y before every peer's
stores into it are done. The one before it keeps a rank from writing into a peer's Y while that peer still
works on it (the harness fills Y with NaN before the first launch; a peer that starts early would have its tiles
overwritten; in a model, the previous step's reader of Y). Both are in the timed launch: the communication costs
them, and the first one's wait holds the ranks' skew in arriving at the launch. Only point-to-point stores and the
signal pads are used: no multicast objects or multimem instructions anywhere (NVLink multicast can take a
shared host's GPUs out of service), and make_inputs refuses to allocate peer memory unless the environment
turns multicast off for torch, NCCL and NVSHMEM.

Variants (config keys, the Iris seed's):

- ``SCATTER``: ``direct`` stores the output tile from the accumulator's registers into each rank's Y (its own
  first, then the peers in rank order starting after its own, so the ranks' stores spread over the links);
  ``copy`` stores the tile into the local Y, then reads it back and copies it to each peer (the
  store-locally-then-copy variant: the peers' traffic comes from L2, not the registers); ``none`` is the GEMM
  alone, its tiles stored into the local Y only, no barriers (the GEMM-only baseline of the scaling plots: at
  W > 1 its output is this rank's (M, N/W) column block, which ``launch`` returns and ``reference`` follows).
- ``BLOCK_SIZE_M/N/K``, ``GROUP_SIZE_M`` (tiles walked in groups of that many tile rows: programs resident
  together share B's columns in L2), ``num_warps``, ``num_stages``.
- ``NUM_SMS``: 0 launches one program per output tile; n > 0 launches min(n, tiles) programs that each loop
  over every n-th tile (a persistent grid on that many SMs; the Iris seed's CU-count sweep). A program's last
  turn may fall past the last tile: it then recomputes a live tile (wrapped index) with every store masked off,
  which costs nothing the slowest program does not already spend.

Loop trip counts: under the CPU interpreter the tile loop and the K loop run a constexpr number of times (Triton
3.6's interpreter cannot run a loop with a runtime bound under numpy 2); on a GPU they are runtime values, so a
config compiles once for every shape of a suite (with constexpr counts each (M, N, K) would be its own compile,
which at 1,000 sweep points is most of the sweep's time).

Peer pointers: an int64 table of every rank's Y address (device memory), loaded in the kernel and cast with
``.to(tl.pointer_type(dtype))``; the host checks each is 16-byte aligned, which the kernel tells the compiler
(``tl.multiple_of``) so peer stores vectorize like local ones. At W = 1 (and on the CPU) Y is a plain tensor and
the table holds Y's own address, so the same code path runs everywhere.

Counting: ``flops`` is the whole product, 2·M·N·K = W ranks × 2·M·(N/W)·K each (TFLOPS is then the group's rate,
against W GPUs' peak); ``bytes`` is one rank's HBM traffic, the fewest bytes: A and B_r read once, Y (all of it:
its own tiles and the peers') written once, e·(M·K + (N/W)·K + M·N). ``link_bytes`` (the SPEC's, for the report's
NVLink roof) is what one rank sends over NVLink, e·M·(N/W)·(W−1), and receives as much.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import torch
import triton
import triton.language as tl

from harness import ConfigLookup, KernelSpec, Param, Plot, dim, dtype, split_config
from kernels import common as C

#: element size of each dtype, in bytes (SPEC arithmetic; no torch here)
ELEMENT_BYTES = {"bf16": 2, "fp16": 2}
#: the SCATTER config values, and the constexpr each is passed to the kernel as
SCATTER_MODES = {"none": 0, "direct": 1, "copy": 2}
#: what must be in a rank's environment before it allocates peer memory: NVLink multicast off everywhere
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
#: symmetric Ys a rank's launches take turns on at W > 1. A symmetric allocation cannot move with the other
#: inputs (its peers hold its address), and where it and its signal pad sit is fixed for a process: golden A/A
#: on two H100s read the same case 0.3-1.3 µs apart from one worker process to the next, most of it in the
#: barrier after the GEMM (reports/h100x2-multigpu-lockstep/aa-fused-w2/fresh). Taking turns samples several
#: placements in every rep. Y_RING_ENV overrides it (1 = one Y, as before), for the lab's comparisons.
Y_RING = 4
Y_RING_ENV = "GEMM_ALL_SCATTER_Y_RING"
CONFIG_KEYS = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "SCATTER", "NUM_SMS")


def flops(p: dict) -> float:
    """The whole product over all ranks: W × 2·M·(N/W)·K."""
    return 2.0 * p["M"] * p["N"] * p["K"]


def hbm_bytes(p: dict) -> float:
    """One rank's fewest HBM bytes: A, its B slice, and all of Y (its tiles and the peers' land in its memory)."""
    return ELEMENT_BYTES[p["dtype"]] * (p["M"] * p["K"] + p["N"] // p["W"] * p["K"] + p["M"] * p["N"])


def link_bytes(p: dict) -> float:
    """What one rank sends to its peers (and receives from them): its (M, N/W) block to each of W − 1 peers."""
    return ELEMENT_BYTES[p["dtype"]] * p["M"] * (p["N"] // p["W"]) * (p["W"] - 1)


def check(p: dict) -> str | None:
    if p["N"] % p["W"]:
        return f"N={p['N']} is not a multiple of W={p['W']} (each rank owns N/W rows of B)"
    return None


PARAMS = (
    dim("M"),
    dim("N"),
    dim("K"),
    dtype(("bf16", "fp16"), "bf16"),
    Param("W", "int", 1, min=1, help="world size: GPUs (ranks) the columns of C are split over"),
)
SPEC = KernelSpec(
    name="gemm_all_scatter",
    description=(
        "C = A B^T over W GPUs: rank r computes columns [r N/W, (r+1) N/W) and stores them into every rank's C "
        "through symmetric-memory peer pointers (GEMM + all-scatter). flops: all ranks, 2 M N K; bytes: one "
        "rank's HBM (A, B/W, all of C); NVLink: each rank sends e M (N/W) (W-1) bytes and receives as many"
    ),
    params=PARAMS,
    flops=flops,
    bytes=hbm_bytes,
    link_bytes=link_bytes,
    peak=lambda p: p["dtype"],
    dtype="{dtype}",
    tolerance={"bf16": 1e-2, "fp16": 2e-3},
    config=ConfigLookup("GEMM-ALL-SCATTER", bucket="M", specialize=("N", "K", "W")),
    config_keys=CONFIG_KEYS,
    world_size="W",
    check=check,
    hooks=("supported",),
    plot=Plot(x="M", series=("N", "K", "W")),
)
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


# ------------------------------------------------------------------------------------------------ Triton
@triton.jit
def _k_loop(
    a_ptrs, b_ptrs, K, n_k, stride_ak, stride_bk,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, EVEN_K: tl.constexpr,
):  # fmt: skip
    """The fp32 sum over ``n_k`` K tiles of A's rows times B's columns at ``a_ptrs`` / ``b_ptrs``."""
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for kk in range(0, n_k):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = K - kk * BLOCK_SIZE_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    return acc


@triton.jit
def _tile_product(
    a_ptr, b_ptr, M, N_LOCAL, K, pid_m, pid_n, stride_am, stride_ak, stride_bn, stride_bk, k_tiles,
    BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr, EVEN_K: tl.constexpr,
    FIXED_K_TILES: tl.constexpr,
):  # fmt: skip
    """The fp32 (BLOCK_SIZE_M, BLOCK_SIZE_N) tile (pid_m, pid_n) of A · B_rᵀ. Rows and columns past the edge wrap
    instead of being masked (they are never stored); int64 offsets: N·K passes 2**31 elements at 8192 x 28672 x 4."""
    offs_am = ((pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M).to(tl.int64)
    offs_bn = ((pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N_LOCAL).to(tl.int64)
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_bn[None, :] * stride_bn + offs_k[:, None] * stride_bk
    # the interpreter gets a constexpr trip count (module docstring); a variable set in a constexpr `if` would
    # not do: Triton 3.6's interpreter turns it into a tensor
    if FIXED_K_TILES > 0:
        return _k_loop(a_ptrs, b_ptrs, K, FIXED_K_TILES, stride_ak, stride_bk, BLOCK_SIZE_M, BLOCK_SIZE_N,
                       BLOCK_SIZE_K, EVEN_K)  # fmt: skip
    return _k_loop(a_ptrs, b_ptrs, K, k_tiles, stride_ak, stride_bk, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, EVEN_K)


@triton.jit
def _peer_base(peers_ptr, peer, y_ptr):
    """Rank ``peer``'s Y as a pointer of Y's element type; 16-byte aligned (checked on the host), which the
    compiler cannot see through the cast, so say it: peer stores then vectorize like local ones."""
    base = tl.load(peers_ptr + peer).to(tl.pointer_type(y_ptr.dtype.element_ty))
    return tl.multiple_of(base, 16)


@triton.jit
def _store_tile(
    acc, y_ptr, peers_ptr, rank, M, N_LOCAL, pid_m, pid_n, live, stride_ym, stride_yn,
    WORLD: tl.constexpr, SCATTER: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
):  # fmt: skip
    """Store the tile at this rank's columns of Y: locally (SCATTER 0), into every rank's Y from the registers
    (1), or locally and then copied to every peer (2). ``live`` False (a persistent program past the last
    tile) masks every store: the row bound becomes 0 (the interpreter cannot AND a block mask with a scalar)."""
    offs_m = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_n = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    mask = (offs_m[:, None] < tl.where(live, M, 0)) & (offs_n[None, :] < N_LOCAL)
    cols = (rank * N_LOCAL + offs_n).to(tl.int64)
    offs = offs_m.to(tl.int64)[:, None] * stride_ym + cols[None, :] * stride_yn
    out = acc.to(y_ptr.dtype.element_ty)
    if SCATTER == 1:
        # its own Y first, then rank+1, rank+2, ...: at any moment the ranks write to different peers
        tl.store(y_ptr + offs, out, mask=mask)
        for i in tl.static_range(1, WORLD):
            tl.store(_peer_base(peers_ptr, (rank + i) % WORLD, y_ptr) + offs, out, mask=mask)
    else:
        tl.store(y_ptr + offs, out, mask=mask)
        if SCATTER == 2:
            tl.debug_barrier()  # the whole tile stored before any thread reads back another thread's elements
            for i in tl.static_range(1, WORLD):
                tile = tl.load(y_ptr + offs, mask=mask)
                tl.store(_peer_base(peers_ptr, (rank + i) % WORLD, y_ptr) + offs, tile, mask=mask)


@triton.jit
def _one_tile(
    t, num_tiles, a_ptr, b_ptr, y_ptr, peers_ptr, M, N_LOCAL, K, rank,
    stride_am, stride_ak, stride_bn, stride_bk, stride_ym, stride_yn, k_tiles,
    WORLD: tl.constexpr, SCATTER: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr, EVEN_K: tl.constexpr, FIXED_K_TILES: tl.constexpr,
):  # fmt: skip
    """Tile ``t`` of this rank's block (past the last one: a live tile recomputed, its stores masked off)."""
    pid_m, pid_n, _ = C._tile_ids(t % num_tiles, M, N_LOCAL, BLOCK_SIZE_M, BLOCK_SIZE_N, GROUP_SIZE_M, 1)
    acc = _tile_product(
        a_ptr, b_ptr, M, N_LOCAL, K, pid_m, pid_n, stride_am, stride_ak, stride_bn, stride_bk, k_tiles,
        BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, EVEN_K, FIXED_K_TILES,
    )  # fmt: skip
    _store_tile(
        acc, y_ptr, peers_ptr, rank, M, N_LOCAL, pid_m, pid_n, t < num_tiles, stride_ym, stride_yn,
        WORLD, SCATTER, BLOCK_SIZE_M, BLOCK_SIZE_N,
    )  # fmt: skip


@triton.jit
def _gemm_all_scatter_kernel(
    a_ptr, b_ptr, y_ptr, peers_ptr, M, N_LOCAL, K, rank,
    stride_am, stride_ak, stride_bn, stride_bk, stride_ym, stride_yn,
    num_programs, tiles_per_program, k_tiles,
    WORLD: tl.constexpr, SCATTER: tl.constexpr, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
    BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr, EVEN_K: tl.constexpr,
    FIXED_TILES: tl.constexpr, FIXED_K_TILES: tl.constexpr,
):  # fmt: skip
    """Program ``pid`` computes tiles pid, pid + num_programs, ... of this rank's (M, N_LOCAL) block (one tile
    when the grid has a program per tile) and stores each as SCATTER says."""
    pid = tl.program_id(0)
    num_tiles = tl.cdiv(M, BLOCK_SIZE_M) * tl.cdiv(N_LOCAL, BLOCK_SIZE_N)
    if FIXED_TILES > 0:  # the interpreter: a constexpr trip count (as in _tile_product)
        for i in range(0, FIXED_TILES):
            _one_tile(
                pid + i * num_programs, num_tiles, a_ptr, b_ptr, y_ptr, peers_ptr, M, N_LOCAL, K, rank,
                stride_am, stride_ak, stride_bn, stride_bk, stride_ym, stride_yn, k_tiles,
                WORLD, SCATTER, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, EVEN_K, FIXED_K_TILES,
            )  # fmt: skip
    else:
        for i in range(0, tiles_per_program):
            _one_tile(
                pid + i * num_programs, num_tiles, a_ptr, b_ptr, y_ptr, peers_ptr, M, N_LOCAL, K, rank,
                stride_am, stride_ak, stride_bn, stride_bk, stride_ym, stride_yn, k_tiles,
                WORLD, SCATTER, BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M, EVEN_K, FIXED_K_TILES,
            )  # fmt: skip


# ------------------------------------------------------------------------------------------------ host
@dataclass
class Peers:
    """A rank's view of the group: its Y (symmetric memory at W > 1), the device table of every rank's Y address,
    the symmetric-memory handle (None at W = 1) and what ``reference`` needs. Not a tensor, so the harness's input
    placement (which copies every tensor of the inputs to a new address) leaves it where the peers point."""

    y: torch.Tensor
    table: torch.Tensor
    handle: Any
    rank: int
    world: int
    seed: int
    #: the columns of Y the last launch produced (all of them, or this rank's block for SCATTER none)
    cols: tuple[int, int] = (0, 0)
    #: every (y, table, handle) the launches take turns on (Y_RING of them at W > 1), and the one in use
    ring: list[tuple[torch.Tensor, torch.Tensor, Any]] = field(default_factory=list)
    turn: int = 0

    def next_y(self) -> None:
        """The next Y of the ring: every rank advances at every launch, so all ranks use the same one."""
        if len(self.ring) > 1:
            self.turn = (self.turn + 1) % len(self.ring)
            self.y, self.table, self.handle = self.ring[self.turn]


def group() -> tuple[int, int]:
    """(rank, world size) of this process: torch.distributed's when the worker group initialized it, else (0, 1)."""
    import torch.distributed as dist

    return (dist.get_rank(), dist.get_world_size()) if dist.is_initialized() else (0, 1)


def check_world(params: dict[str, Any]) -> tuple[int, int]:
    rank, world = group()
    if world != params["W"]:
        raise RuntimeError(f"this case has W={params['W']} but the process group has {world} rank(s)")
    return rank, world


def require_multicast_off() -> None:
    """Refuse to touch peer memory or NCCL across GPUs unless NVLink multicast is off for torch, NCCL, NVSHMEM."""
    wrong = [f"{k}={v}" for k, v in MULTICAST_OFF.items() if os.environ.get(k) != v]
    if wrong:
        raise RuntimeError("refusing multi-GPU communication without " + " ".join(wrong) + " in the environment")


def b_seed(seed: int, r: int) -> int:
    """The seed of rank r's rows of B: any rank can rebuild any other rank's slice (``reference``)."""
    return 1_000_003 * (seed + 1) + r


def operands(params: dict[str, Any], seed: int, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(A, B_rank): A (M, K) the same on every rank, B_rank (N/W, K) with unit-variance outputs at every K."""
    dev = C.device()
    a = C.rand((int(params["M"]), int(params["K"])), DTYPES[params["dtype"]], C.generator(seed, dev), dev)
    return a, b_slice(params, seed, rank)


def b_slice(params: dict[str, Any], seed: int, r: int) -> torch.Tensor:
    N, K, W = int(params["N"]), int(params["K"]), int(params["W"])
    dev = C.device()
    return C.rand((N // W, K), DTYPES[params["dtype"]], C.generator(b_seed(seed, r), dev), dev, scale=K**-0.5)


def full_product(a: torch.Tensor, params: dict[str, Any], seed: int) -> torch.Tensor:
    """A · Bᵀ in float64, B rebuilt from every rank's seed: the C every rank must hold."""
    b = torch.cat([b_slice(params, seed, r).double() for r in range(int(params["W"]))])
    return a.double() @ b.T


def _symmetric_output(shape: tuple[int, int], dt: torch.dtype, rank: int) -> tuple[torch.Tensor, Any, list[int]]:
    """Y in symmetric memory, its handle, and every rank's Y address (allocation base + this tensor's offset)."""
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem

    require_multicast_off()
    name = dist.group.WORLD.group_name
    if hasattr(symm_mem, "enable_symm_mem_for_group"):  # needed before torch 2.9 made it implicit
        symm_mem.enable_symm_mem_for_group(name)
    y = symm_mem.empty(shape, dtype=dt, device=torch.device("cuda", torch.cuda.current_device()))
    handle = symm_mem.rendezvous(y, name)
    offset = int(getattr(handle, "offset", 0))
    ptrs = [int(p) + offset for p in handle.buffer_ptrs]
    if ptrs[rank] != y.data_ptr():  # what buffer_ptrs and offset mean changed: never store through a guess
        raise RuntimeError(f"symmetric memory: rank {rank}'s peer pointer {ptrs[rank]:#x} is not Y's {y.data_ptr():#x}")
    return y, handle, ptrs


def peer_table(ptrs: list[int], dev: Any) -> torch.Tensor:
    bad = [hex(p) for p in ptrs if p % 16]
    if bad:
        raise RuntimeError(f"peer buffers must be 16-byte aligned (the kernel's stores assume it): {', '.join(bad)}")
    return torch.tensor(ptrs, dtype=torch.int64, device=dev)


def make_inputs(params: dict[str, Any], seed: int) -> dict[str, Any]:
    rank, world = check_world(params)
    M, N = int(params["M"]), int(params["N"])
    dt = DTYPES[params["dtype"]]
    a, b = operands(params, seed, rank)
    if world > 1:
        ring = [_symmetric_slot((M, N), dt, rank) for _ in range(y_ring())]
    else:
        y = torch.empty((M, N), dtype=dt, device=C.device())
        ring = [(y, peer_table([y.data_ptr()], y.device), None)]
    y, table, handle = ring[0]
    peers = Peers(y=y, table=table, handle=handle, rank=rank, world=world, seed=seed, ring=ring)
    return {"a": a, "b": b, "y": y, "peers": peers, "params": dict(params)}


def y_ring() -> int:
    """How many symmetric Ys (each with its own signal pad) the launches take turns on at W > 1."""
    raw = os.environ.get(Y_RING_ENV, "")
    if raw and not (raw.isdigit() and 1 <= int(raw) <= 64):
        raise RuntimeError(f"{Y_RING_ENV}={raw!r}: expected a whole number from 1 to 64")
    return int(raw) if raw else Y_RING


def _symmetric_slot(shape: tuple[int, int], dt: torch.dtype, rank: int) -> tuple[torch.Tensor, torch.Tensor, Any]:
    y, handle, ptrs = _symmetric_output(shape, dt, rank)
    y.fill_(float("nan"))  # an element no launch wrote stays NaN, whichever Y of the ring the check reads
    return y, peer_table(ptrs, y.device), handle


def supported(params: dict[str, Any]) -> str | None:
    W = params["W"]
    if W > 1 and C.backend() == "interp":
        return f"W={W} needs {W} GPUs with peer memory (symmetric memory); the CPU interpreter has none"
    return None


def plan(M: int, n_local: int, K: int, meta: dict[str, Any]) -> dict[str, int]:
    """The grid and trip counts of a launch: programs, tiles per program, K tiles."""
    tiles = triton.cdiv(M, meta["BLOCK_SIZE_M"]) * triton.cdiv(n_local, meta["BLOCK_SIZE_N"])
    sms = int(meta.get("NUM_SMS", 0) or 0)
    programs = min(tiles, sms) if sms > 0 else tiles
    k_tiles = triton.cdiv(K, meta["BLOCK_SIZE_K"])
    return {"programs": programs, "tiles_per_program": triton.cdiv(tiles, programs), "k_tiles": k_tiles}


def scatter_gemm(
    a: torch.Tensor, b: torch.Tensor, y: torch.Tensor, table: torch.Tensor, rank: int, world: int,
    config: dict[str, Any],
) -> None:  # fmt: skip
    """One rank's kernel: A · bᵀ into columns [rank·n, (rank+1)·n) of the Y of every rank the table lists
    (n = b's rows); no synchronization (``launch`` adds the barriers). ``table[r]`` is rank r's Y address and
    ``table[rank]`` must be ``y``'s: the tests run W ranks in one process with W plain tensors this way."""
    M, K = a.shape
    n_local = b.shape[0]
    meta, opts = split_config(config, C.backend())
    mode = SCATTER_MODES[meta.get("SCATTER", "direct")]
    p = plan(M, n_local, K, meta)
    interp = C.backend() == "interp"
    _gemm_all_scatter_kernel[(p["programs"],)](
        a, b, y, table, M, n_local, K, rank, *a.stride(), *b.stride(), *y.stride(),
        p["programs"], p["tiles_per_program"], p["k_tiles"],
        WORLD=world, SCATTER=mode, BLOCK_SIZE_M=meta["BLOCK_SIZE_M"], BLOCK_SIZE_N=meta["BLOCK_SIZE_N"],
        BLOCK_SIZE_K=meta["BLOCK_SIZE_K"], GROUP_SIZE_M=meta["GROUP_SIZE_M"], EVEN_K=K % meta["BLOCK_SIZE_K"] == 0,
        FIXED_TILES=p["tiles_per_program"] if interp else 0, FIXED_K_TILES=p["k_tiles"] if interp else 0, **opts,
    )  # fmt: skip


def launch(inputs: dict[str, Any], config: dict[str, Any]) -> torch.Tensor:
    peers: Peers = inputs["peers"]
    peers.next_y()
    n_local = inputs["b"].shape[0]
    gemm_only = config.get("SCATTER", "direct") == "none"
    sync = peers.handle is not None and not gemm_only
    if sync:
        peers.handle.barrier(channel=0)  # every peer's Y free to be written (module docstring)
    scatter_gemm(inputs["a"], inputs["b"], peers.y, peers.table, peers.rank, peers.world, config)
    if sync:
        peers.handle.barrier(channel=0)  # every peer's tiles are in this rank's Y
    lo, hi = (peers.rank * n_local, (peers.rank + 1) * n_local) if gemm_only else (0, peers.y.shape[1])
    peers.cols = (lo, hi)
    return peers.y[:, lo:hi] if (lo, hi) != (0, peers.y.shape[1]) else peers.y


def reference(inputs: dict[str, Any]) -> torch.Tensor:
    """The full C in float64, or the columns the last launch produced (this rank's block for SCATTER none)."""
    peers: Peers = inputs["peers"]
    c = full_product(inputs["a"], inputs["params"], peers.seed)
    lo, hi = peers.cols if peers.cols != (0, 0) else (0, c.shape[1])
    return c[:, lo:hi]
