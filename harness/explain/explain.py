"""Explain stage: why did a case get slower? Diff the compiled kernels the two stacks produced for it.

Inputs are the artifact folders ``harness run --artifacts`` keeps beside each results file (one folder per
compiled kernel: ``ttir``, ``ttgir``, ``llir``, ``ptx``/``sass`` or ``amdgcn``, ``meta.json``), and the
``artifacts`` column that names, per case, the kernels it launched. For each case the golden and TOT kernels are
paired by name and compared on: resources (registers, spills, shared memory, warps, stages, an occupancy
estimate), the static instruction mix of the assembly (matrix instructions, global load/store widths, shared
memory traffic, barriers, conversions), TTGIR facts (layouts, op counts such as async copies and warp-group
dots) and a unified diff of the assembly. The analysis functions are pure; I/O is at the bottom.
"""

from __future__ import annotations

import contextlib
import difflib
import html
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from harness.errors import HarnessError
from harness.explain.causes import WORDS, Cause, KernelFacts, classify, shares
from harness.render.mdtable import md_table
from harness.render.vocabulary import STACKS, stack_labels
from harness.results.cells import text

# ------------------------------------------------------------------------------------------ resources

#: per-SM limits used by the occupancy estimate (CUDA occupancy calculator values)
SM_LIMITS = {
    "sm90": {"regs": 65536, "warps": 64, "blocks": 32, "smem": 233472, "smem_per_block_reserved": 1024},
    "sm80": {"regs": 65536, "warps": 64, "blocks": 32, "smem": 167936, "smem_per_block_reserved": 1024},
    "sm89": {"regs": 65536, "warps": 48, "blocks": 24, "smem": 102400, "smem_per_block_reserved": 1024},
    "sm100": {"regs": 65536, "warps": 64, "blocks": 32, "smem": 233472, "smem_per_block_reserved": 1024},
}
#: AMD CDNA: waves per SIMD, unified VGPR+AGPR file per lane, LDS per CU
CU_LIMITS = {"gfx942": {"waves": 8, "vgprs": 512, "lds": 65536}, "gfx950": {"waves": 8, "vgprs": 512, "lds": 163840}}


