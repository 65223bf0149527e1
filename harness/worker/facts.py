"""What a worker reports about its environment (``hello``): Python, Triton, torch, the GPU, the knobs."""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Any

KNOB_PREFIXES = ("TRITON_", "AMDGCN_", "MLIR_", "LLVM_", "PTXAS", "NVPTX_", "HIP_", "CUDA_VISIBLE", "ROCR_")


def _uuid_text(uuid: Any) -> str | None:
    """torch's device UUID as text (``GPU-`` stripped, as nvidia-smi adds it), None when torch has none."""
    text = str(uuid or "").strip()
    return text.removeprefix("GPU-") or None


def _pci_bus_id(props: Any) -> str | None:
    """``00000000:1B:00.0``, nvidia-smi's form, when torch reports the PCI location."""
    try:
        return f"{props.pci_domain_id:08X}:{props.pci_bus_id:02X}:{props.pci_device_id:02X}.0"
    except (AttributeError, TypeError, ValueError):
        return None


def _dist_commit(name: str) -> str | None:
    try:
        from importlib.metadata import distribution

        d = distribution(name)
        direct = d.read_text("direct_url.json")
        if direct:
            info = json.loads(direct)
            return info.get("vcs_info", {}).get("commit_id")
    except Exception:  # noqa: BLE001
        return None
    return None


def environment(torch: Any, triton: Any, backend: str, arch: str, timing: str) -> dict[str, Any]:
    """The ``hello`` answer: versions and paths of the stack, the knobs set, and which GPU this process got."""
    return {
        "python": {"executable": sys.executable, "version": platform.python_version()},
        "triton": {
            "version": triton.__version__,
            "path": os.path.dirname(triton.__file__),
            "commit": getattr(triton, "__git_commit__", None) or _dist_commit("triton"),
        },
        "torch": {"version": torch.__version__, "gpu_runtime": _runtime(torch)},
        "knobs": {k: v for k, v in sorted(os.environ.items()) if k.startswith(KNOB_PREFIXES)},
        "backend": backend,
        "arch": arch,
        "timing": timing,
        "pid": os.getpid(),
        "gpu": gpu(torch, backend),
        "device_count": torch.cuda.device_count() if backend != "interp" and torch.cuda.is_available() else 0,
    }


def _runtime(torch: Any) -> str:
    if torch.version.hip:
        return f"ROCm {torch.version.hip}"
    return f"CUDA {torch.version.cuda}" if torch.version.cuda else "none"


def gpu(torch: Any, backend: str) -> dict[str, Any]:
    """This process's GPU: model, size, and which physical board (two boards of one model differ by a few %,
    so compare checks the UUID)."""
    if backend == "interp" or not torch.cuda.is_available():
        return {"name": f"CPU interpreter ({platform.processor() or platform.machine()})"}
    p = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {
        "name": p.name,
        "multiprocessors": p.multi_processor_count,
        "memory_gib": round(p.total_memory / 2**30, 1),
        "uuid": _uuid_text(getattr(p, "uuid", None)),
        "pci_bus_id": _pci_bus_id(p),
    }
