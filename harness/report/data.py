"""What the report draws from: results files as runs, each kernel's summary (parameters, roof, plot), the vendor
baselines and the per-dispatch split. Everything is read and checked here, before anything is drawn."""

from __future__ import annotations

import contextlib
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import HarnessError
from harness.fsutil import read_text_file
from harness.results.load import load_results, params_of
from harness.results.schema import TIMED_STATUSES


@dataclass
class Run:
    label: str
    path: Path
    df: pd.DataFrame
    env: dict[str, Any] = field(default_factory=dict)

    def kernel(self, name: str) -> dict[str, Any]:
        """The kernel's summary (harness/kernel_api/spec.py KernelSpec.summary): from the sidecar, else from its
        SPEC (:meth:`_spec`: version 1 files name none), else {}."""
        found = (self.env.get("kernels") or {}).get(name)
        if found:
            return found
        spec = self._spec(name)
        return spec.summary() if spec is not None else {}

    def link_bytes(self, d: pd.DataFrame) -> pd.Series:
        """What one rank sent to its peers over the GPU links in each row of ``d`` (rows of this run), from its
        kernel's SPEC (``link_bytes``): the file the sidecar names, else the shipped kernel of that name. NaN where
        the kernel does not say, or its SPEC cannot be read here."""
        out = pd.Series(np.nan, index=d.index, dtype=np.float64)
        for name, rows in d.groupby("kernel").groups.items():
            spec = self._spec(str(name))
            if spec is None or spec.link_bytes is None:
                continue
            for i in rows:  # a case whose parameters its SPEC cannot count: no point on the NVLink roof
                with contextlib.suppress(KeyError, TypeError, ValueError, ZeroDivisionError):
                    out.at[i] = spec.link_bytes_of(params_of(d.at[i, "params"]))
        return out

    def _spec(self, name: str) -> Any:
        """The kernel's SPEC, read (not imported) from the file the sidecar names, else the shipped kernel of that
        name; None when neither can be read here."""
        from harness.inputs.kernel import load_kernel

        source = (self.env.get("kernel_sources") or {}).get(name)
        for text in ([source] if isinstance(source, str) and Path(source.split(":")[0]).is_file() else []) + [name]:
            try:
                return load_kernel(text).spec
            except HarnessError:
                continue
        return None


def load_runs(paths: list[Path]) -> list[Run]:
    runs = []
    for p in paths:
        df = load_results(p)
        env = df.attrs["env"]  # the sidecar, validated by the loader
        label = str(env.get("env_name") or p.stem)
        if any(r.label == label for r in runs):
            label = p.stem
        runs.append(Run(label, p, df, env))
    return runs


def timed(df: pd.DataFrame) -> pd.DataFrame:
    """The timed rows, with ``work`` (FLOPs), the rates and the arithmetic intensity (FLOP per byte)."""
    d = df[df["status"].isin(TIMED_STATUSES) & df["time_us"].notna()].copy()
    for col in ("flops", "bytes", "tflops", "gbps"):
        if col not in d.columns:
            d[col] = np.nan
    d["work"] = d["flops"]
    # a multi-GPU case counts the FLOPs of all its ranks and the bytes of one: per GPU, its FLOPs are a W-th
    gpus = pd.to_numeric(d["world_size"], errors="coerce") if "world_size" in d.columns else pd.Series(1.0, d.index)
    d["gpus"] = gpus.fillna(1.0).clip(lower=1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        d["intensity"] = d["flops"] / d["gpus"] / d["bytes"]
        d["tflops_gpu"] = d["tflops"] / d["gpus"]
    return d


def params_frame(df: pd.DataFrame) -> pd.DataFrame:
    """One column per parameter of ``df``'s cases (one kernel's rows: the same parameters), in declared order."""
    rows = [params_of(p) for p in df.get("params", pd.Series([""] * len(df)))]
    names = list(dict.fromkeys(k for r in rows for k in r))
    return pd.DataFrame([[r.get(n) for n in names] for r in rows], columns=names, index=df.index)


def parse_vendor(path: Path) -> pd.DataFrame:
    """Vendor-baseline times: a CSV with kernel, case_id, vendor, vendor_us (benchmarks/vendor_baseline.py), or the
    markdown table of docs/vendor-ratios.md (``| kernel | B×M×N×K | ours µs | torch path | torch µs |``)."""
    text = read_text_file(path, f"{path}: no such vendor baseline file", f"{path}: cannot read the vendor baseline")
    if path.suffix == ".md":
        return _vendor_markdown(text, path)
    try:
        df = pd.read_csv(io.StringIO(text))
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise HarnessError(f"{path}: not a vendor CSV ({' '.join(str(err).split())})") from None
    df = df.rename(columns={"torch_path": "vendor", "torch_us": "vendor_us"})
    need = {"kernel", "case_id", "vendor", "vendor_us"}
    if not need <= set(df.columns):
        raise HarnessError(f"{path}: vendor CSV needs columns {', '.join(sorted(need))}")
    return df


def _vendor_markdown(text: str, path: Path) -> pd.DataFrame:
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 6 and re.fullmatch(r"\d+×\d+×\d+×\d+", cells[1]):
            b, m, n, k = cells[1].split("×")
            case_id = f"B{b}_M{m}_N{n}_K{k}"  # the batched GEMMs' case id at their default dtype
            rows.append({"kernel": cells[0], "case_id": case_id, "vendor": cells[3], "vendor_us": float(cells[4])})
    if not rows:
        raise HarnessError(f"{path}: no vendor table rows (| kernel | B×M×N×K | ours µs | torch path | torch µs |)")
    return pd.DataFrame(rows)


def vendor_table(runs: list[Run], vendor: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for run in runs:
        m = timed(run.df).merge(vendor, on=["kernel", "case_id"], how="inner")
        for rec in m.to_dict("records"):
            rows.append(
                {
                    "run": run.label,
                    "kernel": rec["kernel"],
                    "case_id": rec["case_id"],
                    "ours_us": rec["time_us"],
                    "vendor": rec.get("vendor", ""),
                    "vendor_us": rec["vendor_us"],
                    "ratio": rec["time_us"] / rec["vendor_us"],
                }
            )
    return pd.DataFrame(rows)


def dispatch_table(runs: list[Run]) -> pd.DataFrame:
    """One row per dispatch of every op that launched several kernels: its median µs and share of the op."""
    rows = []
    for run in runs:
        if "dispatch_us" not in run.df.columns:
            continue
        for rec in run.df[run.df["dispatch_us"].astype(str).str.startswith("{")].to_dict("records"):
            try:
                parts = json.loads(rec["dispatch_us"])
            except ValueError:
                continue
            if len(parts) < 2:
                continue
            total = sum(parts.values())
            for name, us in parts.items():
                rows.append(
                    {
                        "run": run.label,
                        "kernel": rec["kernel"],
                        "case_id": rec["case_id"],
                        "dispatch": name,
                        "us": us,
                        "share": us / total if total else np.nan,
                        "case_us": rec["time_us"],
                    }
                )
    return pd.DataFrame(rows)
