"""Reading the history: runs, their rows, comparisons and their verdicts, annotations, as frames filtered by
kernel, case, parameters, stack, Triton version, GPU, date and tags; and what the commands make of them (a case's
or a kernel's trend, regressions per kernel per comparison, verdict changes between two comparisons)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import HarnessError
from harness.history.schema import annotations, calibration_cases, calibrations, comparisons, results, runs, verdicts
from harness.results.gpu import uuid_text
from harness.results.schema import TIMED_STATUSES
from harness.verdict.rule import BLOCKING

#: what identifies a series of one stack on one GPU model (change points are found per case within one)
SERIES = ["env_name", "gpu_name"]
RUN_COLUMNS = ("run_at", "env_name", "triton_version", "gpu_name", "gpu_uuid", "host", "tags", "label", "git_commit")
RESULT_COLUMNS = (
    "kernel",
    "case_id",
    "params",
    "status",
    "time_us",
    "spread_pct",
    "reps",
    "rep_times_us",
    "dispatch_us",
    "config",
    "tflops",
    "gbps",
)


@dataclass
class Filter:
    """What a history command looks at. Kernels, cases and Triton versions are exact names or globs (``*``,
    ``?``); ``gpu`` is part of the GPU's name or the start of its UUID (case-insensitive); ``params`` are
    ``name=value`` pairs matched against each row's parameters; dates are naive UTC, ``until`` exclusive."""

    kernels: tuple[str, ...] = ()
    cases: tuple[str, ...] = ()
    params: dict[str, str] = field(default_factory=dict)
    stacks: tuple[str, ...] = ()
    tritons: tuple[str, ...] = ()
    gpu: str = ""
    since: datetime | None = None
    until: datetime | None = None
    tags: tuple[str, ...] = ()
    without_tags: tuple[str, ...] = ()


def _match(column: Any, patterns: tuple[str, ...]) -> Any:
    """``column`` equal to one name, or LIKE one glob."""
    from sqlalchemy import or_

    conds = []
    for p in patterns:
        if "*" in p or "?" in p:
            like = p.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_").replace("*", "%").replace("?", "_")
            conds.append(column.like(like, escape="\\"))
        else:
            conds.append(column == p)
    return or_(*conds)


def _tagged(column: Any, tag: str) -> Any:
    from sqlalchemy import literal

    return (literal(",") + column + literal(",")).contains(f",{tag},", autoescape=True)


def _gpu(name: Any, uuid: Any, gpu: str) -> Any:
    from sqlalchemy import func, or_

    g, u = gpu.lower(), uuid_text(gpu)
    # UUIDs are stored as compare reads them, without GPU- (as nvidia-smi prints it); rows stored earlier may have it
    by_uuid = [func.lower(uuid).startswith(p, autoescape=True) for p in (u, f"gpu-{u}")] if u else []
    return or_(func.lower(name).contains(g, autoescape=True), *by_uuid)


def run_conditions(f: Filter) -> list[Any]:
    """WHERE conditions on ``runs`` of a filter."""
    conds = []
    if f.stacks:
        conds.append(_match(runs.c.env_name, f.stacks))
    if f.tritons:
        conds.append(_match(runs.c.triton_version, f.tritons))
    return conds + _stored_conditions(f, runs, runs.c.run_at)


def _stored_conditions(f: Filter, table: Any, when: Any) -> list[Any]:
    """The GPU, the date window (on ``when``) and the tags: what runs, comparisons and calibrations are all
    filtered by."""
    conds = [_gpu(table.c.gpu_name, table.c.gpu_uuid, f.gpu)] if f.gpu else []
    if f.since:
        conds.append(when >= f.since)
    if f.until:
        conds.append(when < f.until)
    conds += [_tagged(table.c.tags, t) for t in f.tags]
    conds += [~_tagged(table.c.tags, t) for t in f.without_tags]
    return conds


