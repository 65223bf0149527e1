"""What a results file or a comparison becomes in the database: one row of ``runs`` / ``comparisons`` and its
rows, as plain dicts. Pure: checked frames (the one loader's) in, records out; no database."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.history.schema import (
    CALIBRATION_FLOAT,
    CALIBRATION_INT,
    RESULT_FLOAT,
    RESULT_INT,
    RESULT_TEXT,
    VERDICT_FLOAT,
    VERDICT_TEXT,
)
from harness.results.cells import number
from harness.results.gpu import gpu_name, gpu_uuid

#: tags are words: letters, digits and ``-_.:/`` (stored comma-joined, sorted)
TAG_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/")


def content_hash(data: bytes, *measured_at: Any) -> str:
    """The key of a stored file: the SHA-256 of its bytes and of when it was measured (the sidecar's
    ``captured_at``; a comparison's two), so the same file is stored once, wherever it lies, and two runs whose
    CSVs happen to match byte for byte are still two runs."""
    h = hashlib.sha256(data)
    for when in measured_at:
        h.update(b"\0" + str(when or "").encode())
    return h.hexdigest()


def dig(env: dict[str, Any], *keys: str) -> Any:
    """``env[k1][k2]...`` or None."""
    cur: Any = env
    for k in keys:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(k)
    return cur


def parse_when(text: Any) -> datetime | None:
    """An ISO 8601 time (``2026-11-22T03:04:05Z``, a date, with or without a zone) as naive UTC; None if absent or
    unreadable."""
    if not isinstance(text, str) or not text.strip():
        return None
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return when.astimezone(timezone.utc).replace(tzinfo=None) if when.tzinfo else when


def join_tags(*groups: Any) -> str:
    """Tags of several sources as stored: unique, sorted, comma-joined."""
    found = {t.strip() for g in groups for t in (g.split(",") if isinstance(g, str) else g or ()) if t.strip()}
    return ",".join(sorted(found))


def bad_tag(tag: str) -> bool:
    return not tag or not set(tag) <= TAG_CHARS


def _text(v: Any) -> str | None:
    return None if v is None else str(v)


def run_record(
    df: pd.DataFrame,
    path: Path,
    digest: str,
    *,
    added_by: str,
    label: str = "",
    tags: str = "",
    commit: str | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """The ``runs`` row of a loaded results file (``df.attrs['env']``: its sidecar, ``{}`` when it has none)."""
    env: dict[str, Any] = df.attrs.get("env") or {}
    run_at, source = parse_when(env.get("captured_at")), "sidecar"
    if run_at is None:
        run_at, source = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).replace(tzinfo=None), "file"
    gpu = env.get("gpu") if isinstance(env.get("gpu"), dict) else {}
    before = gpu.get("before") if isinstance(gpu.get("before"), dict) else {}
    timing = env.get("timing") or _mode(df, "timing")
    reps = dig(env, "run_options", "reps")
    return {
        "content_hash": digest,
        "path": str(path),
        "file_name": path.name,
        "added_at": now or datetime.now(timezone.utc).replace(tzinfo=None),
        "added_by": added_by,
        "run_at": run_at,
        "run_at_source": source,
        "env_name": str(env.get("env_name") or path.stem),
        "suite": _text(env.get("suite")),
        "schema_version": int(df.attrs.get("schema_version", 2)),
        "rows": len(df),
        "timing": _text(timing),
        "host": _text(env.get("host")),
        "gpu_name": gpu_name(env) or None,
        "gpu_uuid": gpu_uuid(env) or None,
        "gpu_arch": _text(env.get("arch") or gpu.get("arch")),
        "driver": _text(gpu.get("driver") or before.get("driver")),
        "triton_version": _text(dig(env, "triton", "version")),
        "triton_commit": _text(dig(env, "triton", "commit")),
        "triton_path": _text(dig(env, "triton", "path")),
        "torch_version": _text(dig(env, "torch", "version")),
        "gpu_runtime": _text(dig(env, "torch", "gpu_runtime")),
        "python_version": _text(dig(env, "python", "version")),
        "sm_clock_mhz": number(before.get("sm_clock_mhz")),
        "mem_clock_mhz": number(before.get("mem_clock_mhz")),
        "launch_gap": _text(env.get("launch_gap")),
        "placement": _text(env.get("placement")),
        "move_inputs": env.get("move_inputs") if isinstance(env.get("move_inputs"), bool) else None,
        "launches_per_rep": int(env["launches_per_rep"]) if number(env.get("launches_per_rep")) is not None else None,
        "reps": int(reps) if number(reps) is not None else None,
        "knobs": json.dumps(env.get("knobs"), sort_keys=True) if env.get("knobs") is not None else None,
        "git_commit": commit or _text(env.get("git_commit") or dig(env, "git", "commit")),
        "sidecar": json.dumps(env, sort_keys=True, default=str),
        "label": label,
        "tags": tags,
        "calibration_id": None,  # set by the store: the calibration the sidecar records, stored with the run
    }


def _mode(df: pd.DataFrame, col: str) -> str | None:
    if col not in df.columns:
        return None
    vals = df[col].astype(str)
    vals = vals[vals != ""]
    return str(vals.mode().iloc[0]) if len(vals) else None


def _column(df: pd.DataFrame, name: str, kind: str) -> list[Any]:
    """One column as Python values for the database: NaN and empty text become NULL."""
    n = len(df)
    if name not in df.columns:
        return [None] * n
    col = df[name]
    if kind == "text":
        missing = col.isna().to_numpy()
        vals = col.astype(str).to_numpy(dtype=object)
        vals[missing | (vals == "")] = None
        return vals.tolist()
    arr = pd.to_numeric(col, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    ok = np.isfinite(arr)
    vals = (arr.astype(np.int64) if kind == "int" else arr).astype(object) if ok.all() else _ints(arr, ok, kind)
    vals[~ok] = None
    return vals.tolist()


def _ints(arr: np.ndarray, ok: np.ndarray, kind: str) -> np.ndarray:
    out = np.where(ok, arr, 0)
    return (out.astype(np.int64) if kind == "int" else out).astype(object)


def _rows(df: pd.DataFrame, columns: dict[str, str], fixed: dict[str, Any], extra: list[str]) -> Rows:
    names = list(fixed) + list(columns) + (["extra"] if extra else [])
    arrays: list[list[Any]] = [[v] * len(df) for v in fixed.values()]
    arrays += [_column(df, name, kind) for name, kind in columns.items()]
    if extra:
        arrays.append(_extra(df, extra))
    return Rows(names, list(zip(*arrays)))


@dataclass
class Rows:
    """Rows to insert: the column names and one tuple per row (tuples: a million rows cost a fraction of
    dicts, and go to the driver as they are)."""

    names: list[str]
    values: list[tuple]

    def __len__(self) -> int:
        return len(self.values)

    def dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.names, v)) for v in self.values]


def _extra(df: pd.DataFrame, extra: list[str]) -> list[str | None]:
    """Columns the format does not name (kept by the loader) as one JSON object per row, or NULL."""
    sub = df[extra].astype(object).where(df[extra].notna(), None)
    out = []
    for row in sub.itertuples(index=False, name=None):
        kept = {k: v for k, v in zip(extra, row) if v is not None and v != ""}
        out.append(json.dumps(kept, default=str) if kept else None)
    return out


RESULT_COLUMNS = {
    "kernel": "text",
    "case_id": "text",
    **{c: "text" for c in RESULT_TEXT},
    **{c: "float" for c in RESULT_FLOAT},
    **{c: "int" for c in RESULT_INT},
}


def result_rows(df: pd.DataFrame, run_id: int) -> Rows:
    """Every row of a results frame as a ``results`` row of run ``run_id``."""
    extra = [c for c in df.columns if c not in RESULT_COLUMNS]
    return _rows(df, RESULT_COLUMNS, {"run_id": run_id}, extra)


VERDICT_COLUMNS = {
    "kernel": "text",
    "case_id": "text",
    **{c: "text" for c in VERDICT_TEXT},
    **{c: "float" for c in VERDICT_FLOAT},
}


def verdict_rows(table: pd.DataFrame, comparison_id: int) -> Rows:
    """Every row of a comparison's table as a ``verdicts`` row."""
    return _rows(table, VERDICT_COLUMNS, {"comparison_id": comparison_id}, [])


def comparison_record(
    cmp: Any, path: Path, digest: str, *, added_by: str, label: str = "", tags: str = "", now: datetime | None = None
) -> dict[str, Any]:
    """The ``comparisons`` row of a loaded comparison (``harness.compare.store.load_compare``); the run links are
    set by the store."""
    genv, tenv = cmp.golden_env or {}, cmp.tot_env or {}
    times = [t for t in (parse_when(genv.get("captured_at")), parse_when(tenv.get("captured_at"))) if t]
    counts = cmp.counts()
    meta = {
        "rule": cmp.rule.record(),
        "golden": {"path": cmp.golden_path, "env": _without_kernels(genv)},
        "tot": {"path": cmp.tot_path, "env": _without_kernels(tenv)},
    }
    if cmp.calibration:  # which calibration judged it (its figures are stored with the calibration)
        meta["calibration"] = {k: v for k, v in cmp.calibration.items() if k not in ("columns", "rows")}
    if cmp.process_noise:  # the A/A that widened its intervals (--aa): file, σ_p per kernel
        meta["process_noise"] = cmp.process_noise
    return {
        "content_hash": digest,
        "path": str(path),
        "file_name": path.name,
        "added_at": now or datetime.now(timezone.utc).replace(tzinfo=None),
        "added_by": added_by,
        "compared_at": max(times) if times else None,
        "rule_rel": cmp.rule.rel,
        "rule_abs_us": cmp.rule.abs_us,
        "rule_min_golden_us": cmp.rule.min_golden_us,
        "golden_run_id": None,
        "tot_run_id": None,
        "golden_path": cmp.golden_path or None,
        "tot_path": cmp.tot_path or None,
        "golden_env_name": _text(genv.get("env_name")),
        "tot_env_name": _text(tenv.get("env_name")),
        "golden_triton": _text(dig(genv, "triton", "version")),
        "tot_triton": _text(dig(tenv, "triton", "version")),
        "gpu_name": gpu_name(tenv) or gpu_name(genv) or None,
        "gpu_uuid": gpu_uuid(tenv) or gpu_uuid(genv) or None,
        "host": _text(tenv.get("host") or genv.get("host")),
        "same_triton": bool(cmp.same_triton),
        "cases": len(cmp.table),
        "regressions": counts.get("regression", 0),
        "failed_in_tot": counts.get("failed_in_tot", 0),
        "improvements": counts.get("improvement", 0),
        "ambiguous": _ambiguous_regressions(cmp),
        "counts": json.dumps(counts),
        "meta": json.dumps(meta, sort_keys=True, default=str),
        "label": label,
        "tags": tags,
        "calibration_id": None,  # set by the store: the calibration it was judged with
    }


def _ambiguous_regressions(cmp: Any) -> int | None:
    """Regressions whose interval straddles the limit; None for a comparison written before compare judged how
    sure it is (no ``confidence`` column): unknown, not zero."""
    if "confidence" not in cmp.table.columns:
        return None
    return int(cmp.ambiguous_counts().get("regression", 0))


def _without_kernels(env: dict[str, Any]) -> dict[str, Any]:
    """A sidecar without its kernels' summaries and its calibration's figures (kept with the runs and the
    calibrations; a comparison needs the stacks only)."""
    out = {k: v for k, v in env.items() if k != "kernels"}
    if isinstance(out.get("calibration"), dict):
        out["calibration"] = {k: v for k, v in out["calibration"].items() if k not in ("columns", "rows")}
    return out


def calibration_record(
    table: pd.DataFrame,
    meta: dict[str, Any],
    path: Path,
    digest: str,
    *,
    added_by: str,
    label: str = "",
    tags: str = "",
    now: datetime | None = None,
    sha256: str | None = None,
) -> dict[str, Any]:
    """The ``calibrations`` row of a loaded calibration file (harness.compare.calibration.load_calibration), or of
    the record a sidecar or a comparison keeps of one (record_table); ``sha256``: of calibration.csv's bytes."""
    repeats = number(meta.get("repeats"))
    return {
        "content_hash": digest,
        "path": str(path),
        "file_name": path.name,
        "added_at": now or datetime.now(timezone.utc).replace(tzinfo=None),
        "added_by": added_by,
        "calibrated_at": parse_when(meta.get("captured_at")),
        "env_name": _text(meta.get("env")),
        "triton_version": _text(dig(meta, "triton", "version")),
        "gpu_name": gpu_name(meta) or None,
        "gpu_uuid": gpu_uuid(meta) or None,
        "host": _text(meta.get("host")),
        "slowdowns": ",".join(str(x) for x in meta.get("slowdowns") or []),
        "repeats": int(repeats) if repeats is not None else None,
        "cases": len(table),
        "unresolved": int((~table["resolves"].astype(bool)).sum()),
        "meta": json.dumps(meta, sort_keys=True, default=str),
        "label": label,
        "tags": tags,
        "sha256": sha256,
    }


def recorded_calibration_key(sha256: str, captured_at: Any) -> str:
    """The ``content_hash`` of a calibration stored from a record (its file's bytes not at hand): of the file's
    SHA-256 and when it was calibrated. Adding the file itself later finds it by ``sha256``."""
    return content_hash(b"calibration record " + sha256.encode(), captured_at)


CALIBRATION_COLUMNS = {
    "kernel": "text",
    "case_id": "text",
    **{c: "float" for c in CALIBRATION_FLOAT},
    **{c: "int" for c in CALIBRATION_INT},
    "caught": "text",
}


def calibration_rows(table: pd.DataFrame, calibration_id: int) -> Rows:
    """Every case of a calibration as a ``calibration_cases`` row."""
    rows = _rows(table, CALIBRATION_COLUMNS, {"calibration_id": calibration_id}, [])
    resolves = table["resolves"].astype(bool).tolist()
    return Rows([*rows.names, "resolves"], [(*v, r) for v, r in zip(rows.values, resolves)])
