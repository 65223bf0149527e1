"""Ceilings a kernel's speed is judged against: datasheet peaks per GPU (dense TFLOPS per operand type, HBM TB/s),
or measured ones from a --ceilings file."""

from __future__ import annotations

import math
import re
from pathlib import Path

from harness.errors import HarnessError, unknown_key

#: datasheet dense peaks: TFLOPS per operand type, and HBM TB/s. Sparse figures are not used.
GPU_PEAKS: dict[str, dict[str, float]] = {
    "H100 SXM": {"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "int8": 1979.0, "fp32": 67.0, "hbm_tbs": 3.35},
    "H100 PCIe": {"bf16": 756.0, "fp16": 756.0, "fp8": 1513.0, "int8": 1513.0, "fp32": 51.0, "hbm_tbs": 2.0},
    "H200": {"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "int8": 1979.0, "fp32": 67.0, "hbm_tbs": 4.8},
    "A100": {"bf16": 312.0, "fp16": 312.0, "int8": 624.0, "fp32": 19.5, "hbm_tbs": 2.04},
    "MI300X": {"bf16": 1307.0, "fp16": 1307.0, "fp8": 2615.0, "int8": 2615.0, "fp32": 163.4, "hbm_tbs": 5.3},
    "MI325X": {"bf16": 1307.0, "fp16": 1307.0, "fp8": 2615.0, "int8": 2615.0, "fp32": 163.4, "hbm_tbs": 6.0},
    "MI355X": {"bf16": 2500.0, "fp16": 2500.0, "fp8": 5000.0, "int8": 5000.0, "fp4": 10000.0, "hbm_tbs": 8.0},
}
#: which GPU_PEAKS entry a device name maps to (first match wins)
GPU_NAMES = (
    (r"H100.*PCIe", "H100 PCIe"),
    (r"H100", "H100 SXM"),
    (r"H200", "H200"),
    (r"A100", "A100"),
    (r"MI300X|gfx942", "MI300X"),
    (r"MI325X", "MI325X"),
    (r"MI355X|MI350X|gfx950", "MI355X"),
)


def peaks_for(gpu_name: str, override: dict[str, float] | None = None) -> tuple[str, dict[str, float]]:
    """(label, peaks) for a device name; ``override`` (measured ceilings) replaces datasheet values."""
    label = next((key for pat, key in GPU_NAMES if re.search(pat, gpu_name or "")), "")
    peaks = dict(GPU_PEAKS.get(label, {}))
    if override:
        peaks.update({k: float(v) for k, v in override.items()})
        label = (label + " (measured ceilings)").strip()
    return label, peaks


def kernel_ceiling(peak: str, peaks: dict[str, float]) -> tuple[str, float | None]:
    """(key, TFLOPS) of the compute roof for a row's ``peak`` (its kernel's SPEC); a missing native path (fp4 on
    Hopper) is bounded by the bf16 MMA it runs on. Memory-bound kernels have no compute roof: ("memory", None)."""
    if peak == "memory":
        return "memory", None
    want = peak or "bf16"
    for key in (want, "bf16"):
        if key in peaks:
            return key, peaks[key]
    return want, None


#: what a --ceilings file may set: the datasheet keys, and the measured all-to-all NVLink egress of one GPU
#: (GB/s, one direction: lab/nvlink_bandwidth.py writes it)
CEILING_KEYS = sorted({k for peaks in GPU_PEAKS.values() for k in peaks} | {"nvlink_gbs"})


def load_ceilings(path: Path) -> dict[str, float]:
    """A --ceilings YAML: a mapping of datasheet keys (bf16, fp8, ..., hbm_tbs) to positive numbers."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HarnessError(f"{path}: no such ceilings file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise HarnessError(f"{path}: cannot read the ceilings ({err})") from None
    except yaml.YAMLError as err:
        raise HarnessError(f"{path}: not YAML: {' '.join(str(err).split())}") from None
    if not isinstance(data, dict) or not data:
        raise HarnessError(f"{path}: expected a mapping like {{bf16: 800, hbm_tbs: 3.0}}, got {type(data).__name__}")
    out = {}
    for key, value in data.items():
        if key not in CEILING_KEYS:
            raise unknown_key(str(path), str(key), CEILING_KEYS, "ceiling")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
            raise HarnessError(
                f"{path}: {key}: expected a positive number (TFLOPS, or TB/s for hbm_tbs), got {value!r}"
            )
        out[str(key)] = float(value)
    return out
