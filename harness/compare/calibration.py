"""A calibration file (``harness calibrate``'s ``calibration.csv`` and its ``.meta.json``) and what compare makes
of it: a case whose calibrated resolution is coarser than the rule's slack says so in its note, and its flags are
``ambiguous``, never ``confident`` (docs/verdicts.md)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import HarnessError
from harness.fsutil import file_sha256
from harness.results.gpu import gpu_name, gpu_uuid, several_gpus
from harness.verdict.rule import Rule

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
    try:
        meta = json.loads(calibration_meta_path(p).read_text())
    except (OSError, ValueError):
        meta = {}
    return _checked(df, what), meta if isinstance(meta, dict) else {}


def _checked(df: pd.DataFrame, what: str) -> pd.DataFrame:
    """A calibration table whose columns and cases are checked (one line naming ``what`` otherwise), with
    ``resolves`` as bools."""
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise HarnessError(f"{what}: not a calibration file (no column {', '.join(missing)})")
    if df.duplicated(["kernel", "case_id"]).any():
        row = df[df.duplicated(["kernel", "case_id"])].iloc[0]
        raise HarnessError(f"{what}: case {row['kernel']}/{row['case_id']} listed twice")
    df["resolves"] = df["resolves"].astype(str).str.lower().isin(["true", "1"])
    return df


# -- a calibration kept with the results ------------------------------------------------------------------------


def calibration_record(table: pd.DataFrame, meta: dict[str, Any], path: str | os.PathLike[str]) -> dict[str, Any]:
    """What a results sidecar (``calibration``) and a comparison's ``.meta.json`` keep of a calibration file: where
    it was, its SHA-256, its metadata and every case's figures (``columns`` and ``rows``, null for NaN): enough to
    judge with it, and to store it in the history, once the file itself is gone."""
    cols = [c for c in CALIBRATION_COLUMNS if c in table.columns]
    split = json.loads(table[cols].to_json(orient="split", index=False, double_precision=15))
    return {
        "path": str(Path(path).resolve()),
        "sha256": file_sha256(path),
        "meta": json.loads(json.dumps(meta, default=str)),
        "columns": split["columns"],
        "rows": split["data"],
    }


def record_table(record: Any, what: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The table and metadata of a :func:`calibration_record` read back from a sidecar or a comparison's metadata
    (``what`` names where, for the one line a malformed one gets)."""
    if not isinstance(record, dict):
        raise HarnessError(f"{what}: not a calibration record (expected an object, got {type(record).__name__})")
    cols, rows = record.get("columns"), record.get("rows")
    if not (isinstance(cols, list) and isinstance(rows, list)) or not all(isinstance(r, list) for r in rows):
        raise HarnessError(f"{what}: not a calibration record (no 'columns' and 'rows' lists)")
    bad = next((i for i, r in enumerate(rows) if len(r) != len(cols)), None)
    if bad is not None:
        raise HarnessError(f"{what}: row {bad + 1} has {len(rows[bad])} values for {len(cols)} columns")
    df = pd.DataFrame(rows, columns=[str(c) for c in cols])
    for c in df.columns:  # as the CSV reads: names as text, figures as numbers (a column all null included)
        if c in ("kernel", "case_id"):
            df[c] = df[c].astype(str)
        elif c not in ("resolves", "caught"):
            df[c] = pd.to_numeric(df[c], errors="coerce")
    meta = record.get("meta")
    return _checked(df, what), meta if isinstance(meta, dict) else {}


