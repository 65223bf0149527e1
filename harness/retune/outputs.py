"""`harness retune`'s outputs: the changed config files and their diff, and the summary the report is drawn from
(what each slot became, every case's verdict before and after, what is left and why, the cost). A mixin of
retune.Retune: it reads the run's state, and decides nothing."""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.fsutil import write_text
from harness.retune import inputs as I
from harness.retune.guard import Measured, judge
from harness.retune.model import Change, Slot, diff_text
from harness.verdict.rule import Rule, verdict_of


class Outputs:
    def write(self) -> dict[str, Path]:
        """The changed files to DIR/configs/ (and in place unless --dry-run), and DIR/retune.diff."""
        out = self.opts.out
        changed = {n: t for n, t in self.state.items() if self.original.get(n) != t}
        for name, text in changed.items():
            write_text(out / "configs" / name, text)
        if not self.opts.dry_run and changed:
            live = I.snapshot(self.config_dir)
            moved = [n for n in changed if live.get(n) != self.original.get(n)]
            if moved:
                raise HarnessError(
                    f"{self.config_dir / moved[0]}: changed while the retune ran; the new files are in {out / 'configs'}"
                )
            for name, text in changed.items():
                write_text(self.config_dir / name, text)
        where = self.config_dir if not self.opts.dry_run else out / "configs"
        diff, folder = [], _shown(self.config_dir)
        for name in sorted(changed):
            old = self.original.get(name, "")
            diff += difflib.unified_diff(
                old.splitlines(keepends=True),
                changed[name].splitlines(keepends=True),
                f"a/{folder}/{name}" if name in self.original else "/dev/null",
                f"b/{folder}/{name}",
            )
        write_text(out / "retune.diff", "".join(diff))
        return {"files": where, "diff": out / "retune.diff", **{n: where / n for n in changed}}

    def summary(self, slots: list[Slot], written: dict[str, Path]) -> dict[str, Any]:
        """The report's data (report.py renders it; retune.json keeps it)."""
        verdict = self._final_verdicts()
        return {
            "compare": str(self.opts.compare),
            "asked": self._asked(slots),
            "rule": self.rule.describe(),
            "golden": {"env": self.golden.spec.name, "triton": self.golden.triton},
            "tot": {"env": self.tot.spec.name, "triton": self.tot.triton},
            "gpu": self.gpu_name,
            "arch": self.arch,
            "dry_run": self.opts.dry_run,
            "written_to": str(written["files"]),
            "files": sorted(n for n in written if n not in ("files", "diff")),
            "budget_min": self.opts.budget_min,
            "kernels": self._kernel_rows(verdict),
            "kept": [_change_row(c) for c in self.kept],
            "rejected": [_plain(r) for r in self.rejected],
            "left": self._left(slots, verdict),
            "slots": [_slot_row(s) for s in slots],
            "cost": self._cost_row(slots),
            "notes": self.notes,
        }

    def _final_verdicts(self) -> dict[str, str]:
        """Each case's verdict after the retune: the guard's for a case a kept change moved, the search's for a
        regressed case whose config is no regression now, COMPARE's for the rest."""
        verdict = {c.key: c.verdict for c in self.cases}
        verdict.update(self.after_verdict)
        verdict.update({cid: _verdict(m, self.rule) for cid, m in self.after.items()})
        return verdict

    def _scope(self) -> list[str]:
        """The kernels asked for (--kernel), else every kernel of COMPARE with a regression or TOT failure."""
        if self.opts.kernels:
            return list(self.opts.kernels)
        t = self.table
        return list(dict.fromkeys(str(k) for k in t.loc[t["verdict"].isin(I.TARGETS), "kernel"]))

    def _alone(self) -> list[dict[str, Any]]:
        """COMPARE's rows of the kernels in scope that the retune could not place (no config files, a kernel that
        does not load, a case no file resolves), each with why (the note that left it alone)."""
        rows = []
        for r in self.table[self.table["kernel"].astype(str).isin(self._scope())].to_dict("records"):
            key = f"{r['kernel']}/{r['case_id']}"
            if key in self.by_key:
                continue
            why = next(
                (
                    n
                    for n in self.notes
                    if n.startswith((f"{r['kernel']}: ", f"{key}:", f"{r['kernel']} {r['case_id']}"))
                ),
                "",
            )
            rows.append({"case": key, "kernel": str(r["kernel"]), "verdict": str(r["verdict"]),
                         "delta_pct": r.get("delta_pct"), "why": why or "its kernel looks up no config files: left alone"})  # fmt: skip
        return rows

    def _asked(self, slots: list[Slot]) -> dict[str, Any]:
        """What was asked and what was done, and the cases between the two (left alone, each with why)."""
        alone = [r for r in self._alone() if r["verdict"] in I.TARGETS]
        searched = sum(len(s.targets) for s in slots)
        return {"kernels": self.opts.kernels or "all", "targets": searched + len(alone), "searched": searched,
                "slots": len(slots), "left_alone": len(alone)}  # fmt: skip

    def _kernel_rows(self, verdict: dict[str, str]) -> list[dict[str, Any]]:
        """Per kernel in scope: regressions before, fixed by a kept change, not regressed when timed again with
        the config unchanged (not the retune's doing), left; TOT failures before and after."""
        rows = []
        alone = self._alone()
        for k in dict.fromkeys([*self._scope(), *(c.case.name for c in self.cases if c.target)]):
            mine = [c for c in self.cases if c.case.name == k]
            reg = [c for c in mine if c.verdict == "regression"]
            lone = [r for r in alone if r["kernel"] == k]
            row = {
                "kernel": k,
                "cases": len(mine) + len(lone),
                "regressions_before": len(reg) + sum(r["verdict"] == "regression" for r in lone),
                "fixed": sum(c.key in self.after and verdict[c.key] != "regression" for c in reg),
                "retimed": sum(c.key not in self.after and c.key in self.after_verdict for c in reg),
                "regressions_after": sum(verdict[c.key] == "regression" for c in mine)
                + sum(r["verdict"] == "regression" for r in lone),
                "failed_before": sum(c.verdict == "failed_in_tot" for c in mine)
                + sum(r["verdict"] == "failed_in_tot" for r in lone),
                "failed_after": sum(verdict[c.key] == "failed_in_tot" for c in mine)
                + sum(r["verdict"] == "failed_in_tot" for r in lone),
            }
            if lone and not mine:
                row["why"] = lone[0]["why"]
            rows.append(row)
        return rows

    def _left(self, slots: list[Slot], verdict: dict[str, str]) -> list[dict[str, Any]]:
        """The regressions and TOT failures no change removed, each with why: those searched, and those left
        alone (no config files, no file resolves them)."""
        left = []
        for s in slots:
            for c in s.targets:
                if verdict[c.key] not in I.TARGETS:
                    continue
                m = self.after.get(c.key)
                why = f"the change kept for {s.name} left it: {judge(m, self.rule).why}" if m else s.why
                left.append({"case": c.key, "verdict": verdict[c.key], "delta_pct": c.delta_pct, "why": why})
        in_slot = {c.key for s in slots for c in s.targets}
        wanted = set(self._scope())
        for c in self.cases:  # in scope, a target, but in no slot searched
            if c.target and c.key not in in_slot and c.case.name in wanted and verdict[c.key] in I.TARGETS:
                left.append({"case": c.key, "verdict": verdict[c.key], "delta_pct": c.delta_pct,
                             "why": "in no slot searched"})  # fmt: skip
        for r in self._alone():
            if r["verdict"] in I.TARGETS:
                left.append({k: r[k] for k in ("case", "verdict", "delta_pct", "why")})
        return left

    def _cost_row(self, slots: list[Slot]) -> dict[str, Any]:
        cost = self.measurer.cost
        return {
            "compiled": cost.compiled,
            "timed": cost.timed,
            "failed": cost.failed,
            "from_cache": cost.cached,
            "pruned": sum(len(s.search.pruned) for s in slots if s.search),
            "configs_searched": sum(s.search.timed for s in slots if s.search),
            "runs": cost.runs,
            "minutes": {k: round(v / 60, 3) for k, v in cost.seconds.items()},
            "total_min": round(cost.minutes, 3),
        }


