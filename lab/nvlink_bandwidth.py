"""NVLink bandwidth between every pair of this machine's GPUs, written as a ceiling the report can take.

    python lab/nvlink_bandwidth.py [--mib 256] [--reps 10] [--out nvlink.yaml] [--no-stores]

All transfers are point-to-point from one process (no NCCL, no multicast, no symmetric memory):

- ``copy``: each ordered pair i -> j alone, a device-to-device ``copy_`` of --mib MiB from GPU i to GPU j (torch runs
  it on i's current stream: a copy-engine transfer over NVLink where peer access is possible), timed with CUDA events
  on that stream, the median of --reps.
- ``store``: each ordered pair alone, a Triton kernel on GPU i loading its buffer and storing it into GPU j's memory
  (SM stores over NVLink, what kernels/gemm_all_scatter.py's epilogue does; j's address comes from an int64 table,
  as the kernel's peer pointers do). A pair whose kernel fails is reported with its error, the others go on.
- ``egress``: every GPU copying to all its peers at the same time (one stream per peer on each GPU), the all-scatter's
  traffic pattern: each GPU's outgoing GB/s, (n - 1) x the buffer over the time from its first copy's start to its
  last copy's end.

GB/s is 1e9 bytes a second, one direction. The YAML's ``nvlink_gbs`` is the smallest per-GPU egress (a collective
waits for its slowest rank), the figure the roofline's interconnect ceiling uses; each pair's copy and store figures
follow as comments. Needs at least two GPUs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

GB = 1e9


@triton.jit
def _store_to_peer(src_ptr, table_ptr, n, BLOCK: tl.constexpr):
    """Copy n fp16 elements from src into the buffer at the address table[0], every program a grid-stride loop."""
    dst = tl.multiple_of(tl.load(table_ptr).to(tl.pointer_type(tl.float16)), 16)
    step = tl.num_programs(0) * BLOCK
    for start in range(tl.program_id(0) * BLOCK, n, step):
        offs = start + tl.arange(0, BLOCK)
        tl.store(dst + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


def peer_table(dst: torch.Tensor, device: Any) -> torch.Tensor:
    """dst's address as the store kernel reads it: an int64 tensor on the device that runs the kernel."""
    if dst.data_ptr() % 16 or dst.dtype != torch.float16:
        raise ValueError("the store kernel writes 16-byte aligned fp16 buffers")
    return torch.tensor([dst.data_ptr()], dtype=torch.int64, device=device)


def store_to_peer(src: torch.Tensor, table: torch.Tensor, programs: int, block: int = 4096) -> None:
    """Launch the store kernel on src's device, writing the buffer whose address ``table`` holds."""
    _store_to_peer[(programs,)](src, table, src.numel(), BLOCK=block, num_warps=8)


def _events(dev: int) -> tuple[torch.cuda.Event, torch.cuda.Event]:
    with torch.cuda.device(dev):
        return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def time_op(dev: int, op: Any, reps: int) -> float:
    """Median seconds of ``op`` on device ``dev``'s current stream (two warm-up runs first)."""
    with torch.cuda.device(dev):
        for _ in range(2):
            op()
        torch.cuda.synchronize(dev)
        times = []
        for _ in range(reps):
            start, end = _events(dev)
            start.record()
            op()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
    return statistics.median(times)


