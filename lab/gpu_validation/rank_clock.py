"""Issue 45, item 1: where a multi-GPU case's rank skew comes from, on one clock.

The guard refuses a case whose ranks' median times differ by more than 5 % (verdict/groupcheck.py). At W = 4 the
small fused cases sat at 5-6 %. Two stories fit that: the op is imbalanced between ranks (one rank's GEMM or
stores are slower: then the slowest rank is the answer and the bound is wrong), or the ranks are not released
together by the harness's rank barrier (then the method adds the skew, and the bound is right to refuse it).

This script times every case of a suite at this group's world size exactly as `harness run` does (worker
timing.Timer.cupti with group.Ranks: L2 flush, device-side idle gap, gate, rank barrier, CUPTI), and adds two
one-thread kernels around each launch that read ``%globaltimer``: A right after the rank barrier releases the
rank, B right after the op's last kernel. Each GPU's timer is put on rank 0's clock by an NTP-style ping-pong
through symmetric memory before and after every case (offset = t1 - (t0 + t2) / 2 at the round of least round
trip, linear in between), so per launch

    release skew  = max_r A_r - min_r A_r        (the barrier's doing)
    end skew      = max_r B_r - min_r B_r        (the op's closing barrier should make this small)
    rank time     = B_r - A_r on each GPU's own clock, and CUPTI's sum of the op's dispatches per rank
    per dispatch  = each rank's median of every kernel of the op (for the fused op: barrier, GEMM, barrier)

``--barrier`` swaps the harness's rank barrier for a variant, to test whether the release can be made simultaneous
(the W = 4 skew is its release: reports/h200x4-world-size-4): ``twice`` runs it twice in a row (a second round
starts the ranks one hop apart instead of the last arriver alone), ``vector`` signals every peer at once (one
atomic per lane, not one peer after another each behind its own system-scope release).

Rank 0 prints one line per case and writes everything to --out (JSON). ``--summarize OUT.json ...`` reads such
files back (no GPU) and prints the figures per kernel: the clock-free ones first (the spread across ranks of each
of the op's kernels, each GPU's own CUPTI durations), then those on one clock.

    NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \\
      python3 -m torch.distributed.run --standalone --nproc-per-node 4 lab/gpu_validation/rank_clock.py \\
      --filter '_W4$' --out rank-clock.json
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "lab" / "gpu_validation"))

ROUNDS = 32  # ping-pong rounds a peer; the one of least round trip sets the offset
TIMEOUT_NS = 2_000_000_000


def define_kernels() -> tuple[Any, Any, Any]:
    import triton
    import triton.language as tl

    from harness.worker.devclock import helpers

    now, _ = helpers()

    @triton.jit
    def _harness_stamp(ptr):  # named _harness_*: the timer leaves it out of the op's time
        tl.store(ptr, now())

    @triton.jit(do_not_specialize=["base", "timeout_ns"])
    def _clock_ping(table_ptr, out_ptr, base, timeout_ns, ROUNDS: tl.constexpr, WORLD: tl.constexpr):
        # rank 0: for each peer, ROUNDS times: t0, write the round into the peer's slot 0, wait for its answer
        # in our slot p, t2
        mine = tl.load(table_ptr).to(tl.pointer_type(tl.int64))
        for p in tl.static_range(1, WORLD):
            peer = tl.load(table_ptr + p).to(tl.pointer_type(tl.int64))
            for k in range(ROUNDS):
                t0 = now()
                tl.atomic_xchg(peer, base + k + 1, sem="release", scope="sys")
                seen = tl.atomic_add(mine + p, 0, sem="acquire", scope="sys")
                t = t0
                while (seen < base + k + 1) & (t - t0 < timeout_ns):
                    seen = tl.atomic_add(mine + p, 0, sem="acquire", scope="sys")
                    t = now()
                t2 = now()
                tl.store(out_ptr + (p * ROUNDS + k) * 2, t0)
                tl.store(out_ptr + (p * ROUNDS + k) * 2 + 1, t2)

    @triton.jit(do_not_specialize=["rank", "base", "timeout_ns"])
    def _clock_pong(table_ptr, out_ptr, rank, base, timeout_ns, ROUNDS: tl.constexpr):
        # rank p > 0: wait for each round in our slot 0, read t1, answer into rank 0's slot p
        mine = tl.load(table_ptr + rank).to(tl.pointer_type(tl.int64))
        zero = tl.load(table_ptr).to(tl.pointer_type(tl.int64))
        for k in range(ROUNDS):
            start = now()
            t = start
            seen = tl.atomic_add(mine, 0, sem="acquire", scope="sys")
            while (seen < base + k + 1) & (t - start < timeout_ns):
                seen = tl.atomic_add(mine, 0, sem="acquire", scope="sys")
                t = now()
            t1 = now()
            tl.atomic_xchg(zero + rank, base + k + 1, sem="release", scope="sys")
            tl.store(out_ptr + k, t1)

    return _harness_stamp, _clock_ping, _clock_pong


class Clocks:
    """Every GPU's %globaltimer offset from rank 0's, by ping-pong over peer memory."""

    def __init__(self, torch: Any, ranks: Any, kernels: tuple[Any, Any, Any]):
        import torch.distributed._symmetric_memory as symm_mem

        self.torch, self.ranks, (_, self.ping, self.pong) = torch, ranks, kernels
        name = ranks.dist.group.WORLD.group_name
        if hasattr(symm_mem, "enable_symm_mem_for_group"):
            symm_mem.enable_symm_mem_for_group(name)
        self.slots = symm_mem.empty((ranks.world,), dtype=torch.int64, device=torch.device("cuda"))
        self.handle = symm_mem.rendezvous(self.slots, name)
        self.slots.zero_()
        ptrs = [int(p) + int(getattr(self.handle, "offset", 0)) for p in self.handle.buffer_ptrs]
        self.table = torch.tensor(ptrs, dtype=torch.int64, device="cuda")
        self.base = 0
        torch.cuda.synchronize()
        ranks.barrier()

    def offsets(self) -> tuple[list[float], list[float]]:
        """(offset of each rank's clock from rank 0's in ns, the round trip it was read with)."""
        torch, r, w = self.torch, self.ranks.rank, self.ranks.world
        out = torch.zeros(w * ROUNDS * 2 if r == 0 else ROUNDS, dtype=torch.int64, device="cuda")
        torch.cuda.synchronize()
        self.ranks.barrier()
        if r == 0:
            self.ping[(1,)](self.table, out, self.base, TIMEOUT_NS, ROUNDS=ROUNDS, WORLD=w, num_warps=1)
        else:
            self.pong[(1,)](self.table, out, r, self.base, TIMEOUT_NS, ROUNDS=ROUNDS, num_warps=1)
        torch.cuda.synchronize()
        self.base += ROUNDS
        mine = out.cpu().tolist()
        every: list[Any] = [None] * w
        self.ranks.dist.all_gather_object(every, mine, group=self.ranks.host)
        offsets, rtts = [0.0], [0.0]
        t02 = every[0]
        for p in range(1, w):
            rounds = [(t02[(p * ROUNDS + k) * 2], t02[(p * ROUNDS + k) * 2 + 1], every[p][k]) for k in range(ROUNDS)]
            t0, t2, t1 = min(rounds, key=lambda x: x[1] - x[0])
            offsets.append(t1 - (t0 + t2) / 2)
            rtts.append(float(t2 - t0))
        return offsets, rtts


def define_vector_barrier() -> Any:
    """The rank barrier with every peer signalled at once and every flag polled at once (W a power of two)."""
    import triton
    import triton.language as tl

    from harness.worker.devclock import helpers

    now, _ = helpers()

    @triton.jit(do_not_specialize=["timeout_ns"])
    def _harness_rank_barrier_vector(flags_ptr, table_ptr, rank, timeout_ns, WORLD: tl.constexpr):
        epoch = tl.load(flags_ptr + WORLD) + 1
        tl.store(flags_ptr + WORLD, epoch)
        peers = tl.arange(0, WORLD)
        where = tl.load(table_ptr + peers).to(tl.pointer_type(tl.int32))
        tl.atomic_xchg(where + rank, tl.zeros([WORLD], tl.int32) + epoch, sem="release", scope="sys")
        start = now()
        t = start
        seen = tl.atomic_add(flags_ptr + peers, tl.zeros([WORLD], tl.int32), sem="acquire", scope="sys")
        while (tl.min(seen, axis=0) < epoch) & (t - start < timeout_ns):
            seen = tl.atomic_add(flags_ptr + peers, tl.zeros([WORLD], tl.int32), sem="acquire", scope="sys")
            t = now()
        if tl.min(seen, axis=0) < epoch:
            tl.atomic_add(flags_ptr + WORLD + 1, 1)

    return _harness_rank_barrier_vector


def use_barrier(ranks: Any, variant: str) -> None:
    """Swap ``ranks.align`` (the harness's rank barrier before every timed launch) for ``variant``."""
    if variant == "harness":
        return
    original = ranks.align
    if variant == "twice":
        ranks.align = lambda: (original(), original())
        return
    if ranks.world & (ranks.world - 1):
        raise SystemExit(f"--barrier vector: W = {ranks.world} is not a power of two")
    kernel = define_vector_barrier()
    from harness.worker.group import BARRIER_TIMEOUT_S

    def align() -> None:
        flags, table = ranks._device_flags()
        kernel[(1,)](flags, table, ranks.rank, int(BARRIER_TIMEOUT_S * 1e9), WORLD=ranks.world, num_warps=1)

    ranks.align = align


def measure(case: Any, ctx: dict[str, Any], launches: int) -> dict[str, Any] | None:
    """One case on this rank: the harness's CUPTI loop with stamps around each launch; None on rank > 0."""
    import torch
    from multigpu_smoke import config_of

    from harness.worker.cases import load_kernel
    from harness.worker.timing import auto_idle_s

    timer, ranks, clocks, stamp = ctx["timer"], ctx["ranks"], ctx["clocks"], ctx["stamp"]
    mod = load_kernel(case.kernel.source, str(ROOT))
    cfg = config_of(case)
    inputs = mod.make_inputs(case.params, int(case.params.get("seed", 0)))
    mod.launch(inputs, cfg)
    torch.cuda.synchronize()
    est, _, _ = timer.cupti(lambda: mod.launch(inputs, cfg), 5, 0.0, step=ranks)
    idle = auto_idle_s(ranks.max_over_ranks(statistics.median(est)))
    marks = torch.zeros((launches, 2), dtype=torch.int64, device="cuda")
    count = [0]

    def op() -> None:
        i = count[0]
        stamp[(1,)](marks[i, 0:1], num_warps=1)
        mod.launch(inputs, cfg)
        stamp[(1,)](marks[i, 1:2], num_warps=1)
        count[0] += 1

    before = clocks.offsets()
    times, per_name, _ = timer.cupti(op, launches, idle, step=ranks)
    after = clocks.offsets()
    mine = {"times": times, "per_name": per_name, "marks": marks.cpu().tolist()}
    every: list[Any] = [None] * ranks.world
    ranks.dist.all_gather_object(every, mine, group=ranks.host)
    if ranks.rank != 0:
        return None
    return summarize(case, every, before, after, launches)


def summarize(case: Any, every: list[dict], before: tuple, after: tuple, n: int) -> dict[str, Any]:
    w = len(every)
    off = [(before[0][r] + after[0][r]) / 2 for r in range(w)]
    drift = max(abs(after[0][r] - before[0][r]) for r in range(w))
    a = [[(every[r]["marks"][i][0] - off[r]) / 1e3 for r in range(w)] for i in range(n)]  # µs, rank 0's clock
    b = [[(every[r]["marks"][i][1] - off[r]) / 1e3 for r in range(w)] for i in range(n)]
    local = [[(every[r]["marks"][i][1] - every[r]["marks"][i][0]) / 1e3 for r in range(w)] for i in range(n)]
    per_rank = [statistics.median(every[r]["times"]) for r in range(w)]
    slowest_per_launch = [max(every[r]["times"][i] for r in range(w)) for i in range(n)]
    first = [min(range(w), key=lambda r: a[i][r]) for i in range(n)]
    slow = [max(range(w), key=lambda r: every[r]["times"][i]) for i in range(n)]
    med = statistics.median
    op_us = med(slowest_per_launch)
    return {
        "case": f"{case.kernel.name}/{case.case_id}",
        "op_us": op_us,
        "skew_pct": 100.0 * (max(per_rank) / min(per_rank) - 1.0),
        "rank_us": per_rank,
        "release_skew_us": med(max(x) - min(x) for x in a),
        "end_skew_us": med(max(x) - min(x) for x in b),
        "release_order_us": [med(a[i][r] - min(a[i]) for i in range(n)) for r in range(w)],
        "stamped_us": [med(local[i][r] for i in range(n)) for r in range(w)],
        "per_dispatch_us": [every[r]["per_name"] for r in range(w)],
        "slowest_released_first": sum(s == f for s, f in zip(slow, first)) / n,
        "slowest_rank_share": [slow.count(r) / n for r in range(w)],
        "clock_offsets_ns": off,
        "clock_drift_ns": drift,
        "rtt_ns": max(before[1] + after[1]),
    }


def line(s: dict[str, Any]) -> str:
    ranks = " ".join(f"{x:7.2f}" for x in s["rank_us"])
    rel = " ".join(f"{x:5.2f}" for x in s["release_order_us"])
    return (f"{s['case']:52} {s['op_us']:8.2f} {s['skew_pct']:5.2f}% | {ranks} | release {s['release_skew_us']:5.2f} "
            f"[{rel}] end {s['end_skew_us']:5.2f} | slow=first {s['slowest_released_first']:.2f}")  # fmt: skip


def spreads(s: dict[str, Any]) -> dict[str, tuple[str, float]]:
    """Each of the op's kernels, by its place in the op: (a short name, slowest rank's median - fastest's, µs), each
    GPU's own CUPTI clock: no offsets. cuBLAS picks other kernels at other shapes, hence places, not names."""
    per = s["per_dispatch_us"]
    out = {}
    for name in per[0]:
        place, _, full = name.partition(":")
        short = full.split("(")[0].split("<")[0].split("::")[-1][:22]
        out[place] = (short, max(r.get(name, 0.0) for r in per) - min(r.get(name, 0.0) for r in per))
    return out


def kind(case: str) -> str:
    name, _, cid = case.partition("/")
    return f"{name} (GEMM only)" if "SCATTERnone" in cid else name


def summarize_files(paths: list[str]) -> str:
    med = statistics.median
    lines = []
    for path in paths:
        rows = json.loads(Path(path).read_text())
        lines.append(f"{path}: {len(rows)} cases; clock offsets drifted up to "
                     f"{max(r['clock_drift_ns'] for r in rows) / 1e3:.1f} µs within a case, round trip "
                     f"{med(r['rtt_ns'] for r in rows) / 1e3:.2f} µs")  # fmt: skip
        lines.append(f"  {'kernel':34} {'cases':>5} {'skew %':>13} {'skew µs':>8} {'release µs':>10} "
                     f"{'end µs':>7} {'slow=1st':>8}  per-kernel spread across ranks, µs (median)")  # fmt: skip
        for k in sorted({kind(r["case"]) for r in rows}):
            sel = [r for r in rows if kind(r["case"]) == k]
            sp = [spreads(r) for r in sel]
            places = sorted({p for x in sp for p in x})
            per_kernel = ", ".join(f"{p}:{sp[0].get(p, ('?', 0))[0]} {med(x[p][1] for x in sp if p in x):.2f}"
                                   for p in places)  # fmt: skip
            skew_us = [max(r["rank_us"]) - min(r["rank_us"]) for r in sel]
            skews = [r["skew_pct"] for r in sel]
            lines.append(f"  {k:34} {len(sel):5d} {med(skews):5.2f} ({max(skews):5.2f}) {med(skew_us):8.2f} "
                         f"{med(r['release_skew_us'] for r in sel):10.2f} {med(r['end_skew_us'] for r in sel):7.2f} "
                         f"{med(r['slowest_released_first'] for r in sel):8.2f}  {per_kernel}")  # fmt: skip
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--suite", default=str(ROOT / "suites" / "multigpu.yaml"))
    ap.add_argument("--filter", default=".", help="regex over kernel/case_id")
    ap.add_argument("--launches", type=int, default=40)
    ap.add_argument("--out")
    ap.add_argument("--barrier", choices=("harness", "twice", "vector"), default="harness")
    ap.add_argument("--summarize", nargs="+", metavar="JSON", help="print the figures of earlier runs' --out files")
    a = ap.parse_args()
    if a.summarize:
        sys.stdout.write(summarize_files(a.summarize))
        return 0
    if not a.out:
        ap.error("--out is required to measure")

    import torch
    import triton

    from harness.inputs.suite import load_suite
    from harness.worker.group import Ranks
    from harness.worker.timing import Timer

    ranks = Ranks(torch)
    use_barrier(ranks, a.barrier)
    kernels = define_kernels()
    ctx = {"ranks": ranks, "timer": Timer(torch, triton, "cupti"), "stamp": kernels[0]}
    ctx["clocks"] = Clocks(torch, ranks, kernels)
    cases = [c for c in load_suite(a.suite) if c.kernel.spec.world_size_of(c.params) == ranks.world]
    cases = [c for c in cases if re.search(a.filter, f"{c.kernel.name}/{c.case_id}")]
    out = []
    if ranks.rank == 0:
        print(f"{len(cases)} cases at W={ranks.world} on {torch.cuda.get_device_name()}", flush=True)
    for case in cases:
        s = measure(case, ctx, a.launches)
        if s is not None:
            out.append(s)
            print(line(s), flush=True)
    if ranks.rank == 0:
        Path(a.out).write_text(json.dumps(out, indent=1))
    ranks.dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
