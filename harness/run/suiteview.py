"""What a suite expands to, without running anything: each case with the config it would resolve on an arch (the
same lookup the worker does: its ConfigLookup's file and bucket, the suite's overrides on top)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from harness.inputs.suite import Case
from harness.run.cases import worker_case
from harness.worker.cases import resolve_config


@dataclass(frozen=True)
class CaseView:
    kernel: str
    case_id: str
    world_size: int
    source: str  # where the config came from: file:bucket, 'spec', 'suite', or why none resolved
    config: dict


def view(cases: list[Case], arch: str) -> list[CaseView]:
    """Each case with the config it resolves to on ``arch`` (or its config arch), from the folders it searches."""
    from harness.kernel_api import configs

    return [_one(c, arch, configs) for c in cases]


def _one(case: Case, arch: str, configs: object) -> CaseView:
    req = worker_case(case)
    if "lookup_config" in req["hooks"]:  # the library's own lookup runs in the worker, where the library imports
        as_arch = f" (configs of {case.config_arch})" if case.config_arch and case.config_arch != arch else ""
        source = f"lookup_config: the kernel's own lookup, called in the worker{as_arch}"
        return CaseView(case.name, case.case_id, int(req["world_size"]), source, dict(case.overrides))
    decides = "chosen_config" in req["hooks"]  # the library picks at run time; harness's reading is a preview
    if decides and not req.get("lookup"):
        return CaseView(case.name, case.case_id, int(req["world_size"]), LIBRARY_DECIDES, {})
    try:
        cfg, source, _ = resolve_config(req, arch, configs)
    except configs.ConfigError as err:  # type: ignore[attr-defined]
        cfg, source = {}, f"no config: {err}"
    if decides:
        source = f"preview: {source} (the library decides at run time; the results record its choice)"
    elif "finalize_config" in req["hooks"]:  # the library's post-processing runs in the worker, where it imports
        source += " (before the kernel's finalize_config: the results record the config that ran)"
    return CaseView(case.name, case.case_id, int(req["world_size"]), source, cfg)


#: suite show's source of a case whose library picks its config with no reading of its files by harness
LIBRARY_DECIDES = "the library decides at run time (its entry, as its users call it); the results record its choice"


def lines(views: list[CaseView]) -> list[str]:
    """One line a case: kernel, case id, world size when > 1, where its config came from, the config."""
    out = []
    for v in views:
        world = f" W={v.world_size}" if v.world_size > 1 else ""
        cfg = json.dumps(v.config, separators=(",", ":"), sort_keys=True)
        out.append(f"{v.kernel} {v.case_id}{world}  {v.source}  {cfg}")
    return out
