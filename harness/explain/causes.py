"""A likely cause for a regression, from what changed in its compiled kernels (issue 47): the facts of the two
stacks' kernels (resources, instruction mix, TTGIR, the assembly diff) and configs, read as a Triton compiler
engineer reads them first, ranked so the first names what most likely cost the time. Pure: facts in, causes out.

The order of the classes is the order in which each usually dominates a GEMM's or a norm's time: a config that
resolved differently changes everything after it; spills put local-memory traffic in the loop; lost occupancy
hides less latency; a new barrier or fence stalls every iteration; a different MMA shape, pipelining depth or layout
changes the loop's structure; and when the compiled code is the same, the compiler is not the cause at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: the classes, most likely first when several apply (the index counts each regression under its first)
CLASSES = (
    "config",  # the case ran another config under TOT
    "spills",  # registers spilled to local memory
    "occupancy",  # fewer warps resident: registers or shared memory
    "barrier",  # a new barrier, fence or wait in the code
    "structure",  # another MMA shape, pipelining depth or layout
    "code",  # code changed, resources the same: scheduling, addressing
    "runtime",  # the same compiled code: the launch, the runtime, the clocks
    "unknown",  # no compiled kernels to read
)
WORDS = {
    "config": "another config",
    "spills": "register spills",
    "occupancy": "occupancy lost",
    "barrier": "a new barrier or fence",
    "structure": "another MMA shape, pipelining depth or layout",
    "code": "the code changed, resources the same",
    "runtime": "no change in the compiled code: the runtime or the launch",
    "unknown": "no compiled kernels to compare",
}
#: assembly that waits: SASS barriers and fences, PTX fences, AMD waits and barriers
_WAITS = ("BAR", "MEMBAR", "FENCE", "fence.", "bar.sync", "barrier", "s_barrier", "s_waitcnt", "SYNCS", "DEPBAR")


@dataclass(frozen=True)
class Cause:
    kind: str
    evidence: str

    def text(self) -> str:
        return f"{WORDS[self.kind]}: {self.evidence}" if self.evidence else WORDS[self.kind]


@dataclass(frozen=True)
class KernelFacts:
    """What explain read of one kernel pair: each side's resources and instruction mix, the TTGIR differences,
    whether the assembly is the same, the assembly diff (register numbers ignored)."""

    name: str
    golden: Mapping[str, Any]
    tot: Mapping[str, Any]
    golden_mix: Mapping[str, int]
    tot_mix: Mapping[str, int]
    ttgir: Mapping[str, Any]
    same_binary: bool
    diff: tuple[str, ...] = ()


def classify(kernels: list[KernelFacts], golden_config: Any = None, tot_config: Any = None) -> list[Cause]:
    """The likely causes of one case's change, most likely first (never empty)."""
    causes = []
    if golden_config not in (None, "") and tot_config not in (None, "") and golden_config != tot_config:
        causes.append(Cause("config", _config_change(golden_config, tot_config)))
    if not kernels:
        return causes or [Cause("unknown", "")]
    for k in kernels:
        causes += _kernel_causes(k)
    if not causes:
        same = all(k.same_binary for k in kernels)
        causes.append(Cause("runtime", "identical assembly") if same else Cause("code", _diff_size(kernels)))
    order = {c: i for i, c in enumerate(CLASSES)}
    return sorted(dict.fromkeys(causes), key=lambda c: order[c.kind])


def _kernel_causes(k: KernelFacts) -> list[Cause]:
    g, t, out = k.golden, k.tot, []
    name = f"{k.name}: "
    spilled = [key for key in ("spills", "local_bytes", "scratch") if _num(t.get(key)) > _num(g.get(key))]
    if spilled:
        out.append(Cause("spills", name + ", ".join(f"{key} {g.get(key, 0)}→{t.get(key)}" for key in spilled)))
    occ_g, occ_t = _num(g.get("occupancy"), None), _num(t.get("occupancy"), None)
    if occ_g is not None and occ_t is not None and occ_t < occ_g:
        why = [f"{key} {g.get(key)}→{t.get(key)}" for key in ("registers", "vgpr", "shared_bytes", "lds")
               if _num(t.get(key)) > _num(g.get(key))]  # fmt: skip
        out.append(
            Cause("occupancy", name + f"occupancy {occ_g:.0%}→{occ_t:.0%}" + (f" ({', '.join(why)})" if why else ""))
        )
    waits = _wait_change(k)
    if waits:
        out.append(Cause("barrier", name + waits))
    structure = _structure_change(k)
    if structure:
        out.append(Cause("structure", name + structure))
    return out


def _wait_change(k: KernelFacts) -> str:
    mix = [f"{key} {k.golden_mix.get(key, 0)}→{k.tot_mix.get(key, 0)}" for key in sorted(set(k.golden_mix) | set(k.tot_mix))
           if key.startswith(("barrier", "fence")) and k.tot_mix.get(key, 0) > k.golden_mix.get(key, 0)]  # fmt: skip
    added = [ln[1:].strip() for ln in k.diff if ln.startswith("+") and not ln.startswith("+++")]
    new = sorted({_op(ln) for ln in added if any(w in ln for w in _WAITS)} - {""})
    removed = {_op(ln[1:]) for ln in k.diff if ln.startswith("-") and not ln.startswith("---")}
    new = [op for op in new if op not in removed]
    bits = mix + ([f"new in the assembly: {', '.join(new[:3])}"] if new else [])
    return "; ".join(bits)


def _structure_change(k: KernelFacts) -> str:
    bits = [f"{key} {k.golden_mix.get(key, 0)}→{k.tot_mix.get(key, 0)}" for key in sorted(set(k.golden_mix) | set(k.tot_mix))
            if key.startswith("matrix") and k.golden_mix.get(key, 0) != k.tot_mix.get(key, 0)]  # fmt: skip
    for key in ("num_stages", "num_warps"):
        if k.golden.get(key) is not None and k.tot.get(key) is not None and k.golden.get(key) != k.tot.get(key):
            bits.append(f"{key} {k.golden.get(key)}→{k.tot.get(key)}")
    if k.ttgir.get("layouts_only_golden") or k.ttgir.get("layouts_only_tot"):
        bits.append("layouts differ")
    return "; ".join(bits)


def _op(line: str) -> str:
    """The opcode of an assembly line (``@P0 BAR.SYNC.DEFER_BLOCKING 0x0`` → ``BAR.SYNC.DEFER_BLOCKING``)."""
    words = [w for w in line.replace(";", " ").split() if not w.startswith("@")]
    return words[0] if words else ""


def _config_change(g: Any, t: Any) -> str:
    if isinstance(g, Mapping) and isinstance(t, Mapping):
        keys = [k for k in sorted(set(g) | set(t)) if g.get(k) != t.get(k)]
        return ", ".join(f"{k} {g.get(k)}→{t.get(k)}" for k in keys[:4])
    return f"{g} → {t}"


def _diff_size(kernels: list[KernelFacts]) -> str:
    n = sum(len(k.diff) for k in kernels)
    return f"{n} assembly diff lines, registers ignored" if n else "the assembly differs"


def _num(v: Any, default: float | None = 0.0) -> Any:
    """A resource's figure (explain/facts.resources gives numbers, or None where the compiler did not say)."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def shares(first_causes: list[str]) -> list[tuple[str, int, float]]:
    """The index's table: each class that some case has first, its count and share, most common first."""
    n = len(first_causes)
    counts = {c: first_causes.count(c) for c in CLASSES if c in first_causes}
    return sorted(((c, k, 100.0 * k / n) for c, k in counts.items()), key=lambda x: (-x[1], CLASSES.index(x[0])))