def _shown(folder: Path) -> str:
    """The config folder as the diff names it: relative to here when inside it (``git apply`` from the repo's
    root takes it as is), else absolute."""
    rel = os.path.relpath(folder)
    return str(folder.resolve()).lstrip("/") if rel.startswith("..") else rel


def _slot_row(s: Slot) -> dict[str, Any]:
    """A slot's search path (each move: its level and what it changed), its outcome and why."""
    path, prev = [], s.seed
    for level, cfg in s.search.moves if s.search else []:
        path.append({"level": level, "change": diff_text(prev, cfg), "config": cfg})
        prev = cfg
    return {
        "slot": s.name,
        "targets": [c.key for c in s.targets],
        "seed": s.seed,
        "moves": path,
        "searched": s.search.timed if s.search else 0,
        "hints": len(s.search.hints) if s.search else 0,
        "ended": s.search.done if s.search else "",
        "outcome": s.outcome,
        "why": s.why,
    }


def _verdict(m: Measured, rule: Rule) -> str:
    if m.tot_new is None:
        return "failed_in_tot"
    if m.golden_old is None:
        return "ok"
    if judge(m, rule).kind == "unsure":  # not shown fixed: still counted among the regressions left
        return "regression"
    return verdict_of(m.golden_old, m.tot_new, rule)


def measured_row(m: Measured, v) -> dict[str, Any]:  # noqa: ANN001
    return {
        "case": f"{m.kernel}/{m.case_id}",
        "golden_old": m.golden_old,
        "tot_old": m.tot_old,
        "golden_new": m.golden_new,
        "tot_new": m.tot_new,
        "verdict": v.kind,
        "why": v.why,
    }


def _change_row(c: Change) -> dict[str, Any]:
    return {
        "slot": c.slot,
        "kind": c.kind,
        "file": c.file,
        "bucket": c.bucket,
        "old": c.old,
        "new": c.new,
        "change": diff_text(c.old, c.new),
        "why": c.decision.why,
        "cases": [measured_row(m, v) for m, v in c.decision.verdicts],
    }


def _plain(r: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(r, default=str))
