"""Where a case's buffers sit: random placements sampled within each rep. Standard library only (the tensors and
the allocator are passed in)."""

from __future__ import annotations

import random
from typing import Any

#: input placements: a rehomed tensor starts at a random multiple of PLACE_ALIGN bytes (Triton specializes
#: pointers on 16-byte alignment, TMA needs 16: both kept) within a pad of its own size, at least PLACE_PAD_MIN
#: and at most PLACE_PAD_MAX bytes
PLACE_ALIGN = 4096
PLACE_PAD_MIN = 2 << 20
PLACE_PAD_MAX = 64 << 20


def shuffled(launch, empty, rng: random.Random):  # noqa: ANN001, ANN201 - zero-argument callables
    """``launch`` preceded by a random-sized allocation (1…64 MiB, freed once the launch is queued), so the
    buffers the op allocates per launch (outputs, workspaces, a quantized copy of X) land at a different place
    each time. Where such a buffer lands can set a kernel's speed: on an H100 the fp8 prequant GEMM's quantized
    X at some addresses made it 3 % slower, for as long as the allocator kept handing out that block
    (lab/gpu_validation/placement.py). Shuffled, a rep's median is the time at a typical placement
    instead of whichever block this rep happened to get (compare Stabilizer's layout randomization)."""

    def op():  # noqa: ANN202
        shim = empty(rng.randrange(1 << 20, 64 << 20))
        try:
            return launch()
        finally:
            del shim

    return op


def launch_plan(n: int, every: int = 0, warm: bool = False) -> list[tuple[bool, bool]]:
    """The launches of one rep in order, as (move the inputs first, timed): ``n`` timed ones; with ``every`` > 0
    the inputs move before each run of ``every``, and with ``warm`` an untimed launch follows each move (in case
    the first launch at a new place, walking page tables and missing TLBs, is not the steady state)."""
    plan: list[tuple[bool, bool]] = []
    for i in range(n):
        move = every > 0 and i % every == 0
        if move and warm:
            plan.append((True, False))
            move = False
        plan.append((move, True))
    return plan


def rehomed(inputs: dict[str, Any], empty, rng: random.Random, stays=None) -> dict[str, Any]:  # noqa: ANN001
    """``inputs`` with every tensor copied to a new random place: a fresh byte buffer from ``empty(nbytes)`` with
    room to spare, the tensor starting at a random multiple of PLACE_ALIGN bytes in it, same dtype, shape and
    strides. Other values are kept. Where a kernel's inputs sit in memory can set its speed by a few % (DRAM
    channel and page mapping), and it stays put for a process's life: sampled once a process, it is noise between
    processes that the reps never see. Sampled several times a rep, the rep's median is the time at a typical
    placement (compare Stabilizer's heap randomization). The copies are raw bytes (memcpys: no kernel), and
    tensors that shared storage no longer do: inputs must be read-only operands and output buffers. A tensor for
    which ``stays(t)`` is true keeps its place (a multi-GPU rank's symmetric memory, which its peers address)."""
    out: dict[str, Any] = {}
    for name, t in inputs.items():
        if not hasattr(t, "untyped_storage") or t.numel() == 0 or (stays is not None and stays(t)):
            out[name] = t
            continue
        es = t.element_size()
        nbytes = (1 + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))) * es
        pad = min(max(nbytes, PLACE_PAD_MIN), PLACE_PAD_MAX)
        buf = empty(nbytes + pad)
        at = rng.randrange(0, pad // PLACE_ALIGN + 1) * PLACE_ALIGN
        src = buf.new_empty(0).set_(t.untyped_storage(), t.storage_offset() * es, (nbytes,), (1,))
        dst = buf[at : at + nbytes]
        dst.copy_(src)
        out[name] = dst.view(t.dtype).as_strided(t.shape, t.stride())
    return out
