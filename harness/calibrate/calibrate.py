"""`harness calibrate SUITE --env ENV --out DIR`: each case measured as A/A and with known slowdowns injected, R
times, interleaved on the same GPU; per case the smallest slowdown it reliably catches and its A/A
false-positive rate (resolution.py), written to ``DIR/calibration.csv`` for ``harness compare --calibration``.

Layout of DIR (harness's own folder, outdir.py): ``runs/baseline.csv`` (one plain run: each case's time, which the
``%`` and ``limit`` slowdowns are sized from), ``delays-LABEL.json`` (the µs injected per case),
``runs/repeat-N/{golden,aa,slow-LABEL}.csv`` (one interleaved run per repeat: golden, golden again, and golden with
each slowdown), ``calibration.csv`` and its ``.meta.json``. Every run is a normal results file with its journal:
a killed calibration goes on with ``--resume``, measuring only what is missing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from harness.compare.calibration import write_calibration
from harness.envs.spec import EnvSpec
from harness.errors import HarnessError
from harness.fsutil import write_text
from harness.inputs.suite import Case
from harness.results.load import load_results
from harness.results.schema import TIMED_STATUSES
from harness.run.options import RunOptions
from harness.run.orchestrate import Driver
from harness.verdict.resolution import Slowdown, judge_pair, summarize
from harness.verdict.rule import Rule

OWN = ("calibration.csv", "runs")


@dataclass(frozen=True)
class Plan:
    spec: EnvSpec
    cases: list[Case]
    suite: str
    out: Path
    slowdowns: list[Slowdown]
    repeats: int
    rule: Rule
    opts: RunOptions


def calibrate(plan: Plan, driver: Driver, log: Callable[[str], None]) -> pd.DataFrame:
    """Measure (through ``driver``, as `harness run` does) and summarize (module docstring); returns the
    calibration table."""
    runs = plan.out / "runs"
    baseline = runs / "baseline.csv"
    log(f"baseline: {len(plan.cases)} cases under {plan.spec.name}")
    driver.measure([(plan.spec, baseline)], plan.cases, plan.opts, plan.suite)
    times = _times(load_results(baseline))
    envs = [(plan.spec, "golden"), (plan.spec, "aa")]
    envs += [(_slowed(plan, s, times), f"slow-{s.label}") for s in plan.slowdowns]
    aa: list[pd.DataFrame] = []
    slowed: dict[str, list[pd.DataFrame]] = {s.label: [] for s in plan.slowdowns}
    for r in range(1, plan.repeats + 1):
        folder = runs / f"repeat-{r}"
        pairs = [(spec, folder / f"{name}.csv") for spec, name in envs]
        log(f"repeat {r} of {plan.repeats}: golden, A/A and {', '.join(s.label for s in plan.slowdowns)}")
        driver.measure(pairs, plan.cases, plan.opts, plan.suite)
        frames = [load_results(p) for _, p in pairs]
        aa.append(judge_pair(frames[0], frames[1], plan.rule))
        for s, f in zip(plan.slowdowns, frames[2:]):
            slowed[s.label].append(judge_pair(frames[0], f, plan.rule))
    injected = {s.label: _injected_pct(s, times, plan.rule) for s in plan.slowdowns}
    table = summarize(aa, slowed, injected, plan.rule)
    write_calibration(table, _meta(plan, load_results(baseline).attrs.get("env") or {}), plan.out / "calibration.csv")
    return table


def calibrate_suite(
    suite: Path,
    *,
    env: str,
    out: Path,
    slowdown: Sequence[str] | None,
    repeats: int,
    kernel: list[str] | None,
    filter_: str | None,
    reps: int,
    launches: int | None,
    timeout: float,
    resume: bool,
    record: bool,
    rule: tuple[float, float, float],
) -> None:
    """`harness calibrate`: the options checked (``rule``: --rel, --abs-us, --min-golden-us), OUT prepared, the
    suite calibrated on the console and its summary printed; with ``record``, calibration.csv added to the history.
    """
    from harness.envs.spec import load_env_spec
    from harness.envs.venv import check_venv
    from harness.outdir import prepare_out_dir
    from harness.render.progress import console_driver
    from harness.render.terminal import stderr
    from harness.run.options import check_timeout
    from harness.run.orchestrate import selected_cases
    from harness.verdict.remeasure import remeasure_policy
    from harness.verdict.rule import rule_of

    check_timeout(timeout)
    judge = rule_of(*rule)
    slowdowns = slowdowns_of(slowdown)
    if record:
        from harness.history.record import check_record

        check_record([out / "calibration.csv"])
    spec = load_env_spec(env)
    check_venv(spec)
    cases = selected_cases(suite, kernel, filter_)
    prepare_out_dir("--out", out, "calibrate", inputs=[suite], own=OWN)
    if not resume and (out / "runs").exists():
        raise HarnessError(f"--out {out}: holds a calibration already; pass --resume to go on with it")
    con = stderr()
    # each repeat's flags confirmed in fresh processes, as `harness run` confirms them: the verdicts compare gives
    opts = RunOptions(reps=reps, launches=launches, timeout_s=timeout, resume=resume,
                      remeasure=remeasure_policy(True, 12, 0.3, judge))  # fmt: skip
    plan = Plan(spec, cases, str(suite), out, slowdowns, repeats, judge, opts)
    table = calibrate(plan, console_driver(con), log=lambda m: con.print(m, markup=False, highlight=False))
    if record:
        from harness.history.record import record as record_files

        record_files([out / "calibration.csv"])
    print(summary(table, out / "calibration.csv"))


def slowdowns_of(given: Sequence[str] | None) -> list[Slowdown]:
    """The --slowdown options (default: DEFAULT_SLOWDOWNS); one it cannot be, or one given twice, is one line."""
    from harness.verdict.resolution import DEFAULT_SLOWDOWNS, parse_slowdown

    try:
        slowdowns = [parse_slowdown(s) for s in (given or DEFAULT_SLOWDOWNS)]
    except ValueError as err:
        raise HarnessError(f"--slowdown {err}") from None
    if len({s.label for s in slowdowns}) != len(slowdowns):
        raise HarnessError("--slowdown: the same slowdown given twice")
    return slowdowns


def summary(table: pd.DataFrame, path: Path) -> str:
    """The line a calibration ends with: how many cases resolve the rule's slack, how many an A/A flagged."""
    bad = table[~table["resolves"]]
    fp = int((table["aa_flags"] > 0).sum())
    return (
        f"{len(table)} cases: {len(table) - len(bad)} resolve the rule's slack, {len(bad)} cannot; "
        f"{fp} flagged in an A/A repeat; wrote {path}"
    )


