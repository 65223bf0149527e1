"""Which GPU a results sidecar names: its model and UUID, and whether it merges results of several GPUs (also read
from a calibration's metadata and a worker's hello, which hold the same ``gpu`` object); and, case by case, which
GPU two files' rows name. The one reader of compare's GPU checks (other_gpu, the A/A's, the calibration's), of the
GPUs merge lists and of what the history stores, so that they agree on what is unknown. Pure."""

from __future__ import annotations

from typing import Any

import pandas as pd


def gpu_field(env: dict[str, Any], key: str) -> str:
    """A sidecar's GPU ``key`` (name, uuid), from ``gpu`` or its ``before`` state; '' where it does not say."""
    gpu = env.get("gpu") if isinstance(env.get("gpu"), dict) else {}
    before = gpu.get("before") if isinstance(gpu.get("before"), dict) else {}
    # a worker whose torch reports no UUID still has nvidia-smi's, in the ``before`` state
    v = str(gpu.get(key) or before.get(key) or "").strip()
    return "" if v.startswith("[") else v  # nvidia-smi's [N/A] / [Not Supported]: unknown, not a value to match


def gpu_name(env: dict[str, Any]) -> str:
    """A sidecar's GPU model (``NVIDIA H100 80GB HBM3``); '' where it does not say."""
    return gpu_field(env, "name")


def gpu_uuid(env: dict[str, Any]) -> str:
    """A sidecar's GPU UUID as :func:`uuid_text` writes it; '' where it does not say."""
    return uuid_text(gpu_field(env, "uuid"))


def uuid_text(uuid: str) -> str:
    """A GPU UUID lower case, without nvidia-smi's ``GPU-`` prefix."""
    # torch's UUID has no prefix and nvidia-smi's has: one GPU must read the same from either
    return uuid.strip().lower().removeprefix("gpu-")


def several_gpus(env: dict[str, Any]) -> bool:
    """Whether a sidecar is of results merged from parts measured on several GPUs or hosts (harness merge,
    ``--gpus``): its ``gpu`` is only the first part's, so its UUID and host stand for no one GPU."""
    parts = env.get("parts") if isinstance(env.get("parts"), list) else []
    hosts = {str(p.get("host")) for p in parts if isinstance(p, dict) and not p.get("empty")}
    return len(env.get("gpus") or []) > 1 or len(hosts) > 1


def rows_on_other_gpus(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    """(kernel, case_id, gpu, gpu_other) of each case whose rows in ``a`` and ``b`` name different physical GPUs
    (their ``gpu`` column), in ``a``'s order; empty where they agree or a row does not say."""
    cols = ["kernel", "case_id", "gpu"]
    none = pd.DataFrame(columns=[*cols, "gpu_other"])
    if "gpu" not in a.columns or "gpu" not in b.columns:
        return none
    if not (a["gpu"].astype(str).str.len().any() and b["gpu"].astype(str).str.len().any()):
        return none  # no row names a GPU (CPU runs, older files): nothing to check, and no join to pay for
    j = a[cols].merge(b[cols], on=["kernel", "case_id"], suffixes=("", "_other"))
    return j[(j["gpu"].astype(str) != "") & (j["gpu_other"].astype(str) != "") & (j["gpu"] != j["gpu_other"])]
