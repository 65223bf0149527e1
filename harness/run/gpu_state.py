"""GPU state from the vendor's command-line tool (driver, clocks, temperature, throttle reasons) and which
physical GPU it is (UUID, serial, PCI bus), read by the driver before and after a run. Missing tools give ``{}``:
a CPU-only machine has no GPU state."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

NVIDIA_FIELDS = {
    "name": "name",
    "driver_version": "driver",
    "clocks.sm": "sm_clock_mhz",
    "clocks.mem": "mem_clock_mhz",
    "clocks.max.sm": "sm_clock_max_mhz",
    "temperature.gpu": "temperature_c",
    "power.draw": "power_w",
    "clocks_throttle_reasons.active": "throttle_reasons",
    "uuid": "uuid",
    "serial": "serial",
    "pci.bus_id": "pci_bus_id",
}


def nvidia_state(index: int | str = 0) -> dict[str, Any]:
    """``index``: nvidia-smi's --id, an index or a UUID (``GPU-…``)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return {}
    try:
        r = subprocess.run(
            [smi, f"--id={index}", "--format=csv,noheader,nounits", "--query-gpu=" + ",".join(NVIDIA_FIELDS)],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired):
        return {}
    if r.returncode:
        return {}
    vals = [v.strip() for v in r.stdout.strip().split(",")]
    out: dict[str, Any] = {}
    for key, v in zip(NVIDIA_FIELDS.values(), vals, strict=False):
        try:
            out[key] = float(v) if key.endswith(("_mhz", "_c", "_w")) else v
        except ValueError:
            out[key] = v
    return out


def amd_state() -> dict[str, Any]:
    smi = shutil.which("amd-smi") or shutil.which("rocm-smi")
    if not smi:
        return {}
    args = [smi, "metric", "--json"] if smi.endswith("amd-smi") else [smi, "--showclocks", "--showtemp", "--json"]
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    return {"raw": r.stdout[:4000]} if r.returncode == 0 else {}


#: the fields that say which physical GPU a state is of
IDENTITY = ("uuid", "serial", "pci_bus_id")


def gpu_state(device: int | str | None = None) -> dict[str, Any]:
    """The state of ``device`` (nvidia-smi's --id: an index, ``GPU-<uuid>`` or a PCI bus id); without one, or when
    nvidia-smi does not know it, the first GPU's, without its identity: index 0 ignores CUDA_VISIBLE_DEVICES, so
    it may be another GPU than the worker's, and a UUID read there would be taken for the worker's."""
    state = nvidia_state(device) if device is not None else {}
    if state:
        return state
    first = nvidia_state(0)
    if first:
        return {k: v for k, v in first.items() if k not in IDENTITY}
    return amd_state()
