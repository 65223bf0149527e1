"""`harness compare GOLDEN TOT`: the verdict table, its gates and where it is written."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.options import ExistingFile
from harness.errors import HarnessError


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
        bool,
        typer.Option(
            "--fail-on-regression",
            help="exit 1 on a confident regression or a TOT failure (exit 2 if golden and TOT ran the same "
            "Triton); an ambiguous one (its 95 % interval straddles the limit) does not fail",
        ),
    ] = False,
    fail_on_ambiguous: Annotated[
        bool,
        typer.Option(
            "--fail-on-ambiguous",
            help="stricter: exit 1 also on an ambiguous regression, or an ambiguous ok that may be one",
        ),
    ] = False,
    require_same_gpu: Annotated[
        bool,
        typer.Option(
            "--require-same-gpu",
            help="exit 2 when the sidecars name different GPUs or hosts (a warning otherwise): for CI",
        ),
    ] = False,
    worst: Annotated[int, typer.Option(min=1, help="rows in the terminal's worst-cases table")] = 20,
    record: Annotated[
        bool,
        typer.Option(
            "--record",
            help="add it to the history ($HARNESS_DB): docs/history.md",
        ),
    ] = False,
    calibration: Annotated[
        Path | None,
        typer.Option(
            "--calibration",
            help="harness calibrate's calibration.csv: a case that cannot resolve the rule's slack says so, "
            "and its flags are ambiguous",
        ),
    ] = None,
) -> None:
    """Compare GOLDEN and TOT results: ignore golden < 4 µs; regression iff tot > 1.005 × golden + 0.5 µs.
    Exit 2 when nothing could be compared (no case timed under both stacks)."""
    from concurrent.futures import ThreadPoolExecutor

    from harness.compare.compare import compare_files
    from harness.compare.rule import Rule
    from harness.compare.store import meta_path, write_compare
    from harness.fsutil import check_writable, refuse_overwrite, write_text
    from harness.render.terminal import print_comparison, stderr
    from harness.results.schema import sidecar_path

    if unstable not in ("compare", "fail"):
        raise HarnessError(f"--unstable: expected 'compare' or 'fail', got {unstable!r}")
    try:
        rule = Rule(rel=rel, abs_us=abs_us, min_golden_us=min_golden_us)
    except ValueError as err:
        raise HarnessError(str(err)) from None
    outputs = {"--out": out, "--out's .meta.json": meta_path(out) if out else None, "--markdown": markdown}
    refuse_overwrite(outputs, [golden, tot, sidecar_path(golden), sidecar_path(tot)])
    if out and markdown:
        refuse_overwrite({"--markdown": markdown}, [out, meta_path(out)])
    for option, path in outputs.items():
        if path is not None:
            check_writable(option, path)
    if record:
        from harness.history.record import check_record

        check_record([out, markdown])
    cal = None
    if calibration is not None:
        from harness.compare.calibration import load_calibration

        cal = load_calibration(calibration)
    _arrow_allocator()
    cmp = compare_files(golden, tot, rule, unstable=unstable)
    if cal is not None:
        from harness.compare.calibration import calibrate_comparison

        calibrate_comparison(cmp, *cal, str(calibration))
    for w in cmp.warnings:
        stderr().print(f"[yellow]warning:[/] {w}")
    with ThreadPoolExecutor(1) as pool:  # Arrow formats the CSV without the GIL while rich lays out the summary
        written = pool.submit(write_compare, cmp, out) if out else None
        print_comparison(cmp, worst=worst)
        if written is not None:
            written.result()
    if markdown:
        from harness.render.markdown import render_markdown

        write_text(markdown, render_markdown(cmp, artifact=str(out) if out else "the compare CSV"))
    if record:
        from harness.history.record import record_compare

        record_compare(cmp, out)
    if cmp.nothing_compared:
        raise HarnessError(f"{golden} vs {tot}: {cmp.nothing_compared}")
    if require_same_gpu and cmp.other_gpu:
        raise HarnessError(f"--require-same-gpu: {cmp.other_gpu}")
    gate = "--fail-on-ambiguous" if fail_on_ambiguous else "--fail-on-regression" if fail_on_regression else ""
    if gate and cmp.same_triton:
        raise HarnessError(f"{gate}: {cmp.same_triton}")
    if (fail_on_regression and cmp.blocking) or (fail_on_ambiguous and cmp.strict_blocking):
        raise typer.Exit(1)


def _arrow_allocator() -> None:
    """Arrow's jemalloc rather than its default mimalloc, unless ARROW_DEFAULT_MEMORY_POOL names one: mimalloc asks
    the kernel for huge pages, and on a busy machine their faults cost 1-3 s of system time per comparison of two
    million-row files, 3-4x jemalloc's (benchmarks/README.md). A pyarrow built without jemalloc keeps its own."""
    import contextlib
    import os

    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    import pyarrow as pa

    with contextlib.suppress(NotImplementedError):
        pa.set_memory_pool(pa.jemalloc_memory_pool())
