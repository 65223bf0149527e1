"""`harness merge`: the parts of one environment's results (shards, --gpus parts) in one file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.errors import HarnessError


def merge(
    parts: Annotated[list[Path], typer.Argument(help="results CSVs of one env: shards, or the parts of --gpus")],
    out: Annotated[Path, typer.Option("--out", help="the merged results CSV")],
    suite: Annotated[
        Path | None, typer.Option("--suite", help="check that every case of this suite is in exactly one part")
    ] = None,
) -> None:
    """Merge the parts of one environment's results (CI shards, Slurm tasks) into one file: parts measured with
    another stack, method or GPU model are refused, naming the field; overlapping or missing cases too."""
    from harness.run.merge import merge_results

    for p in parts:
        if not p.is_file():
            raise HarnessError(
                f"{p}: " + ("is a directory, expected a results CSV file" if p.is_dir() else "no such file")
            )
    counts = merge_results(list(parts), out, suite)
    print(f"{out}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f" ({len(parts)} parts)")