def pair_figures(n_gpus: int, nbytes: int, reps: int, stores: bool) -> dict[str, dict[str, Any]]:
    """'i->j' -> {'copy': GB/s, 'store': GB/s or an error string}; every ordered pair's copy runs first, so peer
    access is enabled both ways before any store kernel addresses another GPU."""
    bufs = [torch.full((nbytes // 2,), d + 1.0, dtype=torch.float16, device=f"cuda:{d}") for d in range(n_gpus)]
    dsts = [torch.empty_like(b) for b in bufs]
    pairs = [(i, j) for i in range(n_gpus) for j in range(n_gpus) if i != j]
    out: dict[str, dict[str, Any]] = {}
    for i, j in pairs:
        seconds = time_op(i, lambda i=i, j=j: dsts[j].copy_(bufs[i]), reps)
        out[f"{i}->{j}"] = {"copy": nbytes / seconds / GB, "peer_access": torch.cuda.can_device_access_peer(i, j)}
    for i, j in pairs if stores else ():
        sms = torch.cuda.get_device_properties(i).multi_processor_count
        try:
            table = peer_table(dsts[j], bufs[i].device)
            dsts[j].zero_()
            seconds = time_op(i, lambda i=i, t=table, p=sms * 2: store_to_peer(bufs[i], t, p), reps)
            ok = torch.equal(dsts[j].cpu(), bufs[i].cpu())  # every element came from GPU i
            out[f"{i}->{j}"]["store"] = nbytes / seconds / GB if ok else "stored data differ from the source"
        except Exception as exc:  # noqa: BLE001 - one pair's failure is that pair's figure
            out[f"{i}->{j}"]["store"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:120]}"
    return out


def egress_figures(n_gpus: int, nbytes: int, reps: int) -> list[float]:
    """Each GPU's outgoing GB/s while every GPU copies its buffer to every peer at once (median of reps). Every copy
    has its own stream on both GPUs: torch orders a cross-device copy after the destination's current stream and
    that stream after the copy, so with the default streams the copies into one GPU would run one at a time."""
    bufs = [torch.ones(nbytes // 2, dtype=torch.float16, device=f"cuda:{d}") for d in range(n_gpus)]
    dsts = {(i, j): torch.empty(nbytes // 2, dtype=torch.float16, device=f"cuda:{j}") for i in range(n_gpus)
            for j in range(n_gpus) if i != j}  # fmt: skip
    streams = {(i, j): (torch.cuda.Stream(device=i), torch.cuda.Stream(device=j)) for (i, j) in dsts}
    samples: list[list[float]] = [[] for _ in range(n_gpus)]
    for rep in range(reps + 2):
        for d in range(n_gpus):
            torch.cuda.synchronize(d)
        marks = [_events(d) for d in range(n_gpus)]
        for i in range(n_gpus):
            with torch.cuda.device(i):
                marks[i][0].record()
                for j in (j for j in range(n_gpus) if j != i):
                    s, s_dst = streams[(i, j)]
                    s.wait_event(marks[i][0])
                    with torch.cuda.stream(s_dst), torch.cuda.stream(s):
                        dsts[(i, j)].copy_(bufs[i])
                    torch.cuda.current_stream(i).wait_stream(s)
                marks[i][1].record()
        for i in range(n_gpus):
            marks[i][1].synchronize()
            if rep >= 2:  # two warm-up rounds
                samples[i].append((n_gpus - 1) * nbytes / (marks[i][0].elapsed_time(marks[i][1]) / 1e3) / GB)
    return [statistics.median(s) for s in samples]


def ceilings_yaml(pairs: dict[str, dict[str, Any]], egress: list[float], gpu: str, mib: int) -> str:
    """The YAML the report takes: nvlink_gbs (the slowest GPU's egress to all peers at once), the rest comments."""
    lines = [
        f"# NVLink bandwidth measured by lab/nvlink_bandwidth.py: {len(egress)} x {gpu}, {mib} MiB transfers",
        "# GB/s = 1e9 bytes a second, one direction. egress: a GPU copying to all its peers at once (per GPU):",
        "#   " + ", ".join(f"GPU {d}: {g:.1f}" for d, g in enumerate(egress)),
        "# each ordered pair alone: copy (copy engine) / store (SM stores from a Triton kernel)",
    ]
    for pair, fig in pairs.items():
        store = fig.get("store", "not measured")
        store = f"{store:.1f}" if isinstance(store, float) else store
        lines.append(f"#   {pair}: copy {fig['copy']:.1f}, store {store}, peer access {fig['peer_access']}")
    lines.append(f"nvlink_gbs: {min(egress):.1f}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mib", type=int, default=256, help="MiB per transfer (default 256)")
    ap.add_argument("--reps", type=int, default=10, help="timed repetitions per figure (default 10)")
    ap.add_argument("--out", type=Path, default=Path("nvlink.yaml"), help="the ceilings YAML (default nvlink.yaml)")
    ap.add_argument("--no-stores", action="store_true", help="skip the Triton SM-store measurement")
    args = ap.parse_args(argv)
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if n < 2:
        print(f"nvlink_bandwidth: needs at least 2 GPUs, found {n}", file=sys.stderr)
        return 2
    nbytes = args.mib * 2**20
    pairs = pair_figures(n, nbytes, args.reps, not args.no_stores)
    egress = egress_figures(n, nbytes, args.reps)
    text = ceilings_yaml(pairs, egress, torch.cuda.get_device_name(0), args.mib)
    print(text, end="")
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
