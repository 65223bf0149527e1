"""The retune's report: before/after per kernel, every kept and rejected change with its reason, the regressions
left, and what the search cost. Pure renderers (the report's data in, markdown or an HTML section out) and
:func:`write_reports`, which writes DIR/retune.json, retune.md and retune.html. ``harness report --retune
DIR/retune.json`` puts the same HTML section into the HTML report."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from harness.fsutil import write_text
from harness.render.html import CSS, JS, html_table, plain
from harness.render.mdtable import md_table

AFTER_NOTE = (
    "left: the guard's measurements for the cases whose config changed (TOT with the new config against golden "
    "with the old); for a regressed case whose current config is no regression when timed now, that TOT time "
    "against golden's on this GPU (counted apart: the retune changed nothing there); COMPARE's verdict for the "
    "others, among them the cases of kernels without config files, which the retune leaves alone"
)


def _cell(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return plain(v)
    return str(v)


def _md_table(columns: list[str], rows: list[list[Any]]) -> str:
    return "\n".join(md_table(columns, [[_cell(v) for v in r] for r in rows])) + "\n"


KERNEL_COLUMNS = ["kernel", "cases", "regressions: before → left", "fixed by a kept change",
                  "not regressed when timed again (config unchanged)", "TOT failures: before → left", "note"]  # fmt: skip


def kernel_rows(data: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    """Per kernel (and all): cases, regressions before → left, those a kept change fixed apart from those that
    were no regression when timed again (the retune changed nothing there), TOT failures before → left, and why
    a kernel was left alone. A retune.json of an older harness lacks the two counts: shown as —."""
    keys = ("cases", "regressions_before", "regressions_after", "fixed", "retimed", "failed_before", "failed_after")
    rows, total = [], [0] * len(keys)
    for k in data["kernels"]:
        vals = [k.get(key) for key in keys]
        total = [a + b if a is not None and b is not None else None for a, b in zip(total, vals)]
        rows.append(_kernel_row(k["kernel"], vals, k.get("why", "")))
    rows.append(_kernel_row("all", total, ""))
    return KERNEL_COLUMNS, rows


def _kernel_row(name: str, v: list[int | None], why: str) -> list[Any]:
    n, before, after, fixed, retimed, fb, fa = (("—" if x is None else x) for x in v)
    return [name, n, f"{before} / {n} → {after} / {n}", fixed, retimed, f"{fb} → {fa}", why]


CASE_COLUMNS = ["case", "golden old µs", "TOT old µs", "golden new µs", "TOT new µs", "verdict", "why"]


def _case_rows(cases: list[dict[str, Any]]) -> list[list[Any]]:
    keys = ("case", "golden_old", "tot_old", "golden_new", "tot_new", "verdict", "why")
    return [[c.get(k) for k in keys] for c in cases]


SLOT_COLUMNS = ["slot", "regressed cases", "search path", "configs timed", "outcome", "why"]


def slot_rows(data: dict[str, Any]) -> list[list[Any]]:
    """Per slot: its regressed cases, the moves the search took, how many configs it timed, outcome and why."""
    rows = []
    for s in data["slots"]:
        path = "; ".join(_move(m) for m in s["moves"]) or "stayed at the seed"
        cases = ", ".join(c.split("/", 1)[-1] for c in s["targets"])
        timed = f"{s['searched']} ({s['hints']} hinted)" if s.get("hints") else s["searched"]
        rows.append([s["slot"], cases, path, timed, s["outcome"] or "undecided", s["why"]])
    return rows


def _move(m: dict[str, Any]) -> str:
    return f"{m['change']} (" + ("a hint" if m["level"] == 0 else f"level {m['level']}") + ")"


def cost_line(cost: dict[str, Any], budget: float) -> str:
    failed = ", ".join(f"{n} {s}" for s, n in sorted(cost["failed"].items())) or "none"
    phases = ", ".join(f"{p} {m:.2f}" for p, m in cost["minutes"].items()) or "none"
    return (
        f"{cost['configs_searched']} configs searched ({cost['pruned']} more pruned before compiling); "
        f"{cost['compiled']} case × config × stack compiled, {cost['timed']} timed, failed: {failed}; "
        f"{cost['from_cache']} timings from the cache; {cost['runs']} runs; "
        f"measuring minutes: {phases} (total {cost['total_min']:.2f} of a {budget:g}-minute budget)"
    )


def asked_line(data: dict[str, Any]) -> str:
    """What was asked, what was done, and why the two differ."""
    a = data.get("asked")
    if not a:
        return ""
    kernels = "every kernel" if a["kernels"] == "all" else "--kernel " + ", ".join(a["kernels"])
    kept = len(data["kept"])
    line = (f"Asked: the {a['targets']} regressions and TOT failures of {kernels}. Searched {a['searched']} in "
            f"{a['slots']} slots; {kept} change{'s' * (kept != 1)} kept.")  # fmt: skip
    if a["left_alone"]:
        line += f" Left alone: {a['left_alone']} (no config files to change, or none resolves them: see below)."
    return line


def header_lines(data: dict[str, Any]) -> list[str]:
    where = "proposed in" if data["dry_run"] else "written in place to"
    asked = asked_line(data)
    return [
        *([asked] if asked else []),
        f"TOT Triton {data['tot']['triton']} (env {data['tot']['env']}) against golden Triton "
        f"{data['golden']['triton']} (env {data['golden']['env']}), {data['gpu']} ({data['arch']}); "
        f"COMPARE {data['compare']}",
        f"Rule: {data['rule']}.",
        f"{len(data['files'])} config files {where} {data['written_to']}"
        + (f": {', '.join(data['files'])}" if data["files"] else "")
        + "; the diff is retune.diff.",
    ]


def render_markdown(data: dict[str, Any]) -> str:
    out = ["# harness retune", "", *[f"{line}  " for line in header_lines(data)], ""]
    cols, rows = kernel_rows(data)
    out += ["## Before → after, per kernel", "", _md_table(cols, rows), f"_{AFTER_NOTE}._", ""]
    out += [f"## Kept changes ({len(data['kept'])})", ""]
    for c in data["kept"]:
        out += [f"### {c['file']}:{c['bucket']} ({c['kind']})", "", f"{c['change']}: {c['why']}.", ""]
        out += [_md_table(CASE_COLUMNS, _case_rows(c["cases"])), ""]
    out += ["## Slots: what was searched and what became of it", "", _md_table(SLOT_COLUMNS, slot_rows(data)), ""]
    out += [f"## Rejected changes ({len(data['rejected'])})", ""]
    rej = [[r["slot"], r["stage"], _config_text(r.get("config")), r["why"]] for r in data["rejected"]]
    out += [_md_table(["slot", "stage", "config", "why"], rej), ""] if rej else ["None.", ""]
    out += [f"## Regressions and TOT failures left ({len(data['left'])})", ""]
    left = [[x["case"], x["verdict"], x["delta_pct"], x["why"]] for x in data["left"]]
    out += [_md_table(["case", "verdict", "Δ% in COMPARE", "why"], left), ""] if left else ["None.", ""]
    out += ["## Search cost", "", cost_line(data["cost"], data["budget_min"]) + ".", ""]
    if data["notes"]:
        out += ["## Notes", "", *[f"- {n}" for n in data["notes"]], ""]
    return "\n".join(out)


def _config_text(cfg: Any) -> str:
    return json.dumps(cfg) if cfg else "—"


def html_section(data: dict[str, Any]) -> str:
    """The report as an HTML fragment (sortable tables; the report page's CSS classes)."""
    parts = ["".join(f"<p>{html.escape(line)}</p>" for line in header_lines(data))]
    cols, rows = kernel_rows(data)
    parts += [
        "<h3>Before → after, per kernel</h3>",
        html_table(pd.DataFrame(rows, columns=cols), cls="sortable"),
        f'<p class="note">{html.escape(AFTER_NOTE)}.</p>',
        f"<h3>Kept changes ({len(data['kept'])})</h3>",
    ]
    for c in data["kept"]:
        parts.append(
            f"<h4>{html.escape(c['file'])}:{html.escape(c['bucket'])} ({html.escape(c['kind'])})</h4>"
            f"<p>{html.escape(c['change'])}: {html.escape(c['why'])}.</p>"
            + html_table(pd.DataFrame(_case_rows(c["cases"]), columns=CASE_COLUMNS), row_class=None)
        )
    parts.append("<h3>Slots: what was searched and what became of it</h3>")
    parts.append(html_table(pd.DataFrame(slot_rows(data), columns=SLOT_COLUMNS)))
    rej = [[r["slot"], r["stage"], _config_text(r.get("config")), r["why"]] for r in data["rejected"]]
    parts.append(f"<h3>Rejected changes ({len(rej)})</h3>")
    parts.append(html_table(pd.DataFrame(rej, columns=["slot", "stage", "config", "why"])) if rej else "<p>None.</p>")
    left = [[x["case"], x["verdict"], x["delta_pct"], x["why"]] for x in data["left"]]
    parts.append(f"<h3>Regressions and TOT failures left ({len(left)})</h3>")
    cols = ["case", "verdict", "Δ% in COMPARE", "why"]
    parts.append(html_table(pd.DataFrame(left, columns=cols)) if left else "<p>None.</p>")
    parts += ["<h3>Search cost</h3>", f"<p>{html.escape(cost_line(data['cost'], data['budget_min']))}.</p>"]
    if data["notes"]:
        parts.append("<h3>Notes</h3><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in data["notes"]) + "</ul>")
    return "\n".join(parts)


def render_html(data: dict[str, Any]) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>harness retune</title>'
        f"<style>{CSS}</style></head><body><h1>harness retune</h1>{html_section(data)}"
        f"<script>{JS}</script></body></html>"
    )


def write_reports(data: dict[str, Any], out: Path) -> dict[str, Path]:
    paths = {"json": out / "retune.json", "md": out / "retune.md", "html": out / "retune.html"}
    write_text(paths["json"], json.dumps(data, indent=1, default=str) + "\n")
    write_text(paths["md"], render_markdown(data))
    write_text(paths["html"], render_html(data))
    return paths


def load_summary(path: Path) -> dict[str, Any]:
    """A retune.json (for `harness report --retune`)."""
    from harness.errors import HarnessError

    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise HarnessError(f"{path}: not a retune.json: {err}") from None
    if not isinstance(data, dict) or "kernels" not in data or "kept" not in data:
        raise HarnessError(f"{path}: not a retune.json (written by `harness retune`)")
    return data
