"""The sidecar a run writes beside its results (``OUT.env.json``): the stack, the GPU, the method, the kernels."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness.envs.spec import EnvSpec
from harness.fsutil import write_text
from harness.inputs.sources import file_content, suite_content
from harness.inputs.suite import Case, search_folders
from harness.results.schema import SCHEMA_VERSION, artifacts_dir, sidecar_path
from harness.run.gpu_state import gpu_state
from harness.run.options import RunOptions, moves_inputs
from harness.worker.backends import times_gpu
from harness.worker.timing import AUTO_GAP_FACTOR, AUTO_GAP_MAX_US

#: what --launch-gap auto means in this version, recorded in the sidecar so that runs made under the older rule
#: (the kernel's time, at most 1 ms, until 2026-11-22) are told apart by compare
AUTO_GAP = {"factor": AUTO_GAP_FACTOR, "max_ms": AUTO_GAP_MAX_US / 1e3}


def smi_id(info: dict[str, Any]) -> str | None:
    """nvidia-smi's --id for the worker's GPU: its UUID, else its PCI bus id (a torch without UUIDs still has it;
    nvidia-smi's index 0 ignores CUDA_VISIBLE_DEVICES)."""
    gpu = info.get("gpu") or {}
    uuid = gpu.get("uuid")
    if not uuid:
        return gpu.get("pci_bus_id") or None
    return uuid if uuid.startswith("GPU-") else f"GPU-{uuid}"


def run_sidecar(
    spec: EnvSpec,
    info: dict[str, Any],
    opts: RunOptions,
    timing: str,
    launches: int,
    options: dict[str, Any],
    cases: list[Case],
    out: Path,
    suite_name: str,
) -> dict[str, Any]:
    """Everything a results file's times depend on, and what later stages need to show its cases."""
    gpu_timing = times_gpu(timing)
    meta: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "env_name": spec.name,
        "env_spec": spec.summary(),
        "captured_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "suite": suite_name,
        # the suite's content, which parts of one results file must share (merge checks it; a name is not one)
        "suite_content": suite_content(suite_name) if suite_name else None,
        **{k: info.get(k) for k in ("python", "triton", "torch", "knobs", "backend", "arch")},
        "gpu": {**info.get("gpu", {}), **({"before": gpu_state(smi_id(info))} if gpu_timing else {})},
        "timing": timing,
        "launches_per_rep": launches,
        "heat_s": opts.heat_s if gpu_timing else 0.0,
        "launch_gap": opts.launch_gap if gpu_timing else None,
        **({"launch_gap_auto": AUTO_GAP} if opts.launch_gap == "auto" and gpu_timing else {}),
        "placement": ("shuffled" if opts.shuffle_placement else "as allocated") if gpu_timing else None,
        "move_inputs": moves_inputs(opts, timing),
        "host": options["host"],
        "shard": opts.shard,  # I/N, or None: the whole selection
        **({"visible_gpus": list(opts.visible_gpus)} if opts.visible_gpus is not None else {}),
        "run_options": options,
        "kernels": {c.name: c.spec.summary() for c in cases},
        # where each kernel's code is: what `harness retune` loads a user's kernel from, given only a comparison
        "kernel_sources": {c.name: c.kernel.source for c in cases},
        **code_record(cases),
    }
    if opts.artifacts:
        meta["artifacts_dir"] = artifacts_dir(out).name  # beside the results file
    if not gpu_timing:
        meta["timing_note"] = "wallclock: CPU interpreter or host timers; for CI and demos only, not kernel time"
    return meta


def code_record(cases: list[Case]) -> dict[str, Any]:
    """The sidecar fields of what the cases' code is (results/identity.py reads them): each kernel's source
    digest (compare and merge tell a kernel edited between two runs), where each kernel's configs were looked up
    and as which arch, the library checkouts its code imported."""
    return {
        "kernel_content": {c.name: file_content(c.kernel.file) for c in cases},
        "config_lookup": {
            c.name: lookup_record(c) for c in cases if c.spec.config is not None or "lookup_config" in c.spec.hooks
        },
        "libraries": libraries(cases),
    }


def lookup_record(case: Case) -> dict[str, Any]:
    c = case.spec.config
    if c is None:  # the kernel's own lookup_config (a library's lookup, called in the worker)
        return {"folders": [], "layout": "lookup_config", "config_arch": case.config_arch or None}
    return {"folders": list(search_folders(case)), "layout": c.layout, "config_arch": case.config_arch or None}


