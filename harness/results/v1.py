"""Version 1 results files (written before 2026-11-24): batched GEMMs only, their shape in ``B``, ``M``, ``N``, ``K``
columns and their work only as rates. Upgraded on read to version 2's columns, so every committed report keeps
loading, comparing and rendering."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.results.schema import SHAPE_COLUMNS

SHAPE = SHAPE_COLUMNS
#: the largest dimension a shape cell may hold: every integer up to it is exact in the float64 it is read as, and
#: the int64 it is typed as, and no other integer reads as one of them (2**53 + 1 reads as 2**53; a larger one
#: wrapped round to a negative size, or was silently another number)
MAX_DIM = 2**53 - 1
#: the roof each version-1 kernel was judged against (the kernels declare it since version 2)
PEAKS = {
    "batched_gemm_bf16": "bf16",
    "batched_gemm_a8w8": "int8",
    "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant": "fp8",
    "batched_gemm_a16wfp4": "fp4",
    "batched_gemm_afp4wfp4": "fp4",
}


def is_v1(df: pd.DataFrame) -> bool:
    return "params" not in df.columns and any(c in df.columns for c in SHAPE)


def check_shapes(df: pd.DataFrame, path: Path, lines: Any, numeric: Callable, first_bad: Callable) -> None:
    """``B, M, N, K`` are non-negative integers where present (typed in place as nullable ints)."""
    for col in SHAPE:
        if col in df.columns:
            vals = numeric(path, lines, df[col], col, what="is not a non-negative integer:")
            known = ~np.isnan(vals)
            bad = known & ((vals % 1 != 0) | (vals < 0) | np.isinf(vals))
            first_bad(path, lines, bad, "is not a non-negative integer:", df[col], col)
            huge = known & (vals > MAX_DIM)
            first_bad(
                path, lines, huge, f"is larger than any dimension (at most 2**53 - 1 = {MAX_DIM:,}):", df[col], col
            )
            df[col] = pd.array(np.where(known, vals, 0).astype(np.int64), dtype="Int64")
            df.loc[~known, col] = pd.NA


def upgrade(df: pd.DataFrame) -> pd.DataFrame:
    """The frame with version 2's columns: ``params`` from the shape columns (keys sorted, as version 2 writes
    them), ``flops`` and ``bytes`` from the recorded rates and times, ``peak`` from the kernel, ``world_size`` 1."""
    out = df.drop(columns=[c for c in SHAPE if c in df.columns])
    out.insert(2, "params", _params(df))
    if all(c in df.columns for c in SHAPE):  # every version-1 kernel is a batched GEMM: 2·B·M·N·K exactly
        out["flops"] = 2.0 * np.prod([df[c].to_numpy(dtype=np.float64, na_value=np.nan) for c in SHAPE], axis=0)
    if "gbps" in df.columns:  # bytes were recorded only as a rate (6 digits): whole bytes within 1e-6
        rate = pd.to_numeric(df["gbps"], errors="coerce").to_numpy(dtype=np.float64)
        out["bytes"] = np.round(rate * df["time_us"].to_numpy(dtype=np.float64) * 1e3)
    out["peak"] = df["kernel"].map(PEAKS).fillna("")
    out["world_size"] = pd.array(np.ones(len(df), dtype=np.int64), dtype="Int64")
    out.attrs.update(df.attrs, schema_version=1)
    return out


def _params(df: pd.DataFrame) -> pd.Series:
    cols = [c for c in sorted(SHAPE) if c in df.columns]
    text = pd.Series(["{"] * len(df), index=df.index, dtype=object)
    for i, c in enumerate(cols):
        v = df[c].astype("string").fillna("null")
        text = text + ("," if i else "") + f'"{c}":' + v.astype(object)
    return text + "}"


def upgrade_compare(table: pd.DataFrame) -> pd.DataFrame:
    """A version 1 compare table (shape columns) with version 2's ``params`` and ``flops`` columns."""
    if "params" in table.columns or not all(c in table.columns for c in SHAPE):
        return table
    out = table.drop(columns=list(SHAPE))
    shape = table[list(SHAPE)].apply(pd.to_numeric, errors="coerce").astype("Int64")
    out.insert(2, "params", _params(shape))
    out["flops"] = 2.0 * np.prod([shape[c].to_numpy(dtype=np.float64, na_value=np.nan) for c in SHAPE], axis=0)
    out["peak"] = table["kernel"].map(PEAKS).fillna("")
    return out
