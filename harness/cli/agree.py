"""`harness agree A B`: do two comparisons of one suite (two machines, two runner pools, two days) reach the same
confident verdicts?"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.options import CompareCsv


def agree(
    a: CompareCsv,
    b: Annotated[Path, typer.Argument(help="the other compare.csv, of the same suite")],
    any_config: Annotated[
        bool,
        typer.Option("--any-config", help="also compare cases run with other configs in A and B"),
    ] = False,
    fail_on_flip: Annotated[
        bool,
        typer.Option(
            "--fail-on-flip",
            help="exit 1 on an opposite flip (a regression in one, an improvement in the other, both confident)",
        ),
    ] = False,
    min_agree: Annotated[
        float | None,
        typer.Option(
            "--min-agree",
            min=0.0,
            max=100.0,
            help="exit 1 when fewer than this % of the verdicts confident in both agree",
        ),
    ] = None,
) -> None:
    """Do two comparisons (two machines, pools or days) reach the same confident verdicts?"""
    from harness.compare.agreement import agree as agree_files

    if agree_files(a, b, any_config=any_config, fail_on_flip=fail_on_flip, min_agree=min_agree, echo=print):
        raise typer.Exit(1)
