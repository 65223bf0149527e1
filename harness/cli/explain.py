"""`harness explain`: the compiled kernels of regressed cases, diffed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.options import CompareCsv


def explain(
    compare_csv: CompareCsv,
    out: Annotated[Path, typer.Option("--out", help="folder for index.md / index.html and one page per case")],
    case: Annotated[
        list[str] | None, typer.Option("--case", help="regex over 'kernel/case_id' (repeatable); default: regressions")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, help="at most this many cases, worst first")] = 20,
    golden_artifacts: Annotated[
        Path | None, typer.Option(help="golden artifacts folder (default: beside the golden results file)")
    ] = None,
    tot_artifacts: Annotated[Path | None, typer.Option(help="TOT artifacts folder (default: beside TOT's)")] = None,
) -> None:
    """Diff the compiled kernels (resources, instruction mix, TTGIR, assembly) of regressed cases."""
    from harness.compare.store import meta_path
    from harness.explain.explain import explain_comparison
    from harness.explain.pages import write_explain
    from harness.outdir import prepare_out_dir

    inputs = [compare_csv, meta_path(compare_csv), golden_artifacts, tot_artifacts]
    prepare_out_dir("--out", out, "explain", inputs=inputs, own=("index.md",), create=False)
    cases, labels = explain_comparison(compare_csv, case, golden_artifacts, tot_artifacts, limit)
    prepare_out_dir("--out", out, "explain", inputs=inputs, own=("index.md",))
    index = write_explain(cases, out, labels=labels)
    print(f"explained {len(cases)} cases: {index} ({index.with_suffix('.html')})")
    left = cases[0].left_out if cases else 0
    if left:  # never a silent cut
        from harness.errors import counted

        print(f"{counted(left, 'more case')} matched and not explained: raise --limit (now {limit})")