def _times(df: pd.DataFrame) -> pd.Series:
    """Each timed case's time (µs), indexed by (kernel, case_id)."""
    d = df[df["status"].isin(TIMED_STATUSES) & df["time_us"].notna()]
    return pd.Series(d["time_us"].astype(float).to_numpy(), index=pd.MultiIndex.from_frame(d[["kernel", "case_id"]]))


def _slowed(plan: Plan, s: Slowdown, times: pd.Series) -> EnvSpec:
    """Golden's env with slowdown ``s`` injected (harness/worker/delay.py): µs for every case in a variable,
    sized ones per case in a file the worker reads."""
    name = f"{plan.spec.name}+{s.label}"
    if s.kind == "us":
        return replace(plan.spec, name=name, env={**plan.spec.env, "HARNESS_DELAY_US": str(s.value)})
    delays = {f"{k}/{c}": round(s.delay_us(t, plan.rule), 4) for (k, c), t in times.items()}
    path = (plan.out / f"delays-{s.label.replace('%', 'pct')}.json").resolve()
    write_text(path, json.dumps(delays, indent=1, sort_keys=True) + "\n")
    return replace(plan.spec, name=name, env={**plan.spec.env, "HARNESS_DELAY_FILE": str(path)})


def _injected_pct(s: Slowdown, times: pd.Series, rule: Rule) -> pd.Series:
    """The slowdown as injected, in % of each case's baseline time."""
    return pd.Series({key: 100.0 * s.delay_us(t, rule) / t for key, t in times.items()}, dtype=float).rename_axis(
        ["kernel", "case_id"]
    )


def _meta(plan: Plan, env: dict[str, Any]) -> dict[str, Any]:
    return {
        "written_by": "harness calibrate",
        "captured_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "suite": plan.suite,
        "env": plan.spec.name,
        "triton": env.get("triton"),
        "gpu": env.get("gpu"),
        "host": env.get("host"),
        "timing": env.get("timing"),
        "rule": plan.rule.record(),
        "slowdowns": [s.label for s in plan.slowdowns],
        "repeats": plan.repeats,
        "reps": plan.opts.reps,
    }
