"""Explain stage: why did a case get slower? Diff the compiled kernels the two stacks produced for it.

Inputs are the artifact folders ``harness run --artifacts`` keeps beside each results file (one folder per
compiled kernel: ``ttir``, ``ttgir``, ``llir``, ``ptx``/``sass`` or ``amdgcn``, ``meta.json``), and the
``artifacts`` column that names, per case, the kernels it launched. For each case the golden and TOT kernels are
paired by name and compared on: resources (registers, spills, shared memory, warps, stages, an occupancy
estimate), the static instruction mix of the assembly (matrix instructions, global load/store widths, shared
memory traffic, barriers, conversions), TTGIR facts (layouts, op counts such as async copies and warp-group
dots) and a unified diff of the assembly. What a kernel's text says is facts.py's; the pages are pages.py's.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from harness.errors import HarnessError
from harness.explain.causes import Cause, KernelFacts, classify
from harness.explain.facts import amdgcn_mix, ptx_mix, resources, sass_instructions, sass_mix, ttgir_facts
from harness.render.vocabulary import STACKS, stack_labels
from harness.results.cells import text

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


#: the order of an autotuned op's pairs on its page (pair_kernels)
PAIR_ORDER = {"each": 0, "same": 0, "ran": 0, "tot": 1, "golden": 2, "": 3}


def launched_with(k: Kernel | None) -> dict[str, Any]:
    """The scalar keyword arguments the kernel was first launched with (worker/artifacts.capture_compiled; {} in
    artifacts of an older harness)."""
    launch = k.meta.get("launch") if k is not None else None
    return launch if isinstance(launch, dict) else {}


def ran(k: Kernel | None, config: Any) -> bool:
    """Whether ``k`` was launched with the row's ``config`` (the config the case ran, as the library chose it):
    every key of the config its launch names agrees, and it names one."""
    launch = launched_with(k)
    shared = [key for key in (config if isinstance(config, dict) else {}) if key in launch]
    return bool(shared) and all(launch[key] == config[key] for key in shared)


def pair_kernels(
    golden: list[Kernel], tot: list[Kernel], golden_config: Any = None, tot_config: Any = None
) -> list[tuple[Kernel | None, Kernel | None, str]]:
    """Match the two stacks' kernels of one case by name, in launch order, and where an autotuned op compiled
    several candidates of one name, by the arguments each was launched with (one config under both compilers).
    Each pair says what it is, per kernel name: 'each' (the kernels each stack ran, where they ran other configs:
    the rows' ``config``), 'same' (both ran the same config), 'tot' or 'golden' (the config that stack ran,
    compiled by both), 'ran' (a name with one compiled kernel a stack: it ran), '' (a candidate only tried, or
    nothing says); in that order."""
    pairs: list[tuple[Kernel | None, Kernel | None]] = []
    rest = list(tot)
    for g in golden:
        named = [k for k in rest if k.name == g.name]
        t = next((k for k in named if launched_with(k) and launched_with(k) == launched_with(g)), None)
        t = t or (named[0] if named else None)
        if t is not None:
            rest.remove(t)
        pairs.append((g, t))
    pairs += [(None, t) for t in rest]
    out: list[tuple[Kernel | None, Kernel | None, str]] = []
    for name in dict.fromkeys((g or t).name for g, t in pairs):  # type: ignore[union-attr]
        mine = [(g, t) for g, t in pairs if (g or t).name == name]  # type: ignore[union-attr]
        out += _ran_pairs(mine, [k for k in golden if k.name == name], [k for k in tot if k.name == name],
                          golden_config, tot_config)  # fmt: skip
    return sorted(out, key=lambda p: PAIR_ORDER[p[2]])


def _ran_pairs(pairs: list, golden: list[Kernel], tot: list[Kernel], golden_config: Any, tot_config: Any) -> list:
    """One kernel name's pairs, each labelled (pair_kernels)."""
    if len(golden) <= 1 and len(tot) <= 1:  # no candidates: what was compiled ran
        return [(g, t, "ran" if g is not None and t is not None else "") for g, t in pairs]
    g_ran = next((g for g in golden if ran(g, golden_config)), None)
    t_ran = next((t for t in tot if ran(t, tot_config)), None)
    labelled = []
    for g, t in pairs:
        both = g is not None and t is not None
        what = ("" if not both else "same" if g is g_ran and t is t_ran else "tot" if t is t_ran else
                "golden" if g is g_ran else "")  # fmt: skip
        labelled.append((g, t, what))
    if g_ran is not None and t_ran is not None and not any(g is g_ran and t is t_ran for g, t, _ in labelled):
        labelled.insert(0, (g_ran, t_ran, "each"))
    return labelled


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
    #: which pair this is where the op chose among candidates (pair_kernels): 'each', 'same', 'ran', 'tot',
    #: 'golden' or ''
    ran: str = ""

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
        # where the op chose among candidates, the kernels it ran tell the cause, not the ones it only tried
        chosen = [kd for kd in self.diffs if kd.ran] or self.diffs
        facts = [kd.facts for kd in chosen if kd.facts is not None]
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
    diffs: dict[tuple[tuple[str, ...], tuple[str, ...], str], list[KernelDiff]] = {}
    for rec in table.to_dict("records"):
        key = f"{rec['kernel']}/{rec['case_id']}"
        gids = [x for x in g_art.get(key, "").split(";") if x]
        tids = [x for x in t_art.get(key, "").split(";") if x]
        ce = CaseExplain(rec["kernel"], rec["case_id"], rec, [], labels=labels)
        if not gids or not tids:
            ce.problem = f"no artifacts for this case in {labels[0] if not gids else labels[1]} (not compiled?)"
        else:
            configs = _config(rec.get("golden_config")), _config(rec.get("tot_config"))
            pair = (tuple(gids), tuple(tids), json.dumps(configs, sort_keys=True, default=str))
            if pair not in diffs:  # cases sharing their compiled kernels and configs share one diff
                gk = [load_kernel(g_root, i) for i in gids]
                tk = [load_kernel(t_root, i) for i in tids]
                diffs[pair] = [replace(diff_kernels(a, b, labels), ran=what)
                               for a, b, what in pair_kernels(gk, tk, *configs)]  # fmt: skip
            ce.diffs = diffs[pair]
        out.append(ce)
    if out and dropped:  # never a silent cut: the index and the terminal say how many were left out
        out[0].left_out = dropped
    return out, labels
