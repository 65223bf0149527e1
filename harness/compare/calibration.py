"""A calibration file (``harness calibrate``'s ``calibration.csv`` and its ``.meta.json``) and what compare makes
of it: a case whose calibrated resolution is coarser than the rule's slack says so in its note, and its flags are
``ambiguous``, never ``confident`` (docs/verdicts.md)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.compare.rule import Rule
from harness.errors import HarnessError

CALIBRATION_COLUMNS = (
    "kernel",
    "case_id",
    "golden_us",
    "repeats",
    "aa_flags",
    "aa_confident_flags",
    "aa_fp_rate",
    "noise_pct",
    "resolution_pct",
    "resolution_us",
    "limit_pct",
    "resolves",
    "caught",
)
#: what compare needs of a calibration file
REQUIRED = ("kernel", "case_id", "noise_pct", "resolution_pct", "resolves")


def calibration_meta_path(path: str | os.PathLike[str]) -> Path:
    p = Path(path)
    return p.with_name(p.name + ".meta.json")


def write_calibration(table: pd.DataFrame, meta: dict[str, Any], path: Path) -> None:
    from harness.compare.store import write_csv
    from harness.fsutil import write_text

    write_csv(table[list(CALIBRATION_COLUMNS)], path)
    write_text(calibration_meta_path(path), json.dumps(meta, indent=2, default=str) + "\n")


def load_calibration(
    path: str | os.PathLike[str], option: str = "--calibration"
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The calibration table and its metadata; bad input is one line naming the file (and the option)."""
    p = Path(path)
    what = f"{option} {p}" if option else str(p)
    try:
        df = pd.read_csv(p, dtype={"kernel": str, "case_id": str})
    except FileNotFoundError:
        raise HarnessError(f"{what}: no such file") from None
    except (OSError, ValueError, pd.errors.ParserError) as err:
        raise HarnessError(f"{what}: not a calibration CSV ({str(err).splitlines()[0]})") from None
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise HarnessError(f"{what}: not a calibration file (no column {', '.join(missing)})")
    if df.duplicated(["kernel", "case_id"]).any():
        row = df[df.duplicated(["kernel", "case_id"])].iloc[0]
        raise HarnessError(f"{what}: case {row['kernel']}/{row['case_id']} listed twice")
    try:
        meta = json.loads(calibration_meta_path(p).read_text())
    except (OSError, ValueError):
        meta = {}
    df["resolves"] = df["resolves"].astype(str).str.lower().isin(["true", "1"])
    return df, meta if isinstance(meta, dict) else {}


def unresolved_note(noise_pct: float, limit_pct: float, resolution_pct: float) -> str:
    """``noise 1.4 %: this case cannot resolve 0.6 %`` (and what it did catch, when it caught any)."""
    noise = f"noise {float(noise_pct):.1f} %" if np.isfinite(noise_pct) else "noise unknown"
    caught = f" (calibrated: catches {float(resolution_pct):.1f} %)" if np.isfinite(resolution_pct) else " (calibrated)"
    return f"{noise}: this case cannot resolve {float(limit_pct):.1f} %{caught}"


def calibrate_comparison(cmp: Any, cal: pd.DataFrame, meta: dict[str, Any], path: str) -> None:
    """``cmp`` (a Comparison) judged with the calibration: its table (apply_calibration), a warning where the
    calibration was made on another GPU or with another rule, and the file named in its metadata."""
    cmp.table = apply_calibration(cmp.table, cal, cmp.rule)
    cmp.calibration = path
    gpu = (meta.get("gpu") or {}).get("uuid") if isinstance(meta.get("gpu"), dict) else None
    tot_gpu = (cmp.tot_env.get("gpu") or {}).get("uuid") if isinstance(cmp.tot_env.get("gpu"), dict) else None
    if gpu and tot_gpu and gpu != tot_gpu:
        cmp.warnings.append(f"{path}: calibrated on another GPU ({gpu}) than TOT ran on ({tot_gpu})")
    known = meta.get("rule") if isinstance(meta.get("rule"), dict) else None
    if known and (known.get("rel"), known.get("abs_us")) != (cmp.rule.rel, cmp.rule.abs_us):
        cmp.warnings.append(f"{path}: calibrated against another rule ({known}): its resolution still stands")


def apply_calibration(table: pd.DataFrame, cal: pd.DataFrame, rule: Rule) -> pd.DataFrame:
    """``table`` (a comparison's) with every calibrated case that cannot resolve the rule's slack noted, and its
    regression or improvement made ``ambiguous`` where it was ``confident``. The input is not changed."""
    key = ["kernel", "case_id"]
    bad = cal.loc[~cal["resolves"], [*key, "noise_pct", "resolution_pct"]]
    m = table[key].reset_index().merge(bad, on=key, how="inner")
    if not len(m):
        return table
    out = table.copy()
    rows = m["index"].to_numpy()
    limit = rule.limits_pct(out.loc[rows, "golden_us"].to_numpy(dtype=np.float64))[0]
    notes = [unresolved_note(n, lim, r) for n, lim, r in zip(m["noise_pct"], limit, m["resolution_pct"])]
    before = out["note"].fillna("").astype(str) if "note" in out.columns else pd.Series("", index=out.index)
    out["note"] = before.astype(object)
    out.loc[rows, "note"] = [f"{b}; {n}" if b else n for b, n in zip(before.loc[rows], notes)]
    if "confidence" in out.columns:
        out["confidence"] = _unsure(out["confidence"], out["verdict"], rows)
    return out


def _unsure(confidence: pd.Series, verdict: pd.Series, rows: np.ndarray) -> pd.Series:
    """``confidence`` with the confident regressions and improvements among ``rows`` made ambiguous (its dtype
    kept: compare's is categorical)."""
    conf = confidence.astype(object).copy()
    flags = verdict.loc[rows].astype(str).isin(["regression", "improvement"]).to_numpy()
    sure = conf.loc[rows].eq("confident").to_numpy()
    conf.loc[rows[flags & sure]] = "ambiguous"
    if isinstance(confidence.dtype, pd.CategoricalDtype):
        return pd.Series(pd.Categorical(conf, categories=confidence.cat.categories), index=conf.index)
    return conf