def _frame(conn: Any, stmt: Any) -> pd.DataFrame:
    res = conn.execute(stmt)
    # plain tuples: pandas reads a Row's ``dtype`` attribute (a column of that name) as an array's dtype
    return pd.DataFrame([tuple(r) for r in res.fetchall()], columns=list(res.keys()))


def runs_frame(conn: Any, f: Filter | None = None) -> pd.DataFrame:
    """The stored runs (without their sidecars), oldest first."""
    from sqlalchemy import select

    f = f or Filter()
    cols = [c for c in runs.c if c.name != "sidecar"]
    stmt = select(*cols).where(*run_conditions(f)).order_by(runs.c.run_at, runs.c.id)
    if f.kernels or f.cases:
        sub = select(results.c.run_id).where(*_case_conditions(results, f))
        stmt = stmt.where(runs.c.id.in_(sub))
    return _frame(conn, stmt)


def sidecars(conn: Any, run_ids: list[int]) -> dict[int, dict[str, Any]]:
    """The stored sidecars of these runs (what each measured: results/identity.py reads them)."""
    import json

    from sqlalchemy import select

    if not run_ids:
        return {}
    stmt = select(runs.c.id, runs.c.sidecar).where(runs.c.id.in_([int(r) for r in run_ids]))
    out = {}
    for rid, text in conn.execute(stmt).fetchall():
        try:
            side = json.loads(text)
        except (TypeError, ValueError):
            side = {}
        out[int(rid)] = side if isinstance(side, dict) else {}
    return out


def _case_conditions(table: Any, f: Filter) -> list[Any]:
    conds = []
    if f.kernels:
        conds.append(_match(table.c.kernel, f.kernels))
    if f.cases:
        conds.append(_match(table.c.case_id, f.cases))
    return conds


def results_frame(conn: Any, f: Filter, columns: tuple[str, ...] = RESULT_COLUMNS) -> pd.DataFrame:
    """Rows of the runs a filter selects, each with its run's stack, Triton, GPU, time and tags; oldest first."""
    from sqlalchemy import select

    stmt = (
        select(results.c.run_id, *[runs.c[c] for c in RUN_COLUMNS], *[results.c[c] for c in columns])
        .join_from(results, runs, results.c.run_id == runs.c.id)
        .where(*run_conditions(f), *_case_conditions(results, f))
        .order_by(runs.c.run_at, runs.c.id, results.c.id)
    )
    df = _frame(conn, stmt)
    if f.params and len(df):
        df = df[match_params(df["params"], f.params)].reset_index(drop=True)
    return df


def match_params(cells: pd.Series, wanted: dict[str, str]) -> np.ndarray:
    """Rows whose parameters hold every ``name=value`` (values compared as the JSON text or its string)."""
    out = np.ones(len(cells), dtype=bool)
    for i, cell in enumerate(cells.tolist()):
        try:
            p = json.loads(cell) if cell else {}
        except ValueError:
            p = {}
        for k, v in wanted.items():
            have = p.get(k, _MISSING) if isinstance(p, dict) else _MISSING
            if have is _MISSING or (json.dumps(have) != v and str(have) != v and str(have).lower() != v.lower()):
                out[i] = False
                break
    return out


_MISSING = object()


def comparisons_frame(conn: Any, f: Filter | None = None, include_aa: bool = True) -> pd.DataFrame:
    """The stored comparisons, oldest first; ``when``: the later of the two runs' times, else when it was
    added. ``include_aa``: also golden-vs-golden ones (the same Triton on both sides)."""
    from sqlalchemy import func, select

    f = f or Filter()
    when = func.coalesce(comparisons.c.compared_at, comparisons.c.added_at)
    conds = _stored_conditions(f, comparisons, when)
    if f.tritons:
        conds.append(_match(comparisons.c.tot_triton, f.tritons) | _match(comparisons.c.golden_triton, f.tritons))
    if not include_aa:
        conds.append(comparisons.c.same_triton.is_(False))
    cols = [c for c in comparisons.c if c.name != "meta"]
    stmt = select(*cols, when.label("when")).where(*conds).order_by(when, comparisons.c.id)
    return _frame(conn, stmt)