def nvidia_occupancy(arch: str, num_warps: int, regs: int, shared: int) -> dict[str, Any]:
    """Resident warps per SM (and what limits them) for one block shape: registers are allocated per warp in
    units of 256, shared memory per block with 1 KiB reserved."""
    lim = SM_LIMITS.get(arch, SM_LIMITS["sm90"])
    if num_warps <= 0:
        return {}
    regs_per_warp = math.ceil(max(regs, 1) * 32 / 256) * 256
    by = {
        "warps": lim["warps"] // num_warps,
        "registers": (lim["regs"] // regs_per_warp) // num_warps,
        "shared memory": lim["smem"] // (shared + lim["smem_per_block_reserved"]) if shared else lim["blocks"],
        "blocks": lim["blocks"],
    }
    blocks = min(by.values())
    limiter = min(by, key=lambda k: (by[k], k != "registers"))
    return {"blocks_per_sm": blocks, "occupancy": blocks * num_warps / lim["warps"], "limited_by": limiter}


def amdgcn_resources(text: str) -> dict[str, int]:
    """Register, spill and LDS counts from the amdhsa metadata of an AMDGCN listing."""
    keys = {
        ".vgpr_count": "vgpr",
        ".agpr_count": "agpr",
        ".sgpr_count": "sgpr",
        ".vgpr_spill_count": "vgpr_spill",
        ".sgpr_spill_count": "sgpr_spill",
        ".private_segment_fixed_size": "scratch",
        ".group_segment_fixed_size": "lds",
    }
    out: dict[str, int] = {}
    for key, name in keys.items():
        m = re.search(re.escape(key) + r":\s+(\d+)", text)
        if m:
            out[name] = int(m.group(1))
    return out


def resources(meta: dict[str, Any], amdgcn: str = "") -> dict[str, Any]:
    md = meta.get("metadata", {})
    res: dict[str, Any] = {
        "num_warps": md.get("num_warps"),
        "num_stages": md.get("num_stages"),
        "shared_bytes": md.get("shared"),
    }
    cub = meta.get("cubin_resources") or {}
    regs = meta.get("n_regs") or cub.get("reg")
    if regs is not None:
        res["registers"] = regs
    if cub:
        res["local_bytes"] = cub.get("local", 0)  # spills live in local memory
    if meta.get("n_spills") is not None:
        res["spills"] = meta["n_spills"]
    if amdgcn:
        res.update(amdgcn_resources(amdgcn))
    arch = str(md.get("arch") or "")
    target = str(meta.get("target") or "")
    if "cuda" in target or arch.startswith("sm"):
        if regs and md.get("num_warps"):
            res.update(nvidia_occupancy(arch or "sm90", md["num_warps"], int(regs), int(md.get("shared") or 0)))
    elif "vgpr" in res:
        gfx = next((g for g in CU_LIMITS if g in target or g in arch), "gfx942")
        lim = CU_LIMITS[gfx]
        regs_used = math.ceil((res.get("vgpr", 0) + res.get("agpr", 0)) / 8) * 8 or 8
        res["waves_per_simd"] = min(lim["waves"], lim["vgprs"] // regs_used)
        res["occupancy"] = res["waves_per_simd"] / lim["waves"]
    return res


# ------------------------------------------------------------------------------------------ instruction mix

_SASS_CTRL = re.compile(r"^\s*(?:[-\w]{1,2}:){4}\d+\s+")  # nvdisasm control codes "--:-:0:-:1"
_SASS_ADDR = re.compile(r"/\*[0-9a-fx]+\*/")


def sass_instructions(text: str) -> list[str]:
    """The instructions of a SASS listing (nvdisasm or cuobjdump form), without control codes and addresses."""
    out = []
    for line in text.splitlines():
        s = _SASS_CTRL.sub("", line)
        s = _SASS_ADDR.sub("", s).strip().rstrip(";").strip()
        if not s or s.endswith(":") or s.startswith(("Function", ".", "//", "#", "code for", "-")) or "{" in s:
            continue
        if not re.match(r"^(@!?U?P\w+\s+)?[A-Z][A-Z0-9_.]+", s):
            continue
        out.append(re.sub(r"\s+", " ", s))
    return out


def _opcode(instr: str) -> str:
    parts = instr.split()
    return parts[1] if parts[0].startswith("@") and len(parts) > 1 else parts[0]


def _width(op: str, default: int = 32) -> int:
    for w in (128, 64):
        if f".{w}" in op:
            return w
    for tag, w in ((".U8", 8), (".S8", 8), (".U16", 16), (".S16", 16)):
        if tag in op:
            return w
    return default


def sass_mix(text: str) -> Counter:
    mix: Counter = Counter()
    for ins in sass_instructions(text):
        op = _opcode(ins)
        base = op.split(".")[0]
        mix["instructions"] += 1
        if base in ("HGMMA", "IGMMA", "QGMMA", "BGMMA", "HMMA", "IMMA", "UTCHMMA", "UTCQMMA", "UTCIMMA"):
            mix[f"matrix {base}"] += 1
        elif base == "LDG":
            mix[f"global load {_width(op)}-bit"] += 1
        elif base == "STG":
            mix[f"global store {_width(op)}-bit"] += 1
        elif base == "LDGSTS":
            mix["async copy global→shared (cp.async)"] += 1
        elif base in ("UTMALDG", "UBLKCP"):
            mix["TMA load"] += 1
        elif base == "UTMASTG":
            mix["TMA store"] += 1
        elif base in ("LDS", "LDSM"):
            mix[f"shared load ({base})"] += 1
        elif base in ("STS", "STSM"):
            mix[f"shared store ({base})"] += 1
        elif base in ("BAR", "SYNCS", "WARPSYNC", "DEPBAR", "MEMBAR", "ARRIVES"):
            mix[f"barrier/sync {base}"] += 1
        elif base in ("F2F", "F2I", "I2F", "F2FP", "I2FP", "I2I"):
            mix[f"conversion {base}"] += 1
        elif base in ("LDL", "STL"):
            mix[f"local memory {base} (spills)"] += 1
        elif base in ("BRA", "BRX", "EXIT", "RET", "CALL"):
            mix["control flow"] += 1
        elif base in ("FFMA", "FMUL", "FADD", "FMNMX", "HFMA2", "HMUL2", "HADD2"):
            mix["fp arithmetic"] += 1
        elif base in ("IMAD", "IADD3", "LEA", "SHF", "LOP3", "ISETP", "IMNMX", "IABS"):
            mix["integer arithmetic"] += 1
    return mix


_PTX_PATTERNS = (
    (r"wgmma\.mma_async", "matrix wgmma"),
    (r"\bmma\.sync", "matrix mma.sync"),
    (r"cp\.async\.bulk\.tensor", "TMA copy"),
    (r"cp\.async\.(?:ca|cg)", "async copy global→shared (cp.async)"),
    (r"ld\.global(?:\.\w+)*\.v4", "global load vector x4"),
    (r"ld\.global(?:\.\w+)*\.v2", "global load vector x2"),
    (r"st\.global(?:\.\w+)*\.v4", "global store vector x4"),
    (r"st\.global(?:\.\w+)*\.v2", "global store vector x2"),
    (r"ldmatrix", "shared load (ldmatrix)"),
    (r"stmatrix", "shared store (stmatrix)"),
    (r"\bbar\.sync|\bbarrier\.sync", "barrier bar.sync"),
    (r"mbarrier\.", "barrier mbarrier"),
    (r"\bcvt\.", "conversion cvt"),
)


def ptx_mix(text: str) -> Counter:
    mix: Counter = Counter()
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith(("//", ".", "{", "}", "$")):
            continue
        mix["instructions"] += 1
        for pat, name in _PTX_PATTERNS:
            if re.search(pat, s):
                mix[name] += 1
                break
        else:
            if re.match(r"(@%p\d+\s+)?ld\.global", s):
                mix["global load scalar"] += 1
            elif re.match(r"(@%p\d+\s+)?st\.global", s):
                mix["global store scalar"] += 1
    return mix


def amdgcn_mix(text: str) -> Counter:
    mix: Counter = Counter()
    for line in text.splitlines():
        s = line.strip()
        m = re.match(r"([sv]_\w+|global_\w+|buffer_\w+|ds_\w+|flat_\w+|scratch_\w+)", s)
        if not m:
            continue
        op = m.group(1)
        mix["instructions"] += 1
        if op.startswith("v_mfma") or op.startswith("v_smfmac"):
            mix["matrix MFMA"] += 1
        elif op.startswith(("global_load", "buffer_load", "flat_load")):
            mix[f"global load {op.split('_', 2)[-1]}"] += 1
        elif op.startswith(("global_store", "buffer_store", "flat_store")):
            mix[f"global store {op.split('_', 2)[-1]}"] += 1
        elif op.startswith(("ds_read", "ds_load")):
            mix[f"shared load {op}"] += 1
        elif op.startswith(("ds_write", "ds_store")):
            mix[f"shared store {op}"] += 1
        elif op in ("s_barrier", "s_waitcnt"):
            mix[f"barrier/sync {op}"] += 1
        elif op.startswith("v_cvt"):
            mix["conversion v_cvt"] += 1
        elif op.startswith("scratch_"):
            mix["scratch (spills)"] += 1
    return mix


# ------------------------------------------------------------------------------------------ TTGIR

_TTGIR_OPS = re.compile(r"(?:^|=\s*|\s)((?:tt|ttg|ttng|amdgpu|nvgpu|scf)\.[a-z_]+)\b")


def ttgir_facts(text: str) -> dict[str, Any]:
    """Layouts (``#name = …`` definitions), module attributes and op counts of a TTGIR module."""
    layouts = {}
    for m in re.finditer(r"^#(\w+) = (#(?:ttg|triton_gpu)\.\w+<.*>)\s*$", text, re.M):
        layouts[m.group(1)] = m.group(2)
    attrs = dict(re.findall(r'"(ttg\.[\w-]+|triton_gpu\.[\w-]+)"\s*=\s*([^,}\s]+)', text))
    ops: Counter = Counter()
    for line in text.splitlines():
        s = line.strip()
        if s.startswith(("#", "//", "loc(")):
            continue
        m = _TTGIR_OPS.search(s.split(" loc(")[0])
        if m:
            ops[m.group(1)] += 1
    return {"layouts": layouts, "attrs": attrs, "ops": ops}


# ------------------------------------------------------------------------------------------ artifacts


@dataclass
class Kernel:
    """One stored compiled kernel."""

    id: str
    folder: Path
    meta: dict[str, Any] = field(default_factory=dict)
    _memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  # file texts, parsed asm

    @property
    def name(self) -> str:
        return str(self.meta.get("name") or self.id.split("-", 1)[-1])

    def text(self, stage: str) -> str:
        if stage not in self._memo:
            p = self.folder / stage
            self._memo[stage] = p.read_text(encoding="utf-8", errors="replace") if p.is_file() else ""
        return self._memo[stage]

    def asm_kind(self) -> str:
        for stage in ("sass", "amdgcn", "ptx"):
            if (self.folder / stage).is_file():
                return stage
        return ""

    def mix(self) -> Counter:
        kind = self.asm_kind()
        text = self.text(kind)
        return {"sass": sass_mix, "amdgcn": amdgcn_mix, "ptx": ptx_mix}.get(kind, lambda _t: Counter())(text)

    def normalized_asm(self) -> list[str]:
        if "normalized_asm" not in self._memo:
            kind = self.asm_kind()
            text = self.text(kind)
            if kind == "sass":
                lines = sass_instructions(text)
            else:
                lines = [ln.split("//")[0].split(";")[0].rstrip() for ln in text.splitlines()]
                lines = [ln for ln in lines if ln.strip()]
            self._memo["normalized_asm"] = lines
        return self._memo["normalized_asm"]


def load_kernel(root: Path, kid: str) -> Kernel:
    folder = root / kid
    meta_p = folder / "meta.json"
    if not meta_p.is_file():
        raise HarnessError(f"{folder}: no meta.json (artifacts incomplete or moved?)")
    try:
        meta = json.loads(meta_p.read_text())
    except ValueError:
        raise HarnessError(f"{meta_p}: not JSON") from None
    return Kernel(kid, folder, meta)


def pair_kernels(golden: list[Kernel], tot: list[Kernel]) -> list[tuple[Kernel | None, Kernel | None]]:
    """Match the two stacks' kernels of one case by name, in launch order."""
    pairs: list[tuple[Kernel | None, Kernel | None]] = []
    rest = list(tot)
    for g in golden:
        t = next((k for k in rest if k.name == g.name), None)
        if t is not None:
            rest.remove(t)
        pairs.append((g, t))
    pairs += [(None, t) for t in rest]
    return pairs


# ------------------------------------------------------------------------------------------ the diff


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.0%}" if v <= 1 else f"{v:.3g}"
    return "—" if v is None else str(v)


def resource_rows(g: dict[str, Any], t: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    rows = []
    for key in sorted(set(g) | set(t), key=lambda k: (k not in ("registers", "local_bytes", "spills"), k)):
        a, b = g.get(key), t.get(key)
        mark = ""
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a != b:
            mark = f"{b - a:+.0%}" if key == "occupancy" else f"{b - a:+g}"
        elif a != b:
            mark = "changed"
        rows.append((key, _fmt(a), _fmt(b), mark))
    return rows


def mix_rows(g: Counter, t: Counter) -> list[tuple[str, int, int, int]]:
    keys = sorted(set(g) | set(t), key=lambda k: (k != "instructions", not k.startswith("matrix"), k))
    return [(k, g.get(k, 0), t.get(k, 0), t.get(k, 0) - g.get(k, 0)) for k in keys]


def ttgir_diff(g: dict[str, Any], t: dict[str, Any]) -> dict[str, Any]:
    gl, tl = set(g["layouts"].values()), set(t["layouts"].values())
    ops = sorted(set(g["ops"]) | set(t["ops"]))
    return {
        "layouts_only_golden": sorted(gl - tl),
        "layouts_only_tot": sorted(tl - gl),
        "attrs": [
            (k, g["attrs"].get(k, ""), t["attrs"].get(k, ""))
            for k in sorted(set(g["attrs"]) | set(t["attrs"]))
            if g["attrs"].get(k) != t["attrs"].get(k)
        ],
        "ops": [(op, g["ops"].get(op, 0), t["ops"].get(op, 0)) for op in ops if g["ops"].get(op) != t["ops"].get(op)],
    }


_REGS = re.compile(r"\b(U?R|U?P|[vsa])(\d+)\b|\b([vsa])\[\d+:\d+\]")


def register_agnostic(lines: list[str]) -> list[str]:
    """Register numbers dropped (R12 → R#, v[4:7] → v[#]): a diff of these shows changed code, not renaming."""
    return [_REGS.sub(lambda m: (m.group(1) or m.group(3)) + ("#" if m.group(1) else "[#]"), ln) for ln in lines]


def folder_labels(labels: tuple[str, str]) -> tuple[str, str]:
    """The stacks' names where they head paths and lines in lower case: ``golden`` / ``tot`` for the usual pair."""
    return ("golden", "tot") if labels == STACKS else labels


def asm_diff(
    g: Kernel, t: Kernel, context: int = 2, registers: bool = True, labels: tuple[str, str] = STACKS
) -> list[str]:
    """A unified diff of the two kernels' assembly, its file headers ``golden/ID/sass`` and ``tot/ID/sass`` (the
    stacks' names in ``labels``)."""
    ga, ta = g.normalized_asm(), t.normalized_asm()
    gname, tname = folder_labels(labels)
    if not registers:
        ga, ta = register_agnostic(ga), register_agnostic(ta)
    return list(
        difflib.unified_diff(
            ga,
            ta,
            fromfile=f"{gname}/{g.id}/{g.asm_kind()}",
            tofile=f"{tname}/{t.id}/{t.asm_kind()}",
            n=context,
            lineterm="",
        )
    )


@dataclass
class KernelDiff:
    name: str
    golden: Kernel | None
    tot: Kernel | None
    resources: list[tuple[str, str, str, str]]
    mix: list[tuple[str, int, int, int]]
    ttgir: dict[str, Any]
    diff: list[str]  # exact (registers included)
    same_binary: bool
    structural: list[str] = field(default_factory=list)  # register numbers dropped
    facts: KernelFacts | None = None  # the raw figures the likely cause is read from (causes.py)

    @property
    def diff_name(self) -> str:
        return f"diff-{self.golden.id[:16]}-{self.tot.id[:16]}.diff" if self.golden and self.tot else ""


def diff_kernels(g: Kernel | None, t: Kernel | None, labels: tuple[str, str] = STACKS) -> KernelDiff:
    name = (g or t).name  # type: ignore[union-attr]
    if g is None or t is None:
        return KernelDiff(name, g, t, [], [], {}, [], False)
    gr = resources(g.meta, g.text("amdgcn"))
    tr = resources(t.meta, t.text("amdgcn"))
    gm, tm = g.mix(), t.mix()
    ga, ta = g.normalized_asm(), t.normalized_asm()
    tg = ttgir_diff(ttgir_facts(g.text("ttgir")), ttgir_facts(t.text("ttgir")))
    structural = asm_diff(g, t, registers=False, labels=labels) if ga != ta else []
    return KernelDiff(
        name,
        g,
        t,
        resource_rows(gr, tr),
        mix_rows(gm, tm),
        tg,
        asm_diff(g, t, labels=labels) if ga != ta else [],
        ga == ta,
        structural,
        KernelFacts(name, gr, tr, dict(gm), dict(tm), tg, ga == ta, tuple(structural)),
    )


def headline(kd: KernelDiff, labels: tuple[str, str] = STACKS) -> str:
    """One line of the most telling differences, for tables (``labels``: what the two stacks are called)."""
    if kd.golden is None or kd.tot is None:
        return "only in " + (labels[1] if kd.golden is None else labels[0])
    bits = []
    for key, a, b, mark in kd.resources:
        if mark and key in ("registers", "local_bytes", "spills", "shared_bytes", "occupancy", "num_stages"):
            bits.append(f"{key} {a}→{b}")
    for key, a, b, d in kd.mix:
        if d and (key.startswith(("matrix", "global", "TMA", "local", "async", "barrier"))):
            bits.append(f"{key} {a}→{b}")
    if kd.ttgir.get("layouts_only_tot") or kd.ttgir.get("layouts_only_golden"):
        bits.append("layouts differ")
    if not bits:
        bits.append("same assembly" if kd.same_binary else f"{len(kd.diff)} diff lines, same resources")
    return "; ".join(bits[:6])


# ------------------------------------------------------------------------------------------ I/O


@dataclass
class CaseExplain:
    kernel: str
    case_id: str
    row: dict[str, Any]
    diffs: list[KernelDiff]
    problem: str = ""
    labels: tuple[str, str] = STACKS  # what the two stacks are called (render.vocabulary.stack_labels)
    left_out: int = 0  # on the first case: how many more matched and were not explained (--limit)

    @property
    def slug(self) -> str:
        return re.sub(r"[^\w.-]+", "_", f"{self.kernel}__{self.case_id}")

    def causes(self) -> list[Cause]:
        """The likely causes of this case's change, most likely first (causes.py)."""
        facts = [kd.facts for kd in self.diffs if kd.facts is not None]
        return classify(facts, _config(self.row.get("golden_config")), _config(self.row.get("tot_config")))


def _config(cell: Any) -> Any:
    if isinstance(cell, str) and cell.startswith("{"):
        with contextlib.suppress(ValueError):
            return json.loads(cell)
    return None if cell is None or (isinstance(cell, float) and math.isnan(cell)) else cell


def _results_and_root(named: str, compare_csv: Path, override: Path | None) -> tuple[pd.DataFrame, Path]:
    from harness.compare.store import locate_results
    from harness.results.load import load_results
    from harness.results.schema import artifacts_dir

    path = locate_results(named, compare_csv)
    if path is None:
        raise HarnessError(f"results file {named} (named by the compare metadata) not found, nor beside it")
    df = load_results(path)
    return df, (override or artifacts_dir(path, df.attrs["env"]))


def explain_cases(
    compare_csv: Path,
    cases: list[str] | None = None,
    golden_artifacts: Path | None = None,
    tot_artifacts: Path | None = None,
    limit: int = 20,
) -> list[CaseExplain]:
    """The cases to explain (regressions worst first, or those matching ``cases`` regexes) with their diffs."""
    return explain_comparison(compare_csv, cases, golden_artifacts, tot_artifacts, limit)[0]


def explain_comparison(
    compare_csv: Path,
    cases: list[str] | None = None,
    golden_artifacts: Path | None = None,
    tot_artifacts: Path | None = None,
    limit: int = 20,
) -> tuple[list[CaseExplain], tuple[str, str]]:
    """:func:`explain_cases`, and what the comparison calls its two stacks (:func:`stack_labels`), which a page
    that explains no case still needs for its title: both from one reading of its ``.meta.json``."""
    from harness.compare.compare import worst_first
    from harness.compare.store import load_compare

    for option, given in (("--golden-artifacts", golden_artifacts), ("--tot-artifacts", tot_artifacts)):
        if given is not None and not Path(given).is_dir():
            what = "is a file, not a folder (unpack an archive first)" if Path(given).exists() else "no such folder"
            raise HarnessError(f"{option} {given}: {what}: the folder `harness run --artifacts` wrote")
    try:
        pats = [re.compile(c) for c in cases or []]
    except re.error as err:
        raise HarnessError(f"--case: not a valid regular expression: {err}") from None
    cmp = load_compare(compare_csv)
    g_df, g_root = _results_and_root(cmp.golden_path, compare_csv, golden_artifacts)
    t_df, t_root = _results_and_root(cmp.tot_path, compare_csv, tot_artifacts)
    labels = stack_labels(cmp.golden_env, cmp.tot_env)
    for df, root, label, side in ((g_df, g_root, labels[0], "golden"), (t_df, t_root, labels[1], "tot")):
        if str(df.attrs.get("env", {}).get("backend") or "") == "interp":
            raise HarnessError(
                f"{label} results ran on Triton's CPU interpreter, which compiles no kernels: nothing to explain "
                "(run on a GPU with `harness run --artifacts`)"
            )
        if "artifacts" not in df.columns or not text(df["artifacts"]).str.len().any():
            raise HarnessError(f"{label} results have no artifacts column: run them with `harness run --artifacts`")
        if not root.is_dir():
            raise HarnessError(f"{root}: {label} artifacts folder not found (pass --{side}-artifacts DIR)")
    table = cmp.table.iloc[worst_first(cmp.table)]
    if cases:
        keys = table["kernel"] + "/" + table["case_id"]
        table = table[[any(p.search(k) for p in pats) for k in keys]]
        if table.empty:
            raise HarnessError(f"--case {' '.join(cases)}: no case of {compare_csv} matches")
    else:
        table = table[table["verdict"] == "regression"]
    dropped = max(0, len(table) - limit)
    table = table.head(limit)
    g_art = dict(zip(g_df["kernel"] + "/" + g_df["case_id"], text(g_df["artifacts"])))
    t_art = dict(zip(t_df["kernel"] + "/" + t_df["case_id"], text(t_df["artifacts"])))
    out = []
    diffs: dict[tuple[tuple[str, ...], tuple[str, ...]], list[KernelDiff]] = {}
    for rec in table.to_dict("records"):
        key = f"{rec['kernel']}/{rec['case_id']}"
        gids = [x for x in g_art.get(key, "").split(";") if x]
        tids = [x for x in t_art.get(key, "").split(";") if x]
        ce = CaseExplain(rec["kernel"], rec["case_id"], rec, [], labels=labels)
        if not gids or not tids:
            ce.problem = f"no artifacts for this case in {labels[0] if not gids else labels[1]} (not compiled?)"
        else:
            pair = (tuple(gids), tuple(tids))
            if pair not in diffs:  # cases sharing their compiled kernels share one diff
                gk = [load_kernel(g_root, i) for i in gids]
                tk = [load_kernel(t_root, i) for i in tids]
                diffs[pair] = [diff_kernels(a, b, labels) for a, b in pair_kernels(gk, tk)]
            ce.diffs = diffs[pair]
        out.append(ce)
    if out and dropped:  # never a silent cut: the index and the terminal say how many were left out
        out[0].left_out = dropped
    return out, labels


def _md_table(head: list[str], rows: list[tuple], right: int = 1) -> str:
    """Columns from ``right`` on right-aligned."""
    return "\n".join(md_table(head, rows, range(right, len(head)))) + "\n"


def case_markdown(ce: CaseExplain, max_diff_lines: int = 300) -> str:
    r = ce.row
    g, t = ce.labels
    parts = [
        f"## {ce.kernel} / {ce.case_id}\n\n",
        f"{g} {r.get('golden_us', float('nan')):.2f} µs → {t} {r.get('tot_us', float('nan')):.2f} µs "
        f"({r.get('delta_pct', float('nan')):+.1f} %), verdict **{r.get('verdict', '')}**\n\n",
    ]
    if ce.problem:
        return "".join(parts) + ce.problem + "\n"
    causes = ce.causes()
    parts.append(f"**Likely cause**: {causes[0].text()}\n\n")
    if len(causes) > 1:
        parts.append(
            "Also changed, less likely to dominate:\n\n" + "".join(f"- {c.text()}\n" for c in causes[1:]) + "\n"
        )
    for kd in ce.diffs:
        parts.append(f"### kernel `{kd.name}`: {headline(kd, ce.labels)}\n\n")
        if kd.golden is None or kd.tot is None:
            continue
        parts.append(
            f"{g} `{kd.golden.id}` ({kd.golden.meta.get('triton', '')}) · {t} `{kd.tot.id}` "
            f"({kd.tot.meta.get('triton', '')})\n\n"
        )
        parts.append("**Resources**\n\n" + _md_table(["", g, t, "Δ"], kd.resources) + "\n")
        changed = [m for m in kd.mix if m[3] or m[0] == "instructions"]
        if changed:
            parts.append("**Instruction mix** (static counts in the assembly; only what changed)\n\n")
            parts.append(_md_table(["", g, t, "Δ"], [(k, a, b, f"{d:+d}") for k, a, b, d in changed]) + "\n")
        tg = kd.ttgir
        if tg.get("attrs") or tg.get("ops") or tg.get("layouts_only_golden") or tg.get("layouts_only_tot"):
            parts.append("**TTGIR**\n\n")
            if tg["attrs"]:
                parts.append(_md_table(["module attribute", g, t], tg["attrs"]) + "\n")
            if tg["ops"]:
                parts.append(_md_table(["op", g, t], tg["ops"]) + "\n")
            for side, name in zip(("golden", "tot"), folder_labels(ce.labels)):
                for lay in tg[f"layouts_only_{side}"]:
                    parts.append(f"- layout only in {name}: `{lay}`\n")
            parts.append("\n")
        if kd.diff:
            shown = kd.structural[:max_diff_lines]
            more = len(kd.structural) - len(shown)
            parts.append(
                f"Assembly: {len(kd.diff)} diff lines exactly ([{kd.diff_name}]({kd.diff_name})), "
                f"{len(kd.structural)} with register numbers ignored:\n\n"
            )
            parts.append("<details><summary>assembly diff, registers ignored</summary>\n\n```diff\n")
            parts.append("\n".join(shown) + "\n")
            if more:
                parts.append(f"… {more} more lines\n")
            parts.append("```\n</details>\n\n")
    return "".join(parts)


_CSS = """body{font:14px/1.45 system-ui,sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;
margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px}td:not(:first-child){text-align:right}
pre{background:#f6f8fa;padding:8px;overflow:auto;font-size:12px}.add{color:#116329;background:#dafbe1}
.del{color:#82071e;background:#ffebe9}.hunk{color:#6639ba}code{background:#f0f0f0;padding:0 3px}"""


def _html_from_markdown(md: str) -> str:
    """A small renderer for the markdown this module writes (headings, tables, lists, details, diff blocks)."""
    out, in_table, in_code = [], False, False
    for line in md.splitlines():
        if in_code:
            if line.startswith("```"):
                out.append("</pre>")
                in_code = False
                continue
            cls = (
                "hunk"
                if line.startswith("@@")
                else "add"
                if line.startswith("+")
                else "del"
                if line.startswith("-")
                else ""
            )
            out.append(f'<span class="{cls}">{html.escape(line)}</span>' if cls else html.escape(line))
            continue
        if line.startswith("```"):
            out.append("<pre>")
            in_code = True
            continue
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if all(set(c) <= set("-:") for c in cells):
                continue
            if not in_table:
                out.append("<table>")
                in_table = True
                out.append("<tr>" + "".join(f"<th>{_inline(c)}</th>" for c in cells) + "</tr>")
                continue
            out.append("<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in cells) + "</tr>")
            continue
        if in_table:
            out.append("</table>")
            in_table = False
        if line.startswith("#"):
            n = len(line) - len(line.lstrip("#"))
            out.append(f"<h{n}>{_inline(line[n:].strip())}</h{n}>")
        elif line.startswith("- "):
            out.append(f"<li>{_inline(line[2:])}</li>")
        elif line.startswith(("<details", "</details")):
            out.append(line)
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
    if in_table:
        out.append("</table>")
    return "\n".join(out)


def _inline(text: str) -> str:
    s = html.escape(text)
    s = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", s)
    s = re.sub(r"`([^`]+)`", r"<code>\1</code>", s)
    return re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", r'<a href="\2">\1</a>', s)


def slower_title(labels: tuple[str, str]) -> str:
    """``Why TOT is slower``, or ``Why pr is slower than main`` where the stacks have names of their own."""
    return f"Why {labels[1]} is slower" + ("" if labels == STACKS else f" than {labels[0]}")


def write_explain(
    cases: list[CaseExplain], out: Path, title: str | None = None, labels: tuple[str, str] | None = None
) -> Path:
    """``out/index.{md,html}``, one ``.md`` and ``.html`` per case, one exact ``.diff`` per kernel pair. The
    title names the stacks as ``labels`` do (default: as the cases do; golden and TOT when there are none)."""
    labels = labels or (cases[0].labels if cases else STACKS)
    title = title or slower_title(labels)
    out.mkdir(parents=True, exist_ok=True)
    rows, firsts = [], []
    for ce in cases:
        md = case_markdown(ce)
        (out / f"{ce.slug}.md").write_text(md, encoding="utf-8")
        page = f"<!doctype html><meta charset=utf-8><title>{html.escape(ce.slug)}</title><style>{_CSS}</style>"
        (out / f"{ce.slug}.html").write_text(page + _html_from_markdown(md), encoding="utf-8")
        for kd in ce.diffs:
            if kd.diff and not (out / kd.diff_name).exists():  # one file per kernel pair, shared by its cases
                (out / kd.diff_name).write_text("\n".join(kd.diff) + "\n", encoding="utf-8")
        what = ce.problem or " · ".join(f"{kd.name}: {headline(kd, ce.labels)}" for kd in ce.diffs)
        first = "unknown" if ce.problem else ce.causes()[0].kind
        firsts.append(first)
        r = ce.row
        rows.append(
            (
                f"[{ce.kernel} / {ce.case_id}]({ce.slug}.md)",
                f"{r.get('delta_pct', float('nan')):+.1f} %",
                WORDS[first].split(":")[0],
                what.replace("|", "/"),
            )
        )
    left = cases[0].left_out if cases else 0
    more = f" ({left} more matched, not explained here: raise --limit)" if left else ""
    index = (f"# {title}\n\n{len(cases)} cases{more}; each links to its likely cause, resources, instruction "
             "mix, TTGIR and assembly diffs.\n\n")  # fmt: skip
    if firsts:
        index += (
            "**Likely causes**\n\n"
            + _md_table(
                ["cause", "cases", "share"],
                [(WORDS[c].split(":")[0], n, f"{pct:.0f} %") for c, n, pct in shares(firsts)],
            )
            + "\n"
        )
    index += _md_table(["case", "Δ", "likely cause", "what changed in the compiled kernels"], rows, right=3)
    (out / "index.md").write_text(index, encoding="utf-8")
    page = f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title><style>{_CSS}</style>"
    (out / "index.html").write_text(page + _html_from_markdown(index.replace(".md)", ".html)")), encoding="utf-8")
    return out / "index.md"
