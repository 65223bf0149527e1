"""`harness env`: create a venv from a spec, show what a spec resolves to, pack and unpack a Triton release."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from harness.cli.options import EnvSpecName
from harness.envs.bundle import DEFAULT_PART_MB

app = typer.Typer(
    help="Environment specs: create a venv, show what a spec resolves to; pack and unpack a Triton release.",
    no_args_is_help=False,
)


@app.command("create")
def env_create(spec: EnvSpecName) -> None:
    """Create the spec's venv (uv when present, else venv + pip), install its requirements, check its pins and
    record the install; an existing venv is verified and completed, not rebuilt."""
    from harness.envs.spec import load_env_spec
    from harness.envs.venv import create_env
    from harness.render.terminal import stderr

    py = create_env(load_env_spec(spec), log=lambda m: stderr().print(m, markup=False))
    print(py)


@app.command("pack")
def env_pack(
    version: Annotated[str, typer.Argument(help="the Triton release, e.g. 3.8.0")],
    out: Annotated[Path | None, typer.Option("--out", help="new folder for the parts (default .stage/VERSION)")] = None,
    part_mb: Annotated[
        float,
        typer.Option(
            "--part-mb",
            help="largest part, MiB (each part in its own folder, to be carried one per upload)",
        ),
    ] = DEFAULT_PART_MB,
    python: Annotated[
        str | None, typer.Option("--python", help="the node's Python, MAJOR.MINOR (default: this one's)")
    ] = None,
    arch: Annotated[str, typer.Option("--arch", help="the node's CPU: x86_64 or aarch64")] = "x86_64",
    wheel: Annotated[Path | None, typer.Option("--wheel", help="a wheel file at hand instead of pip download")] = None,
    index_url: Annotated[str | None, typer.Option("--index-url", help="pip's index (default: PyPI)")] = None,
    find_links: Annotated[
        str | None, typer.Option("--find-links", help="a folder or page of wheels (alone: no index)")
    ] = None,
    level: Annotated[int, typer.Option("--level", help="xz preset, 0 (fastest) to 9 (smallest)")] = 9,
    keep_debug: Annotated[
        bool, typer.Option("--keep-debug", help="keep the shared objects' debug sections (default: stripped)")
    ] = False,
) -> None:
    """The offline bundle of a Triton release for an NVIDIA node: the wheel without the AMD backend and static
    libraries (ptxas-blackwell stays), the shared objects' debug sections stripped, as tar.xz parts with sha256 checksums and a manifest."""
    from harness.envs.pack import check_out, pack
    from harness.render.progress import byte_bars
    from harness.render.terminal import stderr

    con = stderr()
    target = check_out(out or Path(".stage") / version)  # before the progress bars: a refusal is one line
    with byte_bars(con) as bars:
        man = pack(
            version,
            target,
            part_mb=part_mb,
            python=python,
            arch=arch,
            wheel=wheel,
            index_url=index_url,
            find_links=find_links,
            level=level,
            strip_debug=not keep_debug,
            log=lambda m: con.print(m, markup=False, highlight=False),
            progress=bars,
        )
    arch_ = man["archive"]
    print(
        f"packed triton {man['version']} (Python {man['python']}) into {target}: {len(man['parts'])} parts, "
        f"{arch_['bytes'] / 1e6:.1f} MB, sha256 {arch_['sha256']}"
    )
    print(f"on the node: harness env unpack {target}   (every p*/ folder of it, gathered in one folder)")


@app.command("unpack")
def env_unpack(
    src: Annotated[Path, typer.Argument(help="the folder holding the bundle's parts (its p*/ folders)")],
    dest: Annotated[
        Path | None,
        typer.Option(
            "--dest", help="the overlay folder (default $HARNESS_TRITON_DIR/VERSION, else .harness/triton/VERSION)"
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="replace what DEST holds")] = False,
) -> None:
    """Check every part of a bundle (sizes, sha256) and unpack it as an overlay for `mode: overlay` env specs."""
    from harness.envs.unpack import unpack
    from harness.render.progress import byte_bars
    from harness.render.terminal import stderr

    con = stderr()
    with byte_bars(con) as bars:
        where, rec = unpack(
            src, dest, force=force, log=lambda m: con.print(m, markup=False, highlight=False), progress=bars
        )
    print(f"PYTHONPATH={where}")
    print(f"env spec: triton: {rec['version']}, mode: overlay, overlay: {where}")


@app.command("show")
def env_show(spec: EnvSpecName) -> None:
    """Print what a spec resolves to (variables expanded): interpreter, overlay, knobs, timing, Triton cache, and
    the Triton and torch that interpreter really imports (version and path). A spec that cannot run exits 2."""
    import json

    from harness.envs.spec import load_env_spec
    from harness.envs.venv import check_venv, probe

    s = load_env_spec(spec)
    check_venv(s)
    info = probe(s)
    print(
        json.dumps(
            {**s.summary(), "python_version": info.get("version"), **{k: info[k] for k in ("triton", "torch")}},
            indent=2,
        )
    )
