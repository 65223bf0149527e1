"""harness's reading of AITER's config files against AITER's own ``get_gemm_config``, lookup by lookup, from a
checkout (issue 44 item 1: the preview must pick what the library picks, the gluon order included).

    AITER_CHECKOUT=~/aiter python3 lab/library/aiter_agreement.py [FAMILY[:BACKEND_ON_ARCH]...]

For each family (default: the five batched families, the bf16 one with its op's gluon backend on gfx1250), every
arch folder of the checkout, every M in AITER's standard bounds ± 1 and every (B, N, K) of the family's per-shape
files: AITER's answer (its arch question answered per arch, its cache cleared) against harness's resolve_in over
the checkout's config folder. Prints the agreement and the first differences; exit 1 on any difference.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from harness.kernel_api import AITER_BOUNDS, resolve_in  # noqa: E402

FAMILIES = ("BATCHED_GEMM-A16W16:gfx1250=gluon", "BATCHED_GEMM-A8W8", "BATCHED_GEMM-A16WFP4", "BATCHED_GEMM-AFP4WFP4",
            "BATCHED_GEMM-A8W8-A_PER_TOKEN_GROUP_PREQUANT_W_PER_BATCHED_TENSOR_QUANT")  # fmt: skip


def aiter_lookup(checkout: Path):
    """AITER's gemm_config_utils, imported without aiter/__init__.py, and a setter for its arch answer."""
    sys.path.insert(0, str(checkout))
    pkg = types.ModuleType("aiter")
    pkg.__path__ = [str(checkout / "aiter")]
    sys.modules["aiter"] = pkg
    arch_info = types.ModuleType("aiter.ops.triton.utils._triton.arch_info")
    arch_info.get_arch = lambda: "gfx950"
    arch_info._LDS_CAP_BYTES = {}
    sys.modules[arch_info.__name__] = arch_info
    utils = importlib.import_module("aiter.ops.triton.utils.gemm_config_utils")
    return utils, arch_info


def shapes(folder: Path, family: str) -> set[tuple[int | None, int | None, int | None]]:
    found = {(None, None, None)}
    for f in folder.rglob("*.json"):
        m = re.search(rf"{re.escape(family)}(?:-B=(\d+))?-N=(\d+)-K=(\d+)\.json$", f.name)
        m = (
            m or re.search(r"^(?:B=(\d+)-)?N=(\d+)-K=(\d+)\.json$", f.name)
            if f.parent.name == family.lower().replace("-", "_")
            else m
        )
        if m:
            b, n, k = (int(x) if x else None for x in m.groups())
            found |= {(b, n, k), (None, n, k)}
    return found


def main(argv: list[str]) -> int:
    checkout = Path(os.environ["AITER_CHECKOUT"])
    folder = checkout / "aiter" / "ops" / "triton" / "configs"
    utils, arch_info = aiter_lookup(checkout)
    arches = sorted(p.name for p in folder.iterdir() if p.is_dir() and p.name.startswith("gfx"))
    arches = sorted(set(arches) | {f.name.split("-", 1)[0] for f in (folder / "gemm").rglob("gfx*.json")})
    total = same = 0
    shown = 0
    for spec in argv or FAMILIES:
        family, _, on = spec.partition(":")
        backends = dict(x.split("=") for x in on.split(",") if x)
        for arch in arches:
            arch_info.get_arch = lambda a=arch: a
            utils._get_gemm_config_cached.cache_clear()
            backend = backends.get(arch, "")
            for b, n, k in sorted(shapes(folder, family), key=str):
                for m in sorted({x + d for x in AITER_BOUNDS for d in (-1, 0, 1)} | {1}):
                    kw = {"B": b} if b else {}
                    try:
                        want, _ = utils.get_gemm_config(family, m, n, k, backend=backend or None, **kw)
                    except (AssertionError, KeyError, FileNotFoundError):
                        want = None
                    keys = tuple(x for x in ((f"B={b}-N={n}-K={k}" if b else ""), (f"N={n}-K={k}" if n else "")) if x)
                    try:
                        got = resolve_in(
                            [folder], family, arch, m, keys, "M", "aiter", AITER_BOUNDS, None, backend
                        ).config
                    except Exception:  # noqa: BLE001 - harness finds none: agrees only if AITER found none
                        got = None
                    total += 1
                    if got == want:
                        same += 1
                    elif shown < 5:
                        shown += 1
                        print(f"differs: {family} {arch} backend={backend or '-'} M={m} B={b} N={n} K={k}: "
                              f"AITER {want} vs harness {got}")  # fmt: skip
    print(f"{same} of {total} lookups agree")
    return 0 if same == total else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
