"""`harness bisect`: the first Triton release at which each regressed case got slower."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.options import AutoLaunches, CaseTimeout, CompareCsv, Reps


def bisect(
    compare_csv: CompareCsv,
    versions: Annotated[
        str,
        typer.Option(
            "--versions",
            help="the releases between golden and TOT, in order, comma-separated (3.7.0,3.7.1,3.8.0); an item may "
            "be an env spec file instead",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", help="folder for bisect.md, the CSVs, the plot and the runs")],
    case: Annotated[
        list[str] | None,
        typer.Option("--case", help="regex over 'kernel/case_id' (repeatable); default: regressions, TOT failures"),
    ] = None,
    suite: Annotated[str | None, typer.Option(help="the suite (default: the one the golden run measured)")] = None,
    golden: Annotated[str | None, typer.Option(help="golden's env spec (default: the one golden ran)")] = None,
    tot: Annotated[
        str | None,
        typer.Option(help="TOT's env spec to measure it again, or 'none' (default: the one TOT ran, if it is here)"),
    ] = None,
    mode: Annotated[
        str, typer.Option(help="how a release gets its env: venv (installs, online) or overlay (harness env unpack)")
    ] = "venv",
    artifacts: Annotated[
        bool, typer.Option("--artifacts", help="keep the compiled kernels and explain each culprit step")
    ] = False,
    reps: Reps = 3,
    launches: AutoLaunches = None,
    timeout: CaseTimeout = 600.0,
    remeasure: Annotated[int, typer.Option(min=0, help="rounds that measure noisy pairs again")] = 2,
    resume: Annotated[
        bool, typer.Option("--resume", help="go on with an interrupted bisection in OUT (same options)")
    ] = False,
) -> None:
    """For every regressed case of COMPARE at once, the first Triton release at which it is slower than golden
    (good / bad / noisy per release, non-monotonic histories as such), the compiled kernels at each culprit step
    and the Triton git range of each step."""
    from harness.bisect.bisect import bisect as run_bisect
    from harness.render.progress import console_driver
    from harness.render.terminal import stderr
    from harness.run.options import RunOptions, check_timeout
    from harness.verdict.remeasure import remeasure_policy

    check_timeout(timeout)
    con = stderr()
    # rep-level re-measuring of ambiguous pairs inside each round; bisect binds it to its comparison's rule
    opts = RunOptions(reps=reps, launches=launches, timeout_s=timeout, resume=resume, artifacts=artifacts,
                      remeasure=remeasure_policy(True, 12, 0.3))  # fmt: skip
    items = [v.strip() for v in versions.split(",") if v.strip()]
    res = run_bisect(
        compare_csv,
        items,
        out,
        console_driver(con),
        log=lambda m: con.print(m, markup=False, highlight=False),
        patterns=case,
        suite=suite,
        golden=golden,
        tot=tot,
        mode=mode,
        opts=opts,
        remeasure=remeasure,
    )
    for key, h in res.histories.items():
        print(f"{key}: {h.culprit.text() if h.culprit else '-'}" + ("" if h.kind == "step" else f" [{h.kind}]"))
    print(f"wrote {out / 'bisect.md'} ({sum(r['seconds'] for r in res.rounds):.0f} s measuring)")
