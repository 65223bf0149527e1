"""What a retune starts from: COMPARE's cases as suite cases, the two stacks, the config files, the search space.

Every case of COMPARE whose kernel looks its config up in files is rebuilt as the suite case it was (its kernel
by registered name, or by the file its results' sidecar recorded; its parameters from the ``params`` column) and
located in the config files as they stand: which file, which bucket, which config. The regressed and TOT-failed
ones are the targets; all of them are what a change to a shared bucket may touch.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.compare.compare import Comparison
from harness.envs.spec import load_env_spec
from harness.envs.venv import check_venv
from harness.errors import HarnessError
from harness.inputs.kernel import Kernel, load_kernel, registry
from harness.inputs.suite import Case, config_files
from harness.kernel_api import spec as S
from harness.results.cells import number
from harness.results.load import params_of
from harness.retune.measure import Stack
from harness.retune.placement import Lookup, Where, resolve
from harness.run.workers import start_worker
from harness.worker.backends import NOTHING

#: COMPARE verdicts a retune tries to remove
TARGETS = ("regression", "failed_in_tot")
REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class CaseInfo:
    """One case of COMPARE as the retune sees it."""

    case: Case
    verdict: str
    golden_us: float | None
    tot_us: float | None
    delta_pct: float | None
    lookup: Lookup
    where: Where  # file, bucket and config in the files as they stood when the retune began

    @property
    def key(self) -> str:
        return self.case.key

    @property
    def target(self) -> bool:
        return self.verdict in TARGETS

    @property
    def tot_timed(self) -> bool:
        return self.tot_us is not None

    @property
    def severity(self) -> float:
        """How bad: a TOT failure first, then the largest slowdown."""
        return math.inf if self.verdict == "failed_in_tot" else (self.delta_pct or 0.0)


def kernel_sources(cmp: Comparison) -> dict[str, str]:
    """Kernel name → the file its runs loaded it from, as the sidecars in COMPARE's metadata record it."""
    found: dict[str, str] = {}
    for env in (cmp.golden_env, cmp.tot_env):
        found.update({k: v for k, v in (env.get("kernel_sources") or {}).items() if isinstance(v, str)})
    return found


def load_kernels(names: list[str], sources: dict[str, str]) -> tuple[dict[str, Kernel], list[str]]:
    """The kernels of COMPARE that can be loaded, and a note for each that cannot."""
    found, notes = {}, []
    for name in names:
        text = name if name in registry() else sources.get(name)
        if text is None:
            notes.append(f"{name}: not a registered kernel and no sidecar names its file: left alone")
            continue
        try:
            found[name] = load_kernel(text)
        except HarnessError as err:
            notes.append(f"{name}: {err}: left alone")
    return found, notes


def case_infos(
    cmp: Comparison, kernels: dict[str, Kernel], files: dict[str, str], arch: str
) -> tuple[list[CaseInfo], list[str]]:
    """COMPARE's cases of kernels with config files, located in ``files`` (name → text) for ``arch``; a note for
    each case left alone, and one when COMPARE's configs are not what the files give now."""
    out, notes, stale = [], [], []
    for row in cmp.table.to_dict("records"):
        k = kernels.get(str(row["kernel"]))
        if k is None or k.spec.config is None:
            continue
        found = _case_info(row, k, files, arch)
        if isinstance(found, str):
            notes.append(found)
            continue
        out.append(found)
        ran = _config(row.get("tot_config")) or _config(row.get("golden_config"))
        if ran is not None and ran != found.where.config:
            stale.append(f"{found.key} ran {ran}, the files give {found.where.config}")
    if stale:
        notes.append(
            f"{len(stale)} cases of COMPARE ran other configs than the config files give now (COMPARE predates "
            f"them?): the retune starts from the files; e.g. {stale[0]}"
        )
    return out, notes


def _case_info(row: dict[str, Any], k: Kernel, files: dict[str, str], arch: str) -> CaseInfo | str:
    """One row of COMPARE as a located case, or why it is left alone."""
    try:
        params = k.spec.case_params(params_of(row.get("params")), f"{row['kernel']} {row['case_id']}")
    except S.SpecError as err:
        return f"{err}: left alone"
    case = Case(k, params)
    if case.case_id != row["case_id"]:  # a sweep case (config overrides) or another kernel's parameters
        return f"{row['kernel']} {row['case_id']}: not a case of the kernel's files: left alone"
    lk = k.spec.config
    lookup = Lookup(lk.family, arch, lk.file_key(params), lk.bucket, int(params[lk.bucket]))
    where = resolve(files, lookup)
    if where is None:
        return f"{case.key}: no config file of {lk.family} for {arch} resolves it: left alone"
    times = (number(row.get(c)) for c in ("golden_us", "tot_us", "delta_pct"))
    return CaseInfo(case, str(row["verdict"]), *times, lookup, where)


def _config(cell: Any) -> dict[str, Any] | None:
    if not isinstance(cell, str) or not cell.strip():
        return None
    try:
        found = json.loads(cell)
    except ValueError:
        return None
    return found if isinstance(found, dict) and found else None


def open_stack(label: str, name: str, log_dir: Path) -> tuple[Stack, dict[str, Any]]:
    """An env spec checked and asked who it is (a worker's hello: Triton, GPU, arch)."""
    spec = load_env_spec(name)
    check_venv(spec)
    w, info = start_worker(spec, NOTHING, log_dir)  # a hello times nothing
    w.close()
    tri = info.get("triton") or {}
    gpu = info.get("gpu") or {}
    ident = f"triton {tri.get('version')} at {tri.get('path')}"
    where = gpu.get("uuid") or f"{gpu.get('name')} @ {info.get('python', {}).get('executable', '')}"
    return Stack(label, spec, str(tri.get("version")), ident, str(where)), info


def snapshot(directory: Path) -> dict[str, str]:
    """Every config file of a folder: name → text."""
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(Path(directory).glob("*.json"))}


def family_configs(family: str, directory: Path) -> list[dict[str, Any]]:
    """Every bucket's config of a family, all arches (notes left out)."""
    from harness.kernel_api.configs import ConfigError, read_config_file

    found = []
    for f in config_files(family, directory):
        try:
            found += list(read_config_file(f).values())
        except ConfigError:
            continue
    return found


def suite_values(kernel_names: set[str], suites: Path = REPO / "suites") -> dict[str, list[Any]]:
    """The config values the suites (sweeps) give the named kernels: key → values."""
    found: dict[str, list[Any]] = {}
    for path in sorted(Path(suites).glob("*.yaml")):
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError):
            continue
        entries = data.get("entries") if isinstance(data, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict) or not isinstance(entry.get("config"), dict):
                continue
            named = entry.get("kernel")
            named = set(named) if isinstance(named, list) else {named}
            if not named & kernel_names:
                continue
            for key, value in entry["config"].items():
                for v in value if isinstance(value, list) else [value]:
                    if isinstance(v, (int, str, bool, type(None))) and v not in found.setdefault(key, []):
                        found[key].append(v)
    return found