def libraries(cases: list[Case]) -> dict[str, dict[str, Any]]:
    """Each library checkout the cases import: its folder and git commit (None outside git): two runs of one
    Triton on two checkouts are told apart by it."""
    found = {c.library.package: c.library.path for c in cases if c.library is not None}
    return {pkg: {"path": path, "commit": git_commit(path)} for pkg, path in found.items()}


def git_commit(path: str) -> str | None:
    """The commit of the checkout at ``path``: git's HEAD where a git work tree tracks the folder; not where the
    repository around it ignores it (a snapshot staged under this repository's .stage/ would otherwise read as
    harness's own commit). Else the ``node:`` of its ``.git_archival.txt`` (setuptools-scm's file that ``git
    archive`` fills in; lab/gpu_validation/aiter_stage.py writes one), else None."""
    import subprocess

    def git(*args: str) -> subprocess.CompletedProcess | None:
        try:
            return subprocess.run(["git", "-C", path, *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None

    head = git("rev-parse", "HEAD")
    if head is not None and head.returncode == 0 and head.stdout.strip():
        ignored = git("check-ignore", "-q", ".")
        if ignored is None or ignored.returncode != 0:
            return head.stdout.strip()
    return archival_commit(path)


def archival_commit(path: str) -> str | None:
    """The commit a ``git archive`` export names in its ``.git_archival.txt`` (``node: <sha>``; None when the file
    is absent or was never filled in: ``$Format:%H$``)."""
    try:
        text = (Path(path) / ".git_archival.txt").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "node" and re.fullmatch(r"[0-9a-f]{7,64}", value.strip()):
            return value.strip()
    return None


def write_sidecar(out: Path, meta: dict[str, Any]) -> None:
    write_text(sidecar_path(out), json.dumps(meta, indent=2, default=str) + "\n")


def update_sidecar(out: Path, **fields: Any) -> None:
    """Add ``fields`` to OUT's sidecar (the GPU's state after the run, the parallel compile's figures)."""
    side = sidecar_path(out)
    meta = json.loads(side.read_text())
    for key, value in fields.items():
        if isinstance(value, dict) and isinstance(meta.get(key), dict):
            meta[key].update(value)
        else:
            meta[key] = value
    write_sidecar(out, meta)


def sidecar_triton(out: Path) -> dict[str, Any]:
    """The Triton a results file's sidecar records ({} when unreadable)."""
    try:
        return json.loads(sidecar_path(out).read_text()).get("triton") or {}
    except (OSError, ValueError, AttributeError):
        return {}


def write_empty_part(spec: EnvSpec, opts: RunOptions, out: Path, suite_name: str, options: dict[str, Any]) -> None:
    """A shard with no case of the selection (more shards than cases): a results file of the header only and a
    sidecar naming the env, suite and shard, so that `harness merge` of every shard finds all of them. Nothing
    was measured: it records no stack or GPU, and merge checks none against it."""
    import csv
    import io

    from harness.results.schema import COLUMNS

    buf = io.StringIO()
    csv.writer(buf).writerow(COLUMNS)
    write_text(out, buf.getvalue())
    meta = {
        "schema_version": SCHEMA_VERSION,
        "env_name": spec.name,
        "env_spec": spec.summary(),
        "captured_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "suite": suite_name,
        "suite_content": suite_content(suite_name) if suite_name else None,
        "host": options["host"],
        "shard": opts.shard,
        "empty": f"--shard {opts.shard}: no case of the selection falls in this shard; nothing was measured",
        "run_options": options,
        "kernels": {},
    }
    write_sidecar(out, meta)


class PhaseClock:
    """Wall seconds of a run's phases, for the sidecar: where its time went. ``open_s``: starting the worker and
    opening the files; then preparing and compiling, heating, the reps, re-measuring. In an interleaved run every
    env's phases span the others' steps too."""

    def __init__(self) -> None:
        self.start = self.last = time.monotonic()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.laps[name] = round(now - self.last, 2)
        self.last = now

    def figures(self, finished: bool) -> dict[str, Any]:
        return {**self.laps, "wall_s": round(time.monotonic() - self.start, 2), "finished": finished}
