"""PR-comment markdown for a comparison: summary first, regressions and TOT failures next, the rest folded.

The first line is a hidden marker so a bot can find and update its one comment per pull request.
GitHub rejects comments over 65,536 characters; the renderer drops table rows (never the summary) to fit
and says so, pointing at the full artifact.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import pandas as pd

from harness.compare.aa import process_lines
from harness.compare.calibration import calibration_line
from harness.compare.compare import Comparison, worst_first
from harness.errors import counted
from harness.render.envinfo import side_by_side
from harness.render.vocabulary import MARKDOWN_MARKER as MARKER
from harness.render.vocabulary import regressions, unknown_line
from harness.verdict.rule import ATTENTION, BLOCKING

GITHUB_LIMIT = 65_536
#: columns of the case tables besides kernel, case and the times: the case id already names the parameters
SHAPE = ("dtype",)


def _cell(v: object, spec: str = "") -> str:
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return ""
    s = format(v, spec) if spec else str(v)
    return s.replace("|", "\\|").replace("\n", " ")


def _header(df: pd.DataFrame, with_note: bool) -> str:
    shape = [c for c in SHAPE if c in df.columns]
    cols = ["kernel", "case_id", *shape, "golden µs", "TOT µs", "Δ%", "95 % interval", "limit µs", "verdict"]
    if with_note:
        cols.append("note")
    return "| " + " | ".join(cols) + " |\n|" + "|".join("---" for _ in cols) + "|\n"


def _ordered(df: pd.DataFrame, chunk: int = 256) -> Iterator[tuple]:
    """Rows worst first, taken a chunk at a time: a million-case table renders only the rows that fit."""
    order = worst_first(df)
    for start in range(0, len(order), chunk):
        yield from df.iloc[order[start : start + chunk]].itertuples(index=False)


def _rows(df: pd.DataFrame, with_note: bool) -> Iterator[str]:
    """Table rows, made lazily, worst first."""
    shape = [c for c in SHAPE if c in df.columns]
    for r in _ordered(df):
        d = r._asdict()
        verdict = d["verdict"]
        cells = [
            _cell(d["kernel"]),
            _cell(d["case_id"]),
            *[_cell(d[c]) for c in shape],
            _cell(d["golden_us"], ".2f"),
            _cell(d["tot_us"], ".2f"),
            _cell(d["delta_pct"], "+.1f"),
            _interval(d.get("delta_lo_pct"), d.get("delta_hi_pct")),
            _cell(d["limit_us"], ".2f"),
            _verdict_cell(verdict, d.get("confidence")),
        ]
        if with_note:
            cells.append(_cell(d.get("note", ""))[:160])
        yield "| " + " | ".join(cells) + " |\n"


def _interval(lo: object, hi: object) -> str:
    """The 95 % interval of Δ% (verdict/confidence.py), '' without one."""
    if not isinstance(lo, float) or not isinstance(hi, float) or pd.isna(lo) or pd.isna(hi):
        return ""
    return f"{lo:+.1f} … {hi:+.1f}"


def _verdict_cell(verdict: str, confidence: object) -> str:
    text = f"**{verdict}**" if verdict in BLOCKING else verdict
    return f"{text} (ambiguous)" if confidence == "ambiguous" else text


def _skip_lines(counts: dict[str, int]) -> list[str]:
    """Skips under the status line: a stack declined those cases (unsupported there). Not failures, and not
    blocking, but a case TOT no longer supports is a loss a reviewer should see."""
    lines = []
    if counts["skipped_in_tot"]:
        lines.append(
            f"⚠️ {counts['skipped_in_tot']} cases skipped under TOT (timed under golden, unsupported under TOT; "
            "not blocking).  \n"
        )
    other = counts["skipped_in_golden"] + counts["skipped_in_both"]
    if other:
        lines.append(f"{other} cases skipped under golden (unsupported there; not failures).  \n")
    return lines


def render_markdown(
    cmp: Comparison,
    *,
    limit: int = GITHUB_LIMIT,
    artifact: str = "the compare.csv artifact",
    title: str = "Kernel performance: golden vs TOT",
    explain_url: str = "",
) -> str:
    out = _summary(cmp, title, explain_url)
    body, dropped = _fit(_sections(cmp), limit - len(out) - 400)  # 400: room for the truncation notes
    out += body
    if dropped:
        out += (
            f"\n> ⚠️ Truncated to fit GitHub's {limit:,}-character comment limit: {dropped} table rows "
            f"are not shown. The full table is in {artifact}.\n"
        )
    if len(out) > limit:
        raise AssertionError("markdown renderer exceeded its own limit")  # our bug, not the user's
    return out


def _summary(cmp: Comparison, title: str, explain_url: str) -> str:
    """The part always shown whole: headline, rule, warnings, environments, verdict counts."""
    counts = cmp.counts()
    reg, fail = counts["regression"], counts["failed_in_tot"]
    amb = cmp.ambiguous_counts()
    mark = "❌" if cmp.blocking else "⚠️"  # every regression ambiguous: --fail-on-regression passes
    status = (
        "✅ no regressions"
        if reg + fail == 0
        else f"{mark} {regressions(reg, amb.get('regression', 0))}, {counted(fail, 'TOT failure')}"
    )
    headline = f"**{status}** across {len(cmp.table)} cases.  \n"
    if amb:
        headline += (f"{sum(amb.values())} verdicts are ambiguous: their 95 % interval straddles the rule's limit "
                     "(measure again to decide them; `--fail-on-ambiguous` fails on those that may regress).  \n")  # fmt: skip
    if cmp.unknown:
        headline += f"{unknown_line(cmp.unknown)}.  \n"
    if cmp.nothing_compared:  # no case was judged: "no regressions" would be a silent wrong answer
        headline = f"**⚠️ {cmp.nothing_compared[0].upper()}{cmp.nothing_compared[1:]}.**  \n"
    parts = [MARKER + "\n", f"## {title}\n\n", headline, *_skip_lines(counts), f"Rule: {cmp.rule.describe()}.\n\n"]
    if cmp.calibration:
        parts.append(f"Calibration: {calibration_line(cmp.calibration, len(cmp.table))}.\n\n")
    parts += _process_noise(cmp.process_noise)
    # every warning the terminal shows: a PR's readers see what the two files differ in, not only the verdicts
    shown = dict.fromkeys(w for w in (cmp.same_triton, cmp.other_gpu, *cmp.warnings) if w)
    parts += [f"> ⚠️ **Warning:** {w}\n\n" for w in shown]
    if explain_url:
        parts.append(f"Why each regression happened (compiled-kernel diffs): {explain_url}\n\n")
    env_rows = side_by_side(cmp.golden_env, cmp.tot_env)
    if env_rows:
        parts.append("| | golden | TOT |\n|---|---|---|\n")
        parts += [f"| {label} | {_cell(g)} | {_cell(tv)} |\n" for label, g, tv in env_rows]
        parts.append("\n")
    parts.append("| verdict | cases |\n|---|---:|\n")
    parts += [f"| {v} | {n} |\n" for v, n in counts.items() if n]
    parts.append("\n")
    return "".join(parts)


class _Section(NamedTuple):
    opening: str
    header: str
    rows: Iterator[str]
    nrows: int
    closing: str


def _sections(cmp: Comparison) -> list[_Section]:
    """The tables, most urgent first: what needs attention, then per kernel, then everything else."""
    t = cmp.table
    sections = []
    top = t[t["verdict"].isin(ATTENTION)]
    lost = ", cases missing or skipped in TOT" if (~top["verdict"].isin(BLOCKING)).any() else ""
    if len(top):
        opening = f"### Regressions and TOT failures{lost} ({len(top)}, worst first)\n\n"
        sections.append(_Section(opening, _header(top, True), _rows(top, True), len(top), "\n"))
    pk = cmp.per_kernel()
    if len(pk):
        cols = list(pk.columns)
        head = "| kernel | " + " | ".join(cols) + " |\n|---|" + "|".join("---:" for _ in cols) + "|\n"
        krows = ["| " + str(k) + " | " + " | ".join(str(int(x)) for x in r) + " |\n" for k, r in pk.iterrows()]
        opening = "<details><summary>Per kernel</summary>\n\n"
        sections.append(_Section(opening, head, iter(krows), len(krows), "\n</details>\n\n"))
    rest = t[~t.index.isin(top.index)]
    if len(rest):
        opening = f"<details><summary>All other cases ({len(rest)})</summary>\n\n"
        sections.append(_Section(opening, _header(rest, True), _rows(rest, True), len(rest), "\n</details>\n"))
    return sections


def _fit(sections: list[_Section], budget: int) -> tuple[str, int]:
    """As many rows of each section as fit in `budget` characters, in order; returns (text, rows dropped)."""
    out, dropped = "", 0
    for s in sections:
        fixed = len(s.opening) + len(s.header) + len(s.closing) + 80
        if budget < fixed + 200:
            dropped += s.nrows
            continue
        kept: list[str] = []
        used = fixed
        for r in s.rows:
            if used + len(r) > budget:
                break
            kept.append(r)
            used += len(r)
        body = "".join(kept)
        if len(kept) < s.nrows:
            dropped += s.nrows - len(kept)
            body += f"\n*… {s.nrows - len(kept)} more rows not shown.*\n"
        out += s.opening + s.header + body + s.closing
        budget -= used
    return out, dropped


def _process_noise(record: dict) -> list[str]:
    """The A/A's lines (compare/aa.py: process_lines) as a sentence and a list; none without an A/A."""
    lines = process_lines(record)
    if not lines:
        return []
    head = lines[0][0].upper() + lines[0][1:]
    return [f"{head}\n\n", *(f"- {line.strip()}\n" for line in lines[1:]), "\n"]
