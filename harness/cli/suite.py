"""`harness suite show`: what a suite expands to, without running it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from harness.cli.options import ConfigArch, Filter, Kernel
from harness.errors import counted

app = typer.Typer(help="Suites: what a suite expands to, without running it.", no_args_is_help=True)


@app.command("show")
def suite_show(
    suite: Annotated[Path, typer.Argument(help="a suite YAML (docs/suites-and-kernels.md)")],
    arch: Annotated[str, typer.Option(help="resolve configs as on this arch (sm90, gfx950, ...)")] = "sm90",
    kernel: Kernel = None,
    filter: Filter = None,
    config_arch: ConfigArch = None,
) -> None:
    """List the cases SUITE expands to, each with the config it would resolve on --arch (a suite's config_arch
    or --config-arch wins); runs nothing."""
    from harness.inputs import configarch
    from harness.inputs.suite import as_config_arch, load_suite, select
    from harness.run.suiteview import lines, view

    cases = as_config_arch(select(load_suite(suite), kernel, filter), config_arch)
    for warning in configarch.check(cases, config_arch, suite):  # refuses an arch no case has a config file for
        print(f"warning: {warning}", file=sys.stderr)
    views = view(cases, arch)
    for line in lines(views):
        print(line)
    lacking = sum(v.source.startswith("no config") for v in views)
    print(counted(len(cases), "case") + (f", {lacking} without a config" if lacking else ""), file=sys.stderr)
