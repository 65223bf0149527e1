"""Compare stage: two results files → one verdict table (plus the metadata needed to render it)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.compare import join as J
from harness.compare.note_column import guard_refused, note_column
from harness.compare.notes import (
    SAME_GPU_WHY,
    UNCONFIRMED,
    method_differences,
    nothing_compared,
    other_gpu,
    remeasured_under,
    same_triton,
    swapped,
)
from harness.errors import HarnessError, counted
from harness.results.arrowframe import blank
from harness.results.gpu import rows_on_other_gpus
from harness.results.load import load_results
from harness.results.schema import STATUSES, TIMED_STATUSES
from harness.verdict.confidence import CONFIDENCE, assess, may_regress
from harness.verdict.rule import BLOCKING, VERDICTS, Rule, is_verdict, verdict_codes

COMPARE_COLUMNS = (
    "kernel",
    "case_id",
    "params",
    "dtype",
    "golden_us",
    "tot_us",
    "delta_us",
    "delta_pct",
    "limit_us",
    "verdict",
    "golden_status",
    "tot_status",
    "golden_config",
    "tot_config",
    "flops",
    "bytes",
    "peak",
    "note",
    "confidence",
    "noise_pct",
    "delta_lo_pct",
    "delta_hi_pct",
)
KEY = ["kernel", "case_id"]
#: worst first: how compare tables are ordered
SEVERITY = {v: i for i, v in enumerate(VERDICTS)}


@dataclass
class Comparison:
    table: pd.DataFrame
    rule: Rule
    golden_env: dict[str, Any] = field(default_factory=dict)
    tot_env: dict[str, Any] = field(default_factory=dict)
    golden_path: str = ""
    tot_path: str = ""
    warnings: list[str] = field(default_factory=list)
    #: cases whose golden and TOT rows name different GPUs (results merged from several GPUs or machines)
    gpu_rows: str = ""
    #: the calibration applied (calibration.pick_calibration's record: --calibration FILE or a sidecar's, with its
    #: ``source`` and how many compared cases it calibrated); {} when none
    calibration: dict[str, Any] = field(default_factory=dict)
    #: the A/A that widened the intervals (aa.aa_record: file, σ_p per kernel, verdicts it made ambiguous); {}
    process_noise: dict[str, Any] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        vc = self.table["verdict"].value_counts()
        return {v: int(vc.get(v, 0)) for v in VERDICTS}

    def per_kernel(self) -> pd.DataFrame:
        """Cases per (kernel, verdict), kernels as rows, only verdicts that occur as columns."""
        kcodes, kernels = pd.factorize(self.table["kernel"], sort=True)
        vcodes = pd.Categorical(self.table["verdict"], categories=list(VERDICTS)).codes
        counts = np.bincount(kcodes * len(VERDICTS) + vcodes, minlength=len(kernels) * len(VERDICTS))
        ct = pd.DataFrame(
            counts.reshape(len(kernels), len(VERDICTS)), index=pd.Index(kernels, name="kernel"), columns=list(VERDICTS)
        )
        return ct.loc[:, ct.sum(axis=0) > 0]

    @property
    def blocking(self) -> int:
        """Cases that fail ``--fail-on-regression``: TOT failures and regressions, but for ambiguous ones."""
        t = self.table
        ambiguous = t["confidence"] == "ambiguous" if "confidence" in t.columns else False
        return int((is_verdict(t["verdict"], BLOCKING) & ~np.asarray(ambiguous)).sum())

    def ambiguous_counts(self) -> dict[str, int]:
        """Per verdict, the cases whose 95 % interval straddles a limit their verdict depends on."""
        if "confidence" not in self.table.columns:
            return {}
        amb = self.table.loc[self.table["confidence"] == "ambiguous", "verdict"].astype(str)
        return {str(k): int(n) for k, n in amb.value_counts().items()}

    @property
    def unknown(self) -> int:
        """Timed verdicts without an interval: a stack with fewer than 2 reps (or none readable)."""
        return int((self.table["confidence"] == "unknown").sum()) if "confidence" in self.table.columns else 0

    @property
    def strict_blocking(self) -> int:
        """Cases that fail ``--fail-on-ambiguous``: every TOT failure and regression, and every ambiguous ok that
        may be a regression."""
        t = self.table
        if "confidence" not in t.columns:
            return int(is_verdict(t["verdict"], BLOCKING).sum())
        limit_pct, _ = self.rule.limits_pct(t["golden_us"].to_numpy(dtype=np.float64))
        maybe = may_regress(t["verdict"].astype(str), t["confidence"].astype(str), t["delta_hi_pct"], limit_pct)
        return int((maybe | (t["verdict"] == "failed_in_tot")).sum())

    @property
    def nothing_compared(self) -> str:
        """The headline when no case was compared by the rule (see :func:`nothing_compared`), else ``''``."""
        return nothing_compared(self.table, self.rule)

    @property
    def same_triton(self) -> str:
        return same_triton(self.golden_env, self.tot_env)

    @property
    def other_gpu(self) -> str:
        """Golden and TOT measured on different GPUs: by their sidecars, or case by case (the rows' ``gpu``)."""
        return other_gpu(self.golden_env, self.tot_env) or self.gpu_rows

    def meta(self) -> dict[str, Any]:
        return {
            "rule": self.rule.record(),
            "golden": {"path": self.golden_path, "env": self.golden_env},
            "tot": {"path": self.tot_path, "env": self.tot_env},
            "counts": self.counts(),
            **({"calibration": self.calibration} if self.calibration else {}),
            **({"process_noise": self.process_noise} if self.process_noise else {}),
        }


def compare_frames(
    golden: pd.DataFrame,
    tot: pd.DataFrame,
    rule: Rule,
    *,
    unstable: str = "compare",
    golden_name: str = "golden",
    tot_name: str = "tot",
) -> tuple[pd.DataFrame, list[str]]:
    """Join two validated results frames on (kernel, case_id) and label each case.

    Vectorized throughout: keys become int64 codes, the join is an index lookup, and every output column is
    one take (none at all when both files list the same cases in the same order). Rows stay in golden's order,
    then TOT-only cases; :func:`worst_first` orders them for display.
    """
    table, warnings, _ = _compare(golden, tot, rule, unstable, golden_name, tot_name)
    return table, warnings


def _compare(
    golden: pd.DataFrame,
    tot: pd.DataFrame,
    rule: Rule,
    unstable: str,
    golden_name: str,
    tot_name: str,
    process_pct: np.ndarray | None = None,
    golden_reps: Callable[[], Any] | None = None,
) -> tuple[pd.DataFrame, list[str], dict[str, np.ndarray]]:
    """compare_frames, with each golden row's between-process noise σ_p (``process_pct``, NaN: none) widening
    its interval; also (per output row) ``sigma`` and ``by_process`` (the verdicts it made ambiguous).
    ``golden_reps``: golden's rep times and processes (J.rep_column), started while TOT loaded (compare_files)."""
    j, warnings = J.join(golden, tot, golden_name, tot_name)
    if golden_reps is not None:
        j.rep_columns["golden"], labels = golden_reps()
        if labels is not None:  # else found when asked for (not started where TOT's file names no labels)
            j.label_columns["golden"] = labels
    _parse_reps(j)
    gu, tu = J.col(golden, "time_us", j.g_rows, np.nan), J.col(tot, "time_us", j.t_rows, np.nan)
    timed = [STATUSES.index(s_) for s_ in (TIMED_STATUSES if unstable == "compare" else ("ok",))]
    skip = STATUSES.index("skipped")
    in_g, in_t = j.gi >= 0, j.ti >= 0
    vcode = verdict_codes(
        gu, tu, in_g, in_t, np.isin(j.gsc, timed), np.isin(j.tsc, timed), rule, j.gsc == skip, j.tsc == skip
    )
    with np.errstate(invalid="ignore", divide="ignore"):
        pct = 100.0 * (tu - gu) / gu
    cols = J.case_columns(j, golden_name, tot_name)
    cols.update(
        golden_us=gu,
        tot_us=tu,
        delta_us=tu - gu,
        delta_pct=pct,
        limit_us=np.where(np.isnan(gu), np.nan, rule.limit_us(gu)),
        verdict=pd.Categorical.from_codes(vcode, categories=list(VERDICTS)),
        golden_status=J.status_column(j.gsc),
        tot_status=J.status_column(j.tsc),
        golden_config=J.col(golden, "config", j.g_rows),
    )
    tot_cfg = J.col(tot, "config", j.t_rows)
    # TOT's config only where it differs: the same config files serve both stacks, so this is usually empty
    differs = tot_cfg != cols["golden_config"]
    cols["tot_config"] = tot_cfg.where(differs, "") if differs.any() else blank(len(tot_cfg))
    process = {}
    if process_pct is not None:
        sigma = pd.api.extensions.take(np.asarray(process_pct, dtype=np.float64), j.gi, allow_fill=True)
        process["sigma"] = sigma
    labelled = _labelled_evidence(j, cols["kernel"], gu, tu, vcode, rule, process.get("sigma"))
    cols["note"] = note_column(j, vcode, pct, labelled)
    cols.update(_evidence(j, gu, tu, vcode, rule, process.get("sigma"), labelled))
    if "by_process" in cols:
        process["by_process"] = cols.pop("by_process")
    table = pd.DataFrame({c: cols[c] for c in COMPARE_COLUMNS if c in cols}, copy=False)  # no 2-D block copy
    return table, warnings, process


def _labelled_evidence(
    j: J.Joined, kernels: Any, gu: np.ndarray, tu: np.ndarray, vcode: np.ndarray, rule: Rule,
    process_pct: np.ndarray | None,
) -> dict[str, np.ndarray] | None:  # fmt: skip
    """confirm.judge of the rows whose reps both files label with their worker process (``rep_procs``); None
    where either file labels none (a file of one process: judged by its reps alone, confidence.assess)."""
    if j.labels("golden") is None or j.labels("tot") is None:
        return None
    from harness.verdict.confirm import Side, judge

    sides = [
        Side.parse(j.reps(side) or J.arrow_column(J.col(df, "rep_times_us", None)), j.labels(side), rows)
        for side, df, rows in (("golden", j.golden, j.gi), ("tot", j.tot, j.ti))
    ]
    return judge(pd.Series(kernels).astype(str), sides[0], sides[1], gu, tu, vcode, rule, process_pct)


def _evidence(
    j: J.Joined, gu: np.ndarray, tu: np.ndarray, vcode: np.ndarray, rule: Rule, process_pct: np.ndarray | None = None,
    labelled: dict[str, np.ndarray] | None = None,
) -> dict[str, Any]:  # fmt: skip
    """How sure each timed verdict is, from both stacks' rep times (confidence.assess), widened by ``process_pct``
    where given; 'unknown' without rep times. ``labelled``: confirm.judge's evidence, which replaces assess's
    for the rows it judged (their reps labelled by process: the between-process spread and the confirmation)."""
    sides = (("golden", j.gi), ("tot", j.ti))

    def rep_texts(near: np.ndarray) -> tuple[Any, ...]:
        return tuple(_rep_texts(j, side, rows, near) for side, rows in sides)

    taken = ((j.golden, j.g_rows), (j.tot, j.t_rows))  # only read: the frames' own arrays where nothing is taken
    clocks = None
    if "sm_clock_mhz" in j.golden.columns and "sm_clock_mhz" in j.tot.columns:
        clocks = tuple(J.col(df, "sm_clock_mhz", rows, np.nan, copy=False) for df, rows in taken)
    ev = assess(gu, tu, vcode, rule, rep_texts, clocks, process_pct)
    if labelled is not None:
        from harness.verdict.confidence import clock_explains
        from harness.verdict.confirm import overlay

        moved = clock_explains(gu, tu, *clocks, vcode, rule) if clocks is not None else np.zeros(len(vcode), bool)
        ev["confidence"] = overlay(ev["confidence"], labelled, moved)
        rows = labelled["labelled"]
        for name in ("noise_pct", "delta_lo_pct", "delta_hi_pct"):
            ev[name] = np.where(rows, labelled[name], ev[name])
        if "by_process" in ev:  # the labelled rows' own: the A/A's widening is in their interval
            ev["by_process"] = (ev["by_process"] & ~rows) | labelled["by_process"]
    refused = guard_refused(j)
    if refused.any():  # a time the multi-GPU guard refused measured something other than the op: never confident
        sure = ev["confidence"] == CONFIDENCE.index("confident")
        ev["confidence"] = np.where(refused & sure, CONFIDENCE.index("ambiguous"), ev["confidence"])
    ev["confidence"] = pd.Categorical.from_codes(ev["confidence"], categories=list(CONFIDENCE))
    return ev


def _parse_reps(j: J.Joined) -> None:
    """Both files' rep times and processes parsed on threads of their own (each started once, golden's perhaps
    while TOT's file was still being checked) while the verdicts and the notes that need no reps are made: the
    interval, the confirmation and the rep-range notes then take their rows."""
    for parts in ((j.reps("golden"), j.reps("tot")), (j.labels("golden"), j.labels("tot"))):
        if None not in parts:
            for c in parts:
                c.start()


def _rep_texts(j: J.Joined, side: str, rows: np.ndarray, near: np.ndarray) -> Any:
    """The rep-time cells of one side's ``rows`` (reps.Cells: parsed with Arrow, no Python string a cell), whose
    figures assess takes at ``near`` (Cells.stats_where); None where none of those holds any (as without the
    column: nothing to parse)."""
    column = j.reps(side)
    if column is None:
        return None
    cells = column.at(None if J.every_row(rows, column) else rows)
    return cells if (cells.parsed((0,))[0] & near).any() else None


def worst_first(table: pd.DataFrame) -> np.ndarray:
    """Row positions ordered worst first: verdict severity, then the largest relative slowdown."""
    codes = pd.Categorical(table["verdict"], categories=list(VERDICTS)).codes
    pct = table["delta_pct"].to_numpy(dtype=np.float64, na_value=np.nan)
    return np.lexsort((-np.nan_to_num(pct, nan=-np.inf), codes))


def gpu_rows(golden: pd.DataFrame, tot: pd.DataFrame) -> str:
    """A warning when some case's golden and TOT rows name different physical GPUs (their ``gpu`` column), ''
    otherwise: merged results may hold many GPUs, but each case must have both stacks on one."""
    j = rows_on_other_gpus(golden, tot)
    if j.empty:
        return ""
    r = j.iloc[0]
    return (
        f"{counted(len(j), 'case')} {'was' if len(j) == 1 else 'were'} timed on different GPUs under golden and "
        f"TOT (e.g. {r['kernel']}/{r['case_id']}: {r['gpu']} vs {r['gpu_other']}); {SAME_GPU_WHY}"
    )


def compare_files(
    golden: str | os.PathLike[str],
    tot: str | os.PathLike[str],
    rule: Rule | None = None,
    *,
    unstable: str = "compare",
    aa: str | os.PathLike[str] | None = None,
) -> Comparison:
    """Compare two results files; ``aa``: golden's stack measured again in the same run, whose deltas against
    golden widen every interval by the kernel's between-process noise (aa.py, docs/verdicts.md)."""
    rule = rule or Rule()
    from concurrent.futures import ThreadPoolExecutor

    from harness.fsutil import same_file

    if Path(golden).is_file() and Path(tot).is_file() and same_file(golden, tot):  # a typo in a CI gate: never a pass
        raise HarnessError(f"GOLDEN and TOT are one file ({tot}): compare the files of two stacks' runs")
    if aa is not None:
        from harness.compare.aa import aa_record, aa_sigma, apart, check_aa_env, check_aa_gpus, check_aa_path, noted

        check_aa_path(aa, golden, tot)
    with ThreadPoolExecutor(4) as pool:  # the CSV readers release the GIL: read the files at once
        gf = pool.submit(load_results, golden)
        tf = pool.submit(load_results, tot, unique_keys=J.frame_of(gf))  # usually golden's cases: no hashing
        g_reps = pool.submit(J.reps_started, gf, J.names_column(tot, "rep_procs"))  # while TOT's is checked
        af = pool.submit(load_results, aa, unique_keys=J.frame_of(gf)) if aa is not None else None
        gdf, tdf = gf.result(), tf.result()
        try:
            adf = af.result() if af is not None else None
        except HarnessError as err:  # which option named the file: it may be anything
            raise HarnessError(f"--aa: {err}") from None
    genv, tenv = gdf.attrs.get("env", {}), tdf.attrs.get("env", {})
    sigma_rows, aa_warnings = None, []
    if adf is not None:
        aenv = adf.attrs.get("env", {})
        check_aa_env(genv, aenv, aa)
        check_aa_gpus(gdf, adf, aa)
        aa_warnings = [w for w in (apart(genv, aenv, aa),) if w]
        sigma_rows, noise = aa_sigma(gdf, adf, rule, str(aa))
    table, warnings, process = _compare(gdf, tdf, rule, unstable, str(golden), str(tot), sigma_rows, g_reps.result)
    record: dict[str, Any] = {}
    if adf is not None:
        record = aa_record(aa, noise, table, process["sigma"], process["by_process"])
        table = noted(table, process["sigma"], process["by_process"])
    rows = gpu_rows(gdf, tdf)
    warnings += [w for w in (swapped(genv, tenv), same_triton(genv, tenv), rows) if w] + method_differences(genv, tenv)
    labels = J.holds(gdf, "rep_procs") and J.holds(tdf, "rep_procs")
    if not labels and is_verdict(table["verdict"], ("regression", "improvement")).any():
        warnings.append(UNCONFIRMED)
    warnings += [w for w in (remeasured_under(genv, tenv, rule),) if w] + aa_warnings
    return Comparison(
        table=table,
        rule=rule,
        golden_env=gdf.attrs.get("env", {}),
        tot_env=tdf.attrs.get("env", {}),
        golden_path=str(golden),
        tot_path=str(tot),
        warnings=warnings,
        gpu_rows=rows,
        process_noise=record,
    )
