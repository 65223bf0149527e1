"""`harness agree A B`: do two comparisons of one suite (two machines, two runner pools, two days) reach the same
confident verdicts?"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from harness.cli.options import CompareCsv
from harness.errors import HarnessError

if TYPE_CHECKING:
    from harness.compare.compare import Comparison


def agree(
    a: CompareCsv,
    b: Annotated[Path, typer.Argument(help="the other compare.csv, of the same suite")],
    any_config: Annotated[
        bool,
        typer.Option("--any-config", help="also compare cases run with other configs in A and B"),
    ] = False,
    fail_on_flip: Annotated[
        bool,
        typer.Option(
            "--fail-on-flip",
            help="exit 1 on an opposite flip (a regression in one, an improvement in the other, both confident)",
        ),
    ] = False,
    min_agree: Annotated[
        float | None,
        typer.Option(
            "--min-agree",
            min=0.0,
            max=100.0,
            help="exit 1 when fewer than this % of the verdicts confident in both agree",
        ),
    ] = None,
) -> None:
    """Do two comparisons (two machines, pools or days) reach the same confident verdicts?"""
    from harness.compare.agreement import agreement, lines

    ca, cb = _load(a), _load(b)
    print(f"A  {a}: {_label(ca)}")
    print(f"B  {b}: {_label(cb)}")
    ag = agreement(ca.table, cb.table, any_config=any_config)
    if ag.both == 0:
        raise HarnessError(f"{a} and {b} have no case in common: comparisons of other suites, nothing to agree on")
    for line in lines(ag):
        print(line)
    for line in identity_warnings(ca, cb):
        print(line)
    failed = (fail_on_flip and ag.flips) or (min_agree is not None and (ag.share is None or ag.share < min_agree))
    if failed:
        raise typer.Exit(1)


def identity_warnings(ca: Comparison, cb: Comparison) -> list[str]:
    """What the two comparisons measured differently (results/identity.REPEAT), golden's side and TOT's: two GPU
    models or two config arches may be what the user wants to compare, but the agreement then measures more than
    the noise, and each difference is named."""
    from harness.results import identity

    out = []
    for side, (ea, eb) in (("golden", (ca.golden_env, cb.golden_env)), ("TOT", (ca.tot_env, cb.tot_env))):
        for d in identity.differences(ea, eb, identity.REPEAT):
            if d.facet == "gpu_model":
                if side == "TOT":  # said once: one GPU ran both stacks of a comparison
                    out.append(f"warning: A and B ran on other GPU models ({d.shown()}): a verdict can depend on "
                               "the model (docs/verdicts.md)")  # fmt: skip
                continue
            out.append("warning: " + d.text("A's " + side, "B's " + side))
    return out


def _load(path: Path) -> Comparison:
    from harness.compare.store import load_compare

    cmp = load_compare(path)
    if "confidence" not in cmp.table.columns:
        raise HarnessError(f"{path}: no confidence column (an older compare): run `harness compare` on its results")
    return cmp


def _model(cmp: Comparison) -> str:
    from harness.results.gpu import gpu_name

    return gpu_name(cmp.tot_env) or gpu_name(cmp.golden_env)


def _label(cmp: Comparison) -> str:
    """``NVIDIA H100 80GB HBM3 aff03334, triton 3.6.0 vs 3.9.0``: what ran, as far as the sidecars say."""
    from harness.results.gpu import gpu_uuid

    gpu = _model(cmp) or "GPU not recorded"
    uuid = gpu_uuid(cmp.tot_env) or gpu_uuid(cmp.golden_env)
    versions = " vs ".join(_triton(env) for env in (cmp.golden_env, cmp.tot_env))
    return f"{gpu}{' ' + uuid[:8] if uuid else ''}, triton {versions}"


def _triton(env: dict[str, Any]) -> str:
    triton = env.get("triton") if isinstance(env.get("triton"), dict) else {}
    return str(triton.get("version") or "?")