def check_gpu(meta: dict[str, Any], env: dict[str, Any], what: str, where: str) -> str:
    """A calibration used with results measured on ``env``'s GPU (a sidecar, or anything holding its ``gpu``):
    another GPU *model* is refused (one line: its figures are that model's noise), another GPU of the same model is
    a warning (returned; '' when they agree, either does not say, or ``env`` merges several GPUs' results).
    ``what``: the calibration; ``where``: the results, as "TOT ran on"."""
    cal_name, name = gpu_name(meta), gpu_name(env)
    if cal_name and name and cal_name != name:
        raise HarnessError(
            f"{what}: calibrated on {cal_name} but {where} {name}: a calibration holds for the GPU model it was "
            "made on (harness calibrate on this one)"
        )
    cal_uuid, uuid = gpu_uuid(meta), "" if several_gpus(env) else gpu_uuid(env)
    if cal_uuid and uuid and cal_uuid != uuid:
        return (
            f"{what}: calibrated on another {cal_name or 'GPU'} (GPU-{cal_uuid}) than {where} (GPU-{uuid}): its "
            "figures are that GPU's"
        )
    return ""


def check_cases(cal: pd.DataFrame, kernels: Any, case_ids: Any, what: str, where: str) -> int:
    """How many of the cases (``kernels``, ``case_ids``: parallel sequences) the calibration holds; none is
    refused (one line: a calibration of another suite, or of other kernels)."""
    have = pd.MultiIndex.from_arrays([cal["kernel"].astype(str), cal["case_id"].astype(str)])
    wanted = pd.MultiIndex.from_arrays([pd.Series(kernels, dtype=object).astype(str),
                                        pd.Series(case_ids, dtype=object).astype(str)])  # fmt: skip
    n = int(wanted.isin(have).sum())
    if len(wanted) and not n:
        eg = "/".join(min(have)) if len(have) else "?"
        raise HarnessError(
            f"{what}: calibrates none of the {len(wanted)} cases {where} (it holds {len(have)}, e.g. {eg}): a "
            "calibration of another suite?"
        )
    return n


def run_calibration(
    path: Path, cases: Sequence[Any], suite: str, warn: Callable[[str], None]
) -> tuple[dict[str, Any], Callable[[dict[str, Any]], None]]:
    """``harness run --calibration``: the record every sidecar keeps (compare judges with it: docs/verdicts.md) and
    the check of the worker's GPU. Refused (one line, before anything runs): a file that is not a calibration, or
    one that holds none of the selected ``cases``; once the worker reports its GPU, a calibration of another GPU
    model. Another GPU of the same model is a warning (once, through ``warn``), said again by compare."""
    table, meta = load_calibration(path)
    what = f"--calibration {path}"
    check_cases(table, [c.name for c in cases], [c.case_id for c in cases], what, f"selected from {suite}")
    said: set[str] = set()

    def check(info: dict[str, Any]) -> None:
        # rank 0's GPU, the one the sidecar names: a group's ``gpus`` are not a merge's
        warning = check_gpu(meta, {"gpu": info.get("gpu")}, what, "this run measures on")
        if warning and warning not in said:
            said.add(warning)
            warn(warning)

    return {"calibration": calibration_record(table, meta, path)}, check


def unresolved_note(noise_pct: float, limit_pct: float, resolution_pct: float) -> str:
    """``noise 1.4 %: this case cannot resolve 0.6 %`` (and what it did catch, when it caught any)."""
    noise = f"noise {float(noise_pct):.1f} %" if np.isfinite(noise_pct) else "noise unknown"
    caught = f" (calibrated: catches {float(resolution_pct):.1f} %)" if np.isfinite(resolution_pct) else " (calibrated)"
    return f"{noise}: this case cannot resolve {float(limit_pct):.1f} %{caught}"


