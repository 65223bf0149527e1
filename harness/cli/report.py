"""`harness report`: the HTML report of results, a comparison, history and a retune."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def report(
    results: Annotated[list[Path] | None, typer.Argument(help="results CSVs (each with its .env.json)")] = None,
    out: Annotated[Path, typer.Option("--out", help="folder for index.html and the PNGs")] = Path("reports/latest"),
    compare_csv: Annotated[
        Path | None, typer.Option("--compare", help="compare.csv: adds the delta plot and verdict table")
    ] = None,
    vendor: Annotated[
        Path | None, typer.Option(help="vendor baseline (benchmarks/vendor_baseline.py's .md table or a CSV)")
    ] = None,
    ceilings: Annotated[
        Path | None, typer.Option(help="YAML of measured ceilings replacing datasheet peaks, e.g. {bf16: 800}")
    ] = None,
    explain: Annotated[str, typer.Option(help="link to `harness explain` output, shown with the verdicts")] = "",
    title: Annotated[str, typer.Option(help="page title")] = "",
    history: Annotated[
        str | None, typer.Option("--history", help="history database (harness history): trends, change points")
    ] = None,
    retune: Annotated[
        Path | None, typer.Option("--retune", help="OUT/retune.json of `harness retune`: adds its section")
    ] = None,
) -> None:
    """HTML report: delta plot, roofline, TFLOPS-by-config scatter, per-dispatch split, sortable tables."""
    from harness.report.report import write_report

    index = write_report(
        list(results or []), out, compare_csv, vendor, ceilings, explain, title, history=history, retune=retune
    )
    print(f"wrote {index}")
