"""explain's pages: one markdown (and HTML) page per explained case, its likely cause first, and the index with the
share of regressions per cause. Rendering only: the figures come from explain.py."""

from __future__ import annotations

import html
import re
from pathlib import Path

from harness.explain.causes import WORDS, shares
from harness.explain.explain import CaseExplain, Kernel, KernelDiff, folder_labels, headline, launched_with
from harness.render.mdtable import md_table
from harness.render.vocabulary import STACKS


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
        if kd.ran and kd.ran != "ran":
            parts.append(f"*{ran_text(kd, g, t)}*\n\n")
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


def ran_text(kd: KernelDiff, g: str, t: str) -> str:
    """What a pair of an op that chose among candidates is (explain.pair_kernels), with the arguments each
    kernel was launched with."""
    what = {
        "each": f"what each stack ran: {g} and {t} chose other configs",
        "same": f"what each stack ran: {g} and {t} chose the same config",
        "tot": f"the config {t} ran, compiled by both",
        "golden": f"the config {g} ran, compiled by both",
    }[kd.ran]
    args = [f"{label} {_args(k)}" for label, k in ((g, kd.golden), (t, kd.tot)) if k is not None and _args(k)]
    return what + (f" ({'; '.join(args)})" if args else "")


def _args(k: Kernel) -> str:
    launch = launched_with(k)
    return ", ".join(f"{key} {value}" for key, value in sorted(launch.items()) if not isinstance(value, str))