def calibrations_frame(conn: Any, f: Filter | None = None) -> pd.DataFrame:
    """The stored calibrations, oldest first (``when``: when calibrated, else when added), filtered by GPU, date
    and tags."""
    from sqlalchemy import func, select

    f = f or Filter()
    when = func.coalesce(calibrations.c.calibrated_at, calibrations.c.added_at)
    conds = _stored_conditions(f, calibrations, when)
    cols = [c for c in calibrations.c if c.name != "meta"]
    return _frame(conn, select(*cols, when.label("when")).where(*conds).order_by(when, calibrations.c.id))


def calibration_cases_frame(conn: Any, calibration_ids: list[int], f: Filter | None = None) -> pd.DataFrame:
    """The per-case rows of some calibrations (kernel and case filters applied)."""
    from sqlalchemy import select

    f = f or Filter()
    stmt = (
        select(calibration_cases)
        .where(calibration_cases.c.calibration_id.in_([int(i) for i in calibration_ids]))
        .where(*_case_conditions(calibration_cases, f))
        .order_by(calibration_cases.c.calibration_id, calibration_cases.c.id)
    )
    return _frame(conn, stmt)


def verdicts_frame(conn: Any, comparison_ids: list[int], f: Filter | None = None) -> pd.DataFrame:
    """The verdict rows of some comparisons (kernel and case filters applied)."""
    from sqlalchemy import select

    f = f or Filter()
    if not comparison_ids:
        return pd.DataFrame(columns=[c.name for c in verdicts.c])
    stmt = (
        select(verdicts)
        .where(verdicts.c.comparison_id.in_([int(i) for i in comparison_ids]), *_case_conditions(verdicts, f))
        .order_by(verdicts.c.comparison_id, verdicts.c.id)
    )
    df = _frame(conn, stmt)
    if f.params and len(df):
        df = df[match_params(df["params"], f.params)].reset_index(drop=True)
    return df


def annotations_frame(conn: Any, f: Filter | None = None) -> pd.DataFrame:
    """Annotations, by time; with a filter, those that concern it (an annotation without a kernel, case, GPU or
    stack concerns everything)."""
    from sqlalchemy import select

    f = f or Filter()
    stmt = select(annotations).order_by(annotations.c.at, annotations.c.id)
    if f.since:
        stmt = stmt.where(annotations.c.at >= f.since)
    if f.until:
        stmt = stmt.where(annotations.c.at < f.until)
    df = _frame(conn, stmt)
    if not len(df):
        return df
    df = df.astype(object).where(df.notna(), None)
    keep = np.ones(len(df), dtype=bool)
    for i, a in enumerate(df.itertuples(index=False)):
        if a.kernel and f.kernels and not any(_glob(a.kernel, k) for k in f.kernels):
            keep[i] = False
        if a.case_id and f.cases and not any(_glob(a.case_id, c) for c in f.cases):
            keep[i] = False
        if a.stack and f.stacks and a.stack not in f.stacks:
            keep[i] = False
        if a.gpu and f.gpu and f.gpu.lower() not in a.gpu.lower() and a.gpu.lower() not in f.gpu.lower():
            keep[i] = False
    return df[keep].reset_index(drop=True)


def _glob(name: str, pattern: str) -> bool:
    from fnmatch import fnmatchcase

    return fnmatchcase(name, pattern)


# -- what the commands make of the frames (pure) --------------------------------------------------------------


def timed(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["status"].isin(TIMED_STATUSES) & df["time_us"].notna()]


