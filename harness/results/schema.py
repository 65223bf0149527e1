"""The results-file contract, as data: columns, statuses, and what each row means. Pure.

One CSV row per (kernel, case); a ``<results>.env.json`` sidecar beside it (docs/results-format.md). Version 2
holds any kernel's parameters (``params``, a JSON object) and each row's work (``flops``, ``bytes``, ``peak``);
version 1 files (batched GEMMs: ``B``, ``M``, ``N``, ``K`` columns) still load, upgraded on read (v1.py).
"""

from __future__ import annotations

import os
from pathlib import Path

SCHEMA_VERSION = 2

STATUSES = (
    "ok",
    "compile_error",
    "runtime_error",
    "timeout",
    "incorrect",
    "unstable",
    "skipped",
    "import_error",
    # the profiler's records could not be the rep's launches (a second clock disagreed, records missing): no time,
    # never a verdict; the kernel is not at fault (harness/worker/clocks.py)
    "instrument",
)
#: statuses whose row carries a usable time (``unstable``: the median of 5 disagreeing reps)
TIMED_STATUSES = ("ok", "unstable")
REQUIRED = ("kernel", "case_id", "time_us", "status")
#: the largest ``world_size`` a row may give: GPUs in one case, far beyond any machine's; a larger number is a typo
#: or an overflow (1e300 would wrap round as an int64)
MAX_WORLD_SIZE = 1_048_576
#: ``rep_procs``: the worker process (epoch) that timed each rep. Epochs below this are the first pass (its reps
#: split over several processes); each re-measuring pass after it is a fresh epoch from this number on, which
#: compare reads as the confirmation of the first pass (run/schedule.py, verdict/confirm.py)
FIRST_EXTRA_EPOCH = 5
#: the column order the runner writes
COLUMNS = (
    "kernel",
    "case_id",
    "params",
    "dtype",
    "world_size",
    "status",
    "time_us",
    "config",
    "config_source",
    "reps",
    "rep_times_us",
    "rep_procs",
    "spread_pct",
    "dispatch_us",
    "rank_times_us",
    "skew_pct",
    "flops",
    "bytes",
    "peak",
    "tflops",
    "gbps",
    "compile_s",
    "rel_err",
    "timing",
    "gpu",
    "sm_clock_mhz",
    "rep_clocks_mhz",
    "throttle",
    "gpu_temp_c",
    "error",
    "artifacts",
)
TEXT_COLUMNS = (
    "kernel",
    "case_id",
    "status",
    "params",
    "dtype",
    "peak",
    "config",
    "config_source",
    "rep_times_us",
    "rep_procs",
    "dispatch_us",
    "rank_times_us",
    "timing",
    "gpu",
    "rep_clocks_mhz",
    "throttle",
    "error",
    "artifacts",
)
NUMBER_COLUMNS = (
    "reps",
    "spread_pct",
    "skew_pct",
    "flops",
    "bytes",
    "tflops",
    "gbps",
    "compile_s",
    "rel_err",
    "sm_clock_mhz",
    "gpu_temp_c",
)
#: version 1's shape columns (v1.py): read as numbers too
SHAPE_COLUMNS = ("B", "M", "N", "K")
#: every column whose cells must be numbers (where present): both readers read them as numbers alone
NUMBERS = (*NUMBER_COLUMNS, *SHAPE_COLUMNS, "time_us", "world_size")
#: floats written with 6 significant digits (rates, ratios); every other float with 4 decimals (µs round-trip)
SIGNIFICANT = ("spread_pct", "skew_pct", "tflops", "gbps", "rel_err", "flops", "bytes")


#: the sidecar's fields harness reads, and the JSON each must be where it is not null (docs/results-format.md):
#: "object", "list", "text" or "integer". A sidecar edited into another type is refused, not read as something else
SIDECAR_FIELDS = {
    "schema_version": "integer",
    "env_name": "text",
    "host": "text",
    "timing": "text",
    "suite": "text",
    "suite_content": "text",
    "artifacts_dir": "text",
    "shard": "text",
    "gpu": "object",
    "triton": "object",
    "torch": "object",
    "python": "object",
    "knobs": "object",
    "kernels": "object",
    "integrity": "object",
    "remeasure": "object",
    "run_options": "object",
    "gpus": "list",
    "parts": "list",
    "visible_gpus": "list",
    "launches_per_rep": "integer",
}


def sidecar_path(results: str | os.PathLike[str]) -> Path:
    """``results.csv`` → ``results.csv.env.json``."""
    p = Path(results)
    return p.with_name(p.name + ".env.json")


def written_sidecar(meta: dict | None) -> bool:
    """Whether a sidecar's content (a JSON object, or None) is one harness wrote: a run's (its schema version) or
    a merge's (its parts). The one such file an output beside a results file may replace."""
    return isinstance(meta, dict) and ("schema_version" in meta or isinstance(meta.get("parts"), list))


def artifacts_dir(results: str | os.PathLike[str], env: dict | None = None) -> Path:
    """The folder ``harness run --artifacts`` keeps a results file's compiled kernels in: the sidecar's
    ``artifacts_dir`` when it names one, else ``<stem>.artifacts`` beside the results file."""
    p = Path(results)
    name = (env or {}).get("artifacts_dir") or (p.stem + ".artifacts")
    return p.with_name(name)
