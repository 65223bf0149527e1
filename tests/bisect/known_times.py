"""Results files with known times, for the bisection's round logic and outputs without running kernels: a
``measure`` that writes, for each env of a round, the rows the times table gives (reps → the stability rule),
and a comparison of golden vs TOT written the same way. The real thing (workers, venvs, an unpacked overlay)
is tests/bisect/test_bisect.py's end-to-end test."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from harness.bisect.model import Plan, Stack
from harness.bisect.plan import match_cases, select_targets
from harness.compare.compare import compare_files
from harness.compare.store import load_compare, write_compare
from harness.envs.spec import load_env_spec
from harness.run.options import RunOptions
from harness.verdict import stability
from tests.conftest import DATA

SUITE = DATA / "bisect.yaml"
Reps = Callable[[int], list[float]]  # round -> rep times


def write_results(path: Path, times: dict[str, list[float]], sidecar: dict | None = None) -> None:
    """``times``: case_id -> reps (µs); an empty list: the case failed to compile."""
    rows = []
    for case_id, reps in times.items():
        if not reps:
            rows.append({"kernel": "versioned", "case_id": case_id, "status": "compile_error", "time_us": "",
                         "rep_times_us": "[]", "error": "boom"})  # fmt: skip
            continue
        d = stability.decide(reps[:3])
        if d.need_more:
            d = stability.decide(reps[:5])
        rows.append({"kernel": "versioned", "case_id": case_id, "status": d.status, "time_us": d.value,
                     "rep_times_us": json.dumps(reps), "error": ""})  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)
    if sidecar is not None:
        path.with_name(path.name + ".env.json").write_text(json.dumps(sidecar))


def comparison(folder: Path, golden: dict[str, list[float]], tot: dict[str, list[float]]) -> Path:
    """compare.csv of golden vs TOT results with these times; the sidecars name the suite and env specs."""
    side = {"suite": str(SUITE), "env_spec": {"file": str(folder / "g.yaml")}, "triton": {"version": "3.6.0"}}
    write_results(folder / "golden.csv", golden, side)
    tside = {**side, "env_spec": {"file": str(folder / "t.yaml")}, "triton": {"version": "3.9.0", "path": "/t"}}
    write_results(folder / "tot.csv", tot, tside)
    out = folder / "compare.csv"
    write_compare(compare_files(folder / "golden.csv", folder / "tot.csv"), out)
    return out


def plan(folder: Path, compare_csv: Path, releases: list[str], tot: bool = True, remeasure: int = 2) -> Plan:
    """A plan over the comparison's regressions with stacks labelled by version (nothing probed)."""
    spec = folder / "env.yaml"
    spec.write_text("python: python3\n")
    env = load_env_spec(spec)
    cmp = load_compare(compare_csv)
    targets = select_targets(cmp, None, str(compare_csv))
    stacks = [Stack("golden", "golden", env, "3.6.0")]
    stacks += [Stack(v, "release", env, v) for v in releases]
    stacks.append(Stack("tot", "tot", env if tot else None, "3.9.0"))
    return Plan(compare_csv, cmp, targets, match_cases(targets, SUITE), SUITE, stacks, folder / "out",
                RunOptions(), remeasure)  # fmt: skip


class KnownTimes:
    """The driver for run_rounds: ``measure`` writes each env's file from ``times[(stack key, case_id)](round)``, and keeps
    which stacks and cases each round measured."""

    def __init__(self, times: dict[tuple[str, str], Reps]):
        self.times = times
        self.calls: list[tuple[int, list[str], list[str]]] = []

    def measure(self, runs, cases, opts, suite) -> None:  # noqa: ANN001 - Driver.measure's arguments
        rnd = int(Path(runs[0][1]).parent.name.split("-")[1])
        self.calls.append((rnd, [Path(p).stem for _, p in runs], [c.case_id for c in cases]))
        for _, path in runs:
            write_results(Path(path), {c.case_id: self.times[(Path(path).stem, c.case_id)](rnd) for c in cases})


def const(*reps: float) -> Reps:
    return lambda rnd: list(reps)


def by_round(*per_round: list[float]) -> Reps:
    return lambda rnd: list(per_round[min(rnd, len(per_round)) - 1])