def run_verdicts(comps: pd.DataFrame, verd: pd.DataFrame) -> pd.DataFrame:
    """(run_id, kernel, case_id) → the verdicts of golden-vs-TOT comparisons that measured that run, as
    ``verdict (#comparison)`` text."""
    if not len(comps) or not len(verd):
        return pd.DataFrame(columns=["run_id", "kernel", "case_id", "verdicts"])
    c = comps[~comps["same_triton"].astype(bool)]
    sides = pd.concat(
        [
            c[["id", "golden_run_id"]].rename(columns={"golden_run_id": "run_id"}),
            c[["id", "tot_run_id"]].rename(columns={"tot_run_id": "run_id"}),
        ]
    ).dropna()
    v = verd.merge(sides, left_on="comparison_id", right_on="id")
    if not len(v):
        return pd.DataFrame(columns=["run_id", "kernel", "case_id", "verdicts"])
    v["text"] = v["verdict"] + " (#" + v["comparison_id"].astype(str) + _ambiguous_mark(v, ", ") + ")"
    out = v.groupby(["run_id", "kernel", "case_id"])["text"].agg("; ".join).reset_index()
    out["run_id"] = out["run_id"].astype(np.int64)
    return out.rename(columns={"text": "verdicts"})


def _ambiguous_mark(v: pd.DataFrame, sep: str) -> pd.Series | str:
    """``sep + "ambiguous"`` where a verdict's 95 % interval straddled its limit, else ``""`` (verdicts stored
    before confidence was recorded have none)."""
    if "confidence" not in v.columns:
        return ""
    return pd.Series(np.where(v["confidence"].eq("ambiguous").to_numpy(), sep + "ambiguous", ""), index=v.index)


def ambiguous(verd: pd.DataFrame) -> pd.Series:
    """Rows whose confidence is ``ambiguous`` (False where none was stored)."""
    if "confidence" not in verd.columns:
        return pd.Series(False, index=verd.index)
    return verd["confidence"].eq("ambiguous").fillna(False).astype(bool)


def kernel_index(df: pd.DataFrame) -> pd.DataFrame:
    """Per run, a kernel's time as one number: the geometric mean over its timed cases of time / that case's
    median over every selected run on the same GPU model (1.0 = typical there; golden and TOT on one GPU share
    the scale). Cases measured in one run only carry no trend and are left out (config sweeps); a case missing
    from a run drops out of that run's mean."""
    d = timed(df).copy()
    case = ["gpu_name", "kernel", "case_id"]
    d["gpu_name"] = d["gpu_name"].fillna("")
    d = d[d.groupby(case)["run_id"].transform("nunique") > 1]
    if not len(d):
        return pd.DataFrame(columns=["run_id", "run_at", *SERIES, "triton_version", "tags", "cases", "index"])
    d["log"] = np.log(d["time_us"].astype(float))
    d["log"] -= d.groupby(case)["log"].transform("median")
    keys = ["run_id", "run_at", *SERIES, "triton_version", "tags"]
    g = d.groupby(keys, dropna=False, sort=False)
    out = g.agg(cases=("log", "size"), index=("log", "mean")).reset_index()
    out["index"] = np.exp(out["index"])
    return out.sort_values(["run_at", "run_id"]).reset_index(drop=True)


def by_triton(series: pd.DataFrame, value: str) -> pd.DataFrame:
    """A trend per Triton version instead of per run: the median of ``value`` over each version's runs, per
    stack and GPU."""
    keys = [*SERIES, "triton_version"]
    d = series.copy()
    d["triton_version"] = d["triton_version"].fillna("?")
    g = d.groupby(keys, dropna=False, sort=False)
    out = g.agg(runs=("run_id", "nunique"), first=("run_at", "min"), last=("run_at", "max"), value=(value, "median"))
    return out.reset_index().rename(columns={"value": value}).sort_values([*SERIES, "first"]).reset_index(drop=True)


