"""`harness compare GOLDEN TOT`: the verdict table, its gates and where it is written."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from harness import process
from harness.cli.options import ExistingFile, RuleAbsUs, RuleMinGoldenUs, RuleRel
from harness.errors import HarnessError
from harness.verdict.defaults import ABS_US, MIN_GOLDEN_US, REL

if TYPE_CHECKING:
    from harness.compare.compare import Comparison


def compare(
    golden: ExistingFile,
    tot: ExistingFile,
    out: Annotated[Path | None, typer.Option("--out", help="write the verdict table as CSV")] = None,
    markdown: Annotated[Path | None, typer.Option("--markdown", help="write a PR-comment-ready markdown file")] = None,
    rel: RuleRel = REL,
    abs_us: RuleAbsUs = ABS_US,
    min_golden_us: RuleMinGoldenUs = MIN_GOLDEN_US,
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
            "and its flags are ambiguous (default: the one a sidecar records, from harness run --calibration)",
        ),
    ] = None,
    no_calibration: Annotated[
        bool, typer.Option("--no-calibration", help="ignore the calibration the sidecars record")
    ] = False,
    aa: Annotated[
        Path | None,
        typer.Option(
            "--aa",
            metavar="GOLDEN_AA",
            help="golden's stack measured again in the same run (harness run ... --with-env GOLDEN --with-out "
            "GOLDEN_AA): its deltas against GOLDEN estimate each kernel's process-to-process noise, which widens "
            "every interval (docs/verdicts.md); the verdicts stay the rule's",
        ),
    ] = None,
) -> None:
    """Compare GOLDEN and TOT results: ignore golden < 4 µs; regression iff tot > 1.005 × golden + 0.5 µs.
    Exit 2 when nothing could be compared (no case timed under both stacks)."""
    process.quiet_numpy()  # before numpy is imported (rule_of)
    from concurrent.futures import ThreadPoolExecutor

    from harness.compare.paths import meta_path
    from harness.fsutil import Output, guard_outputs, write_text
    from harness.results.arrowcsv import prefetch
    from harness.results.schema import sidecar_path
    from harness.verdict.rule import rule_of

    if unstable not in ("compare", "fail"):
        raise HarnessError(f"--unstable: expected 'compare' or 'fail', got {unstable!r}")
    rule = rule_of(rel, abs_us, min_golden_us)
    inputs = [golden, tot, *([aa] if aa else [])]
    guard_outputs(
        [
            Output("--out", out, _comparison, "a comparison (harness compare's CSV)"),
            Output("--out's .meta.json", meta_path(out) if out else None, _compare_meta, "a comparison's .meta.json"),
            Output("--markdown", markdown, _compare_markdown, "harness compare's markdown"),
        ],
        [*inputs, *map(sidecar_path, inputs)],
    )
    if record:
        from harness.history.record import check_record

        check_record([out, markdown])
    if calibration is not None and no_calibration:
        raise HarnessError("--calibration and --no-calibration: give one")
    if calibration is not None:  # a bad file is one line before anything is compared
        from harness.compare.calibration import load_calibration

        load_calibration(calibration)
    process.arrow_allocator()
    prefetch(golden, tot)  # Arrow reads both files while pandas and the compare stage are imported
    with process.imports_kept():
        from harness.compare.compare import compare_files
        from harness.compare.store import write_compare
        from harness.render.terminal import print_comparison, warn

    cmp = compare_files(golden, tot, rule, unstable=unstable, aa=aa)
    _calibrate(cmp, calibration, not no_calibration)
    for w in cmp.warnings:
        warn(w)
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


def _calibrate(cmp: Comparison, explicit: Path | None, recorded: bool) -> None:
    """Judge ``cmp`` with --calibration FILE, else with the calibration its sidecars record (unless
    --no-calibration); the output's ``calibration`` line and the metadata say which."""
    from harness.compare.calibration import calibrate_comparison, pick_calibration

    picked = pick_calibration(cmp, explicit, recorded)
    if picked is not None:
        calibrate_comparison(cmp, *picked)


# which existing file each output of compare may replace: the one compare wrote there (fsutil.guard_outputs)
def _comparison(path: Path) -> bool:
    from harness.history.record import kind_of

    return kind_of(path) == "compare"


def _compare_markdown(path: Path) -> bool:
    from harness.render.vocabulary import MARKDOWN_MARKER

    with path.open("rb") as f:
        return f.readline().startswith(MARKDOWN_MARKER.encode())


def _compare_meta(path: Path) -> bool:
    """Whether ``path`` is the .meta.json `harness compare --out` writes beside its CSV (it counts the verdicts)."""
    from harness.fsutil import json_object

    meta = json_object(path)
    return meta is not None and isinstance(meta.get("counts"), dict)
