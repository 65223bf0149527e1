"""Compiled kernels kept for `harness explain`: every stage Triton produced, the SASS, the resource usage."""

from __future__ import annotations

import json
import os
from typing import Any

from harness.worker.errors import error_text, tail

#: text stages kept per compiled kernel (whatever the backend produced), plus "sass" made from the cubin
STAGES = ("ttir", "ttgir", "llir", "ptx", "amdgcn", "source")


def capture_compiled(launch):  # noqa: ANN001, ANN201 - a zero-argument callable; returns (its result, kernels)
    """Run ``launch`` and collect every compiled Triton kernel it launched (user kernels included), each with the
    scalar keyword arguments of its first launch (an autotuner passes its config's so: ``TILE_N``, ``num_warps``).

    ``JITFunction.run`` returns the compiled kernel in every supported Triton (3.4–3.9), cache hit or not, so
    wrapping it for one call sees exactly the kernels of this case, in launch order. An autotuned op compiles
    every candidate it benchmarks: the arguments tell `harness explain` which of them is the config that ran.
    """
    from triton.runtime.jit import JITFunction

    seen: list[tuple[Any, dict[str, Any]]] = []
    original = JITFunction.run

    def run(self, *args, **kwargs):  # noqa: ANN001, ANN202
        k = original(self, *args, **kwargs)
        if k is not None and hasattr(k, "asm") and all(k is not s for s, _ in seen):
            seen.append((k, launch_arguments(kwargs)))
        return k

    JITFunction.run = run
    try:
        result = launch()
    finally:
        JITFunction.run = original
    return result, seen


def launch_arguments(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The scalar keyword arguments of a launch (constexprs and launch options; tensors, the grid and Triton's
    own switches left out)."""
    own = {"grid", "warmup"}
    return {k: v for k, v in kwargs.items()
            if k not in own and isinstance(v, (bool, int, float, str)) and not k.startswith("_")}  # fmt: skip


def _nvidia_tool(name: str) -> str | None:
    import shutil

    import triton

    bundled = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", name)
    return bundled if os.access(bundled, os.X_OK) else shutil.which(name)


def cubin_resources(cubin: bytes) -> dict[str, int]:
    """``cuobjdump -res-usage``: REG, STACK, SHARED, LOCAL (bytes of local memory: spills live there)."""
    import re
    import subprocess
    import tempfile

    tool = _nvidia_tool("cuobjdump")
    if not tool:
        return {}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as fh:
        fh.write(cubin)
        fh.flush()
        text = subprocess.run([tool, "-res-usage", fh.name], capture_output=True, text=True, timeout=60).stdout
    return {k.lower(): int(v) for k, v in re.findall(r"\b(REG|STACK|SHARED|LOCAL):(\d+)", text)}


def dump_compiled(k: Any, root: str, launch: dict[str, Any] | None = None) -> str:
    """Store one compiled kernel's stages and resources under ``root/<hash>-<name>/``; returns that folder's name.
    ``launch``: the scalar keyword arguments it was launched with (capture_compiled), kept as meta's ``launch``.

    The folder is keyed by the kernel's compile hash, so cases sharing a compiled kernel store it once; a folder
    already complete (its meta.json exists) is not written again.
    """
    import triton

    md = k.metadata
    name = getattr(md, "name", None) or getattr(k, "name", "kernel")
    kid = f"{str(getattr(md, 'hash', '') or 'nohash')[:16]}-{name}"
    folder = os.path.join(root, kid)
    if os.path.exists(os.path.join(folder, "meta.json")):
        return kid
    os.makedirs(folder, exist_ok=True)
    files = []
    asm = k.asm
    for stage in STAGES:
        if stage in asm:
            text = asm[stage]
            with open(os.path.join(folder, stage), "w", encoding="utf-8") as fh:
                fh.write(text if isinstance(text, str) else text.decode("utf-8", "replace"))
            files.append(stage)
    meta: dict[str, Any] = {}
    if "cubin" in asm:
        try:
            sass = asm["sass"]  # Triton disassembles the cubin with its bundled cuobjdump / nvdisasm
            with open(os.path.join(folder, "sass"), "w", encoding="utf-8") as fh:
                fh.write(sass)
            files.append("sass")
        except Exception as exc:  # noqa: BLE001 - no disassembler: keep everything else
            meta["sass_error"] = tail(error_text(exc), 300)
        try:
            meta["cubin_resources"] = cubin_resources(asm["cubin"])
        except Exception as exc:  # noqa: BLE001
            meta["cubin_resources_error"] = tail(error_text(exc), 300)
    md_dict = md._asdict() if hasattr(md, "_asdict") else dict(getattr(md, "__dict__", {}))
    meta.update(
        name=name,
        triton=getattr(triton, "__version__", ""),
        files=files,
        metadata={k2: v for k2, v in md_dict.items() if isinstance(v, (int, float, str, bool, type(None), list))},
        target=str(md_dict.get("target", "")),
        n_regs=getattr(k, "n_regs", None),
        n_spills=getattr(k, "n_spills", None),
        launch=launch or {},
    )
    tmp = os.path.join(folder, "meta.json.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(meta, fh, indent=1, default=str, sort_keys=True)
    os.replace(tmp, os.path.join(folder, "meta.json"))
    return kid