def regression_counts(comps: pd.DataFrame, verd: pd.DataFrame) -> pd.DataFrame:
    """The AITER-seed table, long: per comparison and kernel, cases, regressions (``ambiguous``: how many of them
    had an interval straddling the limit) and TOT failures."""
    cols = ["comparison_id", "when", "gpu_name", "golden_triton", "tot_triton", "kernel", "cases", "regressions"]
    if not len(comps) or not len(verd):
        return pd.DataFrame(columns=[*cols, "ambiguous", "failed_in_tot"])
    reg = verd["verdict"] == "regression"
    v = verd.assign(reg=reg, amb=reg & ambiguous(verd), fail=verd["verdict"] == "failed_in_tot")
    g = v.groupby(["comparison_id", "kernel"]).agg(cases=("verdict", "size"), regressions=("reg", "sum"))
    g["ambiguous"] = v.groupby(["comparison_id", "kernel"])["amb"].sum()
    g["failed_in_tot"] = v.groupby(["comparison_id", "kernel"])["fail"].sum()
    g = g.reset_index()
    meta = comps[["id", "when", "gpu_name", "golden_triton", "tot_triton"]].rename(columns={"id": "comparison_id"})
    out = meta.merge(g, on="comparison_id")
    return (
        out[[*cols, "ambiguous", "failed_in_tot"]]
        .sort_values(["when", "comparison_id", "kernel"])
        .reset_index(drop=True)
    )


def pick_comparison(comps: pd.DataFrame, point: str) -> pd.Series:
    """A comparison named by ``point``: its id (``12`` or ``#12``), else a date or time: the latest comparison
    made by then (a date alone: by the end of that day)."""
    from harness.history.dates import parse_point

    if not len(comps):
        raise HarnessError("no comparison matches the filters")
    text = point.strip().lstrip("#")
    if text.isdigit():
        found = comps[comps["id"] == int(text)]
        if not len(found):
            raise HarnessError(f"no comparison {text} among those the filters select (harness history list)")
        return found.iloc[0]
    end = parse_point(point)
    before = comps[pd.to_datetime(comps["when"]) < end]
    if not len(before):
        raise HarnessError(f"no comparison made before {point} among those the filters select")
    return before.iloc[-1]


def verdict_changes(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """Cases whose verdict differs between two comparisons' verdict rows: ``change`` is ``new`` (blocking now,
    not before), ``fixed`` (blocking before, not now), ``changed`` (any other verdict change), ``added`` or
    ``dropped`` (a case in one only); worst first. Blocking as ``--fail-on-regression`` sees it: an ambiguous
    regression is not (its interval straddled the limit), so a regression that turned ambiguous is ``fixed``
    (a confident one ``new``); ``confidence_*``, ``delta_lo_pct_*`` and ``delta_hi_pct_*`` say how sure each side was."""
    key = ["kernel", "case_id"]
    sure = ["confidence", "delta_lo_pct", "delta_hi_pct"]
    cols = [*key, "verdict", "delta_pct", *sure]
    before, after = (_with_columns(d, sure) for d in (before, after))
    m = before[cols].merge(after[cols], on=key, how="outer", suffixes=("_before", "_after"))
    was = m["verdict_before"].isin(BLOCKING) & m["confidence_before"].ne("ambiguous")
    now = m["verdict_after"].isin(BLOCKING) & m["confidence_after"].ne("ambiguous")
    keep = (m["verdict_before"].fillna("") != m["verdict_after"].fillna("")) | (was != now)
    m, was, now = m[keep].copy(), was[keep], now[keep]
    m["change"] = np.select(
        [m["verdict_before"].isna(), m["verdict_after"].isna(), now & ~was, was & ~now],
        ["added", "dropped", "new", "fixed"],
        "changed",
    )
    order = {"new": 0, "fixed": 1, "changed": 2, "added": 3, "dropped": 4}
    m["_o"] = m["change"].map(order)
    m = m.sort_values(["_o", "kernel", "case_id"]).drop(columns="_o")
    both = [f"{c}_{side}" for c in ("verdict", "delta_pct", *sure) for side in ("before", "after")]
    return m[["change", *key, *both]].reset_index(drop=True)


def _with_columns(df: pd.DataFrame, names: list[str]) -> pd.DataFrame:
    missing = [c for c in names if c not in df.columns]
    return df.assign(**{c: None for c in missing}) if missing else df
