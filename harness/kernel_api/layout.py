"""Where a config lookup looks, in which order, and which bucket it takes: harness's own layout and AITER's.
Pure: folders and names in, candidate paths out; which of them exist is the caller's question (configs.py).

``harness``: ``{folder}/{arch}-{family}.json`` and per-shape ``{arch}-{family}-{key}.json`` beside it; a file's
buckets are searched over the bounds the file itself uses.

``aiter`` (ROCm/aiter ``get_gemm_config`` as of 2026-08, called without a backend, as its batched GEMM wrappers
do): the nested ``{folder}/{arch}/triton/gemm/{family_lower}/DEFAULT.json``, then the same under ``gluon``, then
the legacy flat ``{folder}/gemm/{arch}-{family}.json``; the first whose default file exists is the folder of the
lookup, and its per-shape files are named without the arch prefix in the nested folders
(``{family}-B=4-N=1024-K=4096.json``, then ``{family}-N=1024-K=4096.json``), with it in the flat one. Buckets are
searched over the caller's bounds only (AITER's standard list unless the kernel gives its own), keys that are not
buckets are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LAYOUTS = ("harness", "aiter")
#: AITER's STANDARD_M_BOUNDS (aiter/ops/triton/utils/gemm_config_utils.py): the bounds its lookup searches unless
#: the caller passes its own (afp4wfp4 passes a list with 320 and without 1)
AITER_BOUNDS = (1, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
#: the backends AITER's nested layout tries, in its order, when the caller names none
AITER_BACKENDS = ("triton", "gluon")
BUCKET = re.compile(r"^(?P<param>[A-Za-z][A-Za-z0-9_]*?)_(?P<op>LEQ|GEQ)_(?P<bound>\d+)$")


@dataclass(frozen=True)
class Place:
    """One place a family's files may be: its default file and the per-shape files tried before it, in order."""

    default: Path
    specific: tuple[Path, ...]


def family_dir(family: str) -> str:
    """AITER's nested folder name of a family: ``BATCHED_GEMM-A16W16`` -> ``batched_gemm_a16w16``."""
    return family.lower().replace("-", "_")


def places(layout: str, family: str, arch: str, keys: tuple[str, ...], folder: Path, backend: str = "") -> list[Place]:
    """Every place of ``folder`` a lookup tries for ``family`` on ``arch``, in order; ``keys`` are the per-shape
    suffixes (``B=4-N=1024-K=4096``, ``N=1024-K=4096``), most specific first. ``backend``: the one AITER's caller
    names (``get_gemm_config(..., backend="gluon")``): its nested folder, then the legacy ``gemm/<backend>/``, then
    the legacy flat ``gemm/``; none (''): nested triton, nested gluon, legacy flat, as AITER tries them."""
    if layout == "harness":
        return [_place(folder, f"{arch}-{family}", f"{arch}-{family}", keys)]
    if layout != "aiter":
        raise ValueError(f"unknown config layout {layout!r} (known: {', '.join(LAYOUTS)})")
    flat = _place(folder / "gemm", f"{arch}-{family}", f"{arch}-{family}", keys)
    nest = lambda b: _place(folder / arch / b / "gemm" / family_dir(family), "DEFAULT", family, keys)  # noqa: E731
    if backend:
        return [nest(backend), _place(folder / "gemm" / backend, f"{arch}-{family}", f"{arch}-{family}", keys), flat]
    return [*(nest(b) for b in AITER_BACKENDS), flat]


def _place(where: Path, default: str, stem: str, keys: tuple[str, ...]) -> Place:
    return Place(where / f"{default}.json", tuple(where / f"{stem}-{k}.json" for k in keys if k))


def pick(buckets: dict[str, Any], value: int, param: str, bounds: tuple[int, ...] | None) -> str | None:
    """The bucket for ``value`` among ``bounds`` (AITER: only the caller's bounds are searched): the first
    ``{P}_LEQ_b`` with value <= b over the bounds ascending, else the first ``{P}_GEQ_b`` with value >= b over them
    descending, else ``any``; None when nothing matches. Without bounds, a file's own bounds are the list."""
    if bounds is None:
        bounds = tuple(sorted({int(k.rsplit("_", 1)[1]) for k in buckets if _is_bound(k, param)}))
    for b in bounds:
        if value <= b and f"{param}_LEQ_{b}" in buckets:
            return f"{param}_LEQ_{b}"
    for b in reversed(bounds):
        if value >= b and f"{param}_GEQ_{b}" in buckets:
            return f"{param}_GEQ_{b}"
    return "any" if "any" in buckets else None


def _is_bound(key: str, param: str) -> bool:
    head, _, bound = key.rpartition("_")
    return head in (f"{param}_LEQ", f"{param}_GEQ") and bound.isdigit()


def split_buckets(data: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """(the buckets of a file, the keys skipped): what AITER's lookup can take (``P_LEQ_x``, ``P_GEQ_x`` or ``any``
    holding an object); every other key (``_note``, a comment, a stray value) is skipped, as AITER skips it."""
    buckets, skipped = {}, []
    for key, value in data.items():
        if (key == "any" or BUCKET.match(key)) and isinstance(value, dict):
            buckets[key] = value
        else:
            skipped.append(key)
    return buckets, skipped


def is_family_file(layout: str, family: str, rel: tuple[str, ...], backends: tuple[str, ...] = ()) -> bool:
    """Whether the file at ``rel`` (its path's parts under a config folder) is one of ``family``'s files that
    ``layout``'s lookup can reach, for any arch: what the suite's checks read. The legacy ``gemm/<backend>/``
    folders only for the ``backends`` the library's op names (ConfigLookup.backends)."""
    fam = re.escape(family)
    keyed = r"(-[A-Za-z_]\w*=[^-/]+)*\.json"
    flat = re.compile(rf"^[^-/]+-{fam}{keyed}$")
    if layout == "harness":
        return len(rel) == 1 and bool(flat.match(rel[0]))
    if len(rel) == 2:
        return rel[0] == "gemm" and bool(flat.match(rel[1]))
    if len(rel) == 3:  # the legacy per-backend folder: gemm/gluon/gfx1250-BATCHED_GEMM-A16W16.json
        return rel[0] == "gemm" and rel[1] in backends and bool(flat.match(rel[2]))
    nested = len(rel) == 5 and rel[1] in AITER_BACKENDS and rel[2:4] == ("gemm", family_dir(family))
    return nested and (rel[4] == "DEFAULT.json" or bool(re.match(rf"^{fam}{keyed}$", rel[4])))


def file_arch(layout: str, rel: tuple[str, ...]) -> str:
    """The arch a family file (``is_family_file``) is for: its name's prefix in the flat layouts, its first folder
    in AITER's nested one."""
    if layout == "harness":
        return rel[0].split("-", 1)[0]
    return rel[-1].split("-", 1)[0] if len(rel) in (2, 3) else rel[0]