def pick_calibration(
    cmp: Any, explicit: str | os.PathLike[str] | None, recorded: bool = True
) -> tuple[pd.DataFrame, dict[str, Any], dict[str, Any]] | None:
    """The calibration ``cmp`` (a Comparison) is judged with, as (table, metadata, record with its ``source``):
    ``--calibration FILE`` when given (it wins over what the sidecars record), else the one golden's sidecar
    records (``harness run --calibration``), else TOT's; None when there is none or ``recorded`` is off
    (``--no-calibration``). Two sidecars that record different calibrations: golden's, and a warning."""
    if explicit is not None:  # the sidecars' records are not read, only named: a bad one does not stand in its way
        table, meta = load_calibration(explicit)
        rec = {**calibration_record(table, meta, explicit), "source": "--calibration"}
        named = [env.get("calibration") for env in (cmp.golden_env, cmp.tot_env) if isinstance(env, dict)]
        others = sorted({str(r.get("path")) for r in named if isinstance(r, dict) and r.get("sha256") != rec["sha256"]})
        if others:
            rec["instead_of"] = others[0]  # what the sidecars named: said beside the one used
        return table, meta, rec
    found = _recorded(cmp) if recorded else []
    if not found:
        return None
    side, table, meta, rec = found[0]
    rec = {**rec, "source": f"{side}'s sidecar"}
    if len(found) > 1 and found[1][3].get("sha256") == rec.get("sha256"):
        rec["source"] = "golden's and TOT's sidecars"
    elif len(found) > 1:
        cmp.warnings.append(
            f"golden's and TOT's sidecars record different calibrations ({rec.get('path')} vs "
            f"{found[1][3].get('path')}): used golden's; pass --calibration to choose"
        )
    return table, meta, rec


def _recorded(cmp: Any) -> list[tuple[str, pd.DataFrame, dict[str, Any], dict[str, Any]]]:
    """(side, table, metadata, record) of each sidecar that records a calibration, golden's first."""
    from harness.results.schema import sidecar_path

    out = []
    for side, env, path in (("golden", cmp.golden_env, cmp.golden_path), ("TOT", cmp.tot_env, cmp.tot_path)):
        if isinstance(env, dict) and env.get("calibration") is not None:
            where = f"{sidecar_path(path)}: calibration" if path else f"{side}'s sidecar: calibration"
            table, meta = record_table(env["calibration"], where)
            out.append((side, table, meta, env["calibration"]))
    return out


def calibrate_comparison(cmp: Any, cal: pd.DataFrame, meta: dict[str, Any], rec: dict[str, Any]) -> None:
    """``cmp`` (a Comparison) judged with the calibration (pick_calibration's): its table (apply_calibration);
    refused when it was made on another GPU model than TOT ran on or holds none of the compared cases; a warning
    for another GPU of the model or another rule; ``cmp.calibration`` the record, with how many compared cases it
    calibrated and how many of them cannot resolve the rule (the metadata's ``calibration``)."""
    source = rec.get("source")
    what = f"--calibration {rec.get('path')}" if source == "--calibration" else f"{rec.get('path')} (from {source})"
    env = cmp.tot_env if gpu_name(cmp.tot_env) else cmp.golden_env
    warning = check_gpu(meta, env, what, "TOT ran on" if env is cmp.tot_env else "golden ran on")
    n = check_cases(cal, cmp.table["kernel"], cmp.table["case_id"], what, "compared")
    cmp.table = apply_calibration(cmp.table, cal, cmp.rule)
    compared = cmp.table[["kernel", "case_id"]].astype(str)
    coarse = cal.loc[~cal["resolves"], ["kernel", "case_id"]].astype(str).merge(compared, on=["kernel", "case_id"])
    cmp.calibration = {**rec, "calibrated": n, "cannot_resolve": len(coarse)}
    if warning:
        cmp.warnings.append(warning)
    known = meta.get("rule") if isinstance(meta.get("rule"), dict) else None
    if known and (known.get("rel"), known.get("abs_us")) != (cmp.rule.rel, cmp.rule.abs_us):
        cmp.warnings.append(f"{what}: calibrated against another rule ({known}): its resolution still stands")


def calibration_line(calibration: dict[str, Any], cases: int) -> str:
    """The line compare shows for the calibration it used (terminal, markdown): which file, found where, and how
    much of the comparison it calibrated; '' for none."""
    if not calibration:
        return ""
    line = f"{calibration.get('path', '?')} ({calibration.get('source', '?')}"
    if calibration.get("instead_of"):
        line += f", not the sidecars' {calibration['instead_of']}"
    if "calibrated" in calibration:
        line += f"): {calibration['calibrated']} of {cases} cases calibrated"
        return line + f", {calibration.get('cannot_resolve', 0)} cannot resolve the rule"
    return line + ")"


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
