"""Whether a config arch (a suite's ``config_arch:`` or ``--config-arch``) has config files for the suite's
kernels, checked before anything runs: an arch no config folder knows (a typo, ``gfx590``) would otherwise skip
every case with ``no default config``, exit 0.

A case needs a file only when its kernel has a :class:`~harness.kernel_api.spec.ConfigLookup`, harness resolves it
(not the kernel's own ``lookup_config``) and its config arch is set (unset: the worker's own arch, known only once
it runs). A family is *missing* when no folder its cases search holds its default file for the arch. When every
case of the selection needs a missing family, the run is refused; when only some do, each missing family is a
warning and its cases are skipped as before (an arch where only some families are tuned: gfx942 has no
BATCHED_GEMM-AFP4WFP4 files)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError, counted, did_you_mean
from harness.inputs.suite import Case, config_files, search_folders
from harness.kernel_api.layout import file_arch, places


@dataclass(frozen=True)
class Gap:
    """A family without a default config file for ``arch`` in any of ``folders``; ``cases`` of the selection need
    it; ``arches``: the arches its files in those folders are for."""

    family: str
    arch: str
    folders: tuple[str, ...]
    cases: int
    arches: tuple[str, ...]


def gaps(cases: list[Case], directory: Path | None = None) -> list[Gap]:
    """The missing families of ``cases`` (see the module docstring), in the order their first case comes."""
    need: dict[tuple[str, str, str, tuple[str, ...]], int] = {}
    for c in cases:
        lookup = c.spec.config
        if lookup is None or not c.config_arch or "lookup_config" in c.spec.hooks:
            continue
        key = (lookup.family, c.config_arch, lookup.layout, search_folders(c, directory))
        need[key] = need.get(key, 0) + 1
    found = []
    for (family, arch, layout, folders), n in need.items():
        if not any(p.default.is_file() for d in folders for p in places(layout, family, arch, (), Path(d))):
            found.append(Gap(family, arch, folders, n, _arches(family, layout, folders)))
    return found


def check(cases: list[Case], option_arch: str | None, suite: object, directory: Path | None = None) -> list[str]:
    """Refuse (one line) a selection none of whose cases would get a config for its config arch; else the warning
    lines of the families that would not (their cases are skipped when run). ``option_arch``: --config-arch, if
    given (else the arch is the config_arch of ``suite``, a file)."""
    found = gaps(cases, directory)
    if not found:
        return []
    if sum(g.cases for g in found) == len(cases):
        g = found[0]
        families = ", ".join(dict.fromkeys(x.family for x in found if x.arch == g.arch))
        folders = ", ".join(dict.fromkeys(d for x in found if x.arch == g.arch for d in x.folders))
        arches = sorted({a for x in found for a in x.arches})
        raise HarnessError(
            f"{_what(g.arch, option_arch, suite)}: no config file of {families} for {g.arch} in {folders}"
            f"{_known(g.arch, arches)}: no case of the selection would get a config"
        )
    return [
        f"{_what(g.arch, option_arch, suite)}: no config file of {g.family} for {g.arch} in {', '.join(g.folders)}"
        f"{_known(g.arch, g.arches)}: its {counted(g.cases, 'case')} {'gets' if g.cases == 1 else 'get'} no config "
        "(skipped when run)"
        for g in found
    ]


def _what(arch: str, option_arch: str | None, suite: object) -> str:
    return f"--config-arch {arch}" if option_arch else f"{suite}: config_arch {arch}"


def _known(arch: str, arches: tuple[str, ...] | list[str]) -> str:
    if not arches:
        return " (it has files for no arch there)"
    return f" (files exist for {', '.join(arches)}){did_you_mean(arch, arches)}"


def _arches(family: str, layout: str, folders: tuple[str, ...]) -> tuple[str, ...]:
    """The arches the family's files in ``folders`` are for (harness's ``{arch}-{family}*.json``; AITER's nested
    ``{arch}/...`` or flat ``gemm/{arch}-{family}*.json``)."""
    found = set()
    for d in folders:
        for f in config_files(family, Path(d), layout):
            rel = f.relative_to(d).parts
            found.add(file_arch(layout, rel))
    return tuple(sorted(found))
