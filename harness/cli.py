"""The `harness` command line: a thin layer over plain functions in the stage modules.

Exit codes: 0 done; 1 `--fail-on-regression` found a regression or a TOT failure (or `run` had failing
cases with `--fail-on-error`); 2 bad input (one line on stderr, never a traceback).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from harness.errors import HarnessError

app = typer.Typer(
    name="harness",
    help="Regression tracking for GPU kernels across Triton compiler stacks (golden vs top-of-tree).",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,  # locals may hold credentials
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """Regression tracking for GPU kernels across Triton compiler stacks (golden vs top-of-tree)."""


ExistingFile = Annotated[Path, typer.Argument(help="a results CSV (see docs/results-format.md)")]


@app.command()
def compare(
    golden: ExistingFile,
    tot: ExistingFile,
    out: Annotated[Path | None, typer.Option("--out", help="write the verdict table as CSV")] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="write a PR-comment-ready markdown file")] = None,
    rel: Annotated[float, typer.Option(help="relative factor of the rule")] = 1.005,
    abs_us: Annotated[float, typer.Option("--abs-us", help="absolute slack of the rule, µs")] = 0.5,
    min_golden_us: Annotated[float, typer.Option("--min-golden-us", help="ignore cases faster than this")] = 4.0,
    unstable: Annotated[
        str,
        typer.Option(
            help="'compare': unstable rows are compared by their median time; "
            "'fail': an unstable row counts as a failure"
        ),
    ] = "compare",
    fail_on_regression: Annotated[
        bool, typer.Option("--fail-on-regression", help="exit 1 on any regression or TOT failure")
    ] = False,
    worst: Annotated[int, typer.Option(help="rows in the terminal's worst-cases table")] = 20,
) -> None:
    """Compare GOLDEN and TOT results: ignore golden < 4 µs; regression iff tot > 1.005 × golden + 0.5 µs."""
    from harness.compare import compare_files, write_compare
    from harness.markdown import render_markdown
    from harness.rule import Rule
    from harness.terminal import print_comparison, stderr

    if unstable not in ("compare", "fail"):
        raise HarnessError(f"--unstable: expected 'compare' or 'fail', got {unstable!r}")
    try:
        rule = Rule(rel=rel, abs_us=abs_us, min_golden_us=min_golden_us)
    except ValueError as err:
        raise HarnessError(str(err)) from None
    cmp = compare_files(golden, tot, rule, unstable=unstable)
    for w in cmp.warnings:
        stderr().print(f"[yellow]warning:[/] {w}")
    print_comparison(cmp, worst=worst)
    if out:
        write_compare(cmp, out)
    if markdown:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(render_markdown(cmp, artifact=str(out) if out else "the compare CSV"), encoding="utf-8")
    if fail_on_regression and cmp.blocking:
        raise typer.Exit(1)


def main() -> None:
    try:
        rc = app(standalone_mode=False)  # click returns Exit's code instead of raising it here
    except HarnessError as err:
        print(f"harness: error: {err}", file=sys.stderr)
        sys.exit(err.exit_code)
    except typer.Exit as ex:
        sys.exit(ex.exit_code)
    except typer.Abort:
        print("harness: aborted", file=sys.stderr)
        sys.exit(130)
    except KeyboardInterrupt:
        print("harness: interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as err:  # click usage errors arrive here with standalone_mode=False
        import click

        if isinstance(err, click.ClickException):
            err.show()
            sys.exit(2)
        raise
    sys.exit(rc if isinstance(rc, int) else 0)


if __name__ == "__main__":
    main()
