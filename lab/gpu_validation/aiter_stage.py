"""Stage the part of an AITER checkout that examples/aiter's adapter imports, for a device call (which carries at
most 64 MiB with the repository): the five batched GEMM ops, every module of ``aiter`` they import (followed in
the source, lazy imports included), the package ``__init__.py`` files on the way, the ops' config files, AITER's
LICENSE, and ``.git_archival.txt`` naming the commit (harness records it as the library's commit, where the
folder is no git checkout of its own). Nothing else: no C++/CK sources, tests, docs or 3rdparty.

    python3 lab/gpu_validation/aiter_stage.py [--git-dir DIR] [--rev REV] [--out .stage/aiter]
    python3 lab/gpu_validation/aiter_stage.py --pr fc01c4f00f --out .stage/aiter-pr   # OUT/main (its parent), OUT/pr
    AITER_CHECKOUT=$PWD/.stage/aiter harness suite show examples/aiter/batched_gemm.yaml

``--git-dir`` is a clone of ROCm/aiter (a bare one works; default $AITER_GIT_DIR or the session's mirror). The
files come out of ``git archive`` of REV, so a dirty work tree is not what is staged.

Left out on purpose, and why:
- ``aiter/__init__.py``: loads AITER's JIT-built C++ ops; the suite imports the subpackages without it
  (``library: {init: false}``).
- ``aiter.ops.triton._gluon_kernels``: gfx1250's Gluon kernels, imported only when a wrapper takes its
  ``backend="gluon"`` path (gfx1250 only; never on an NVIDIA GPU, gfx950 or the interpreter).
- ``aiter.ops.triton.quant`` and ``.comms``: ``aiter/ops/triton/__init__.py`` tries them under ``except
  ImportError`` (comms needs iris); the batched ops import neither.
"""

from __future__ import annotations

import argparse
import ast
import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

DEFAULT_GIT_DIR = "/work/.mirror/ROCm+aiter/repo"
OPS = (
    "batched_gemm_bf16",
    "batched_gemm_a8w8",
    "batched_gemm_a16wfp4",
    "batched_gemm_afp4wfp4",
    "batched_gemm_a8w8_a_per_token_group_prequant_w_per_batched_tensor_quant",
)
#: what the adapter imports besides the ops: AITER's post-processing (compute_splitk_params, get_splitk) and its
#: arch query
ROOTS = (
    *(f"aiter.ops.triton.gemm.batched.{op}" for op in OPS),
    "aiter.ops.triton.utils.gemm_config_utils",
    "aiter.ops.triton.utils._triton.arch_info",
    "aiter.ops.triton.gemm.basic.gemm_a16wfp4",
)
SKIP = ("aiter.ops.triton._gluon_kernels", "aiter.ops.triton.quant", "aiter.ops.triton.comms")
CONFIGS = "aiter/ops/triton/configs/"
EXTRA = ("LICENSE",)


def _git(git_dir: str, *args: str) -> str:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, text=True).stdout


def _skipped(module: str) -> bool:
    return any(module == s or module.startswith(s + ".") for s in SKIP)


def imported(source: str, module: str, is_package: bool, exists) -> list[str]:
    """The ``aiter`` modules ``source`` (module ``module``) imports anywhere in its body: ``from a import b`` names
    ``a.b`` too when that is a module (``exists``)."""
    package = module if is_package else module.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = parts[: len(parts) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out += [mod, *(f"{mod}.{a.name}" for a in node.names if exists(f"{mod}.{a.name}"))]
    return [m for m in out if m == "aiter" or m.startswith("aiter.")]


def closure(git_dir: str, rev: str, roots: tuple[str, ...] = ROOTS) -> tuple[list[str], list[str]]:
    """(the files of REV the modules ``roots`` need, sorted; the modules imported but absent). Every package
    ``__init__.py`` on the way to a module is included (Python runs them), ``aiter/__init__.py`` excepted."""
    files = set(_git(git_dir, "ls-tree", "-r", "--name-only", rev, "aiter/").split("\n"))

    def path_of(module: str) -> str | None:
        p = module.replace(".", "/")
        return p + ".py" if p + ".py" in files else p + "/__init__.py" if p + "/__init__.py" in files else None

    seen: dict[str, str | None] = {}
    todo = list(roots)
    while todo:
        m = todo.pop()
        if m in seen or _skipped(m) or m == "aiter":
            continue
        parts = m.split(".")
        todo += [".".join(parts[:i]) for i in range(2, len(parts))]  # the packages on the way
        p = seen[m] = path_of(m)
        if p is not None:
            todo += imported(_git(git_dir, "show", f"{rev}:{p}"), m, p.endswith("__init__.py"), path_of)
    # a package without __init__.py (a namespace package, e.g. utils/_triton) is found by its modules: not missing
    missing = [
        m for m, p in seen.items() if p is None and not any(k.startswith(m + ".") and v for k, v in seen.items())
    ]
    return sorted(p for p in seen.values() if p), sorted(missing)


def config_files(git_dir: str, rev: str) -> list[str]:
    """The ops' config files in every layout AITER reads (flat ``gemm/{arch}-BATCHED_GEMM-*``, ``gemm/gluon/``,
    nested ``{arch}/{backend}/gemm/batched_gemm_*/``)."""
    names = _git(git_dir, "ls-tree", "-r", "--name-only", rev, CONFIGS).split("\n")
    return sorted(n for n in names if n.endswith(".json") and ("BATCHED_GEMM-" in n or "/batched_gemm_" in n))


def stage(git_dir: str, rev: str, out: Path) -> dict[str, object]:
    commit = _git(git_dir, "rev-parse", f"{rev}^{{commit}}").strip()
    code, missing = closure(git_dir, commit)
    configs = config_files(git_dir, commit)
    present = set(_git(git_dir, "ls-tree", "--name-only", commit).split("\n"))
    paths = [*code, *configs, *(e for e in EXTRA if e in present)]
    tar = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", "--format=tar", commit, "--", *paths],
        check=True, capture_output=True,
    ).stdout  # fmt: skip
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        t.extractall(out, **kw)  # noqa: S202 - git archive's own output
    date = _git(git_dir, "log", "-1", "--format=%cI", commit).strip()
    # setuptools-scm's format of the file `git archive` fills in (export-subst): harness reads `node:` from it
    (out / ".git_archival.txt").write_text(f"node: {commit}\nnode-date: {date}\n")
    size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    return {"commit": commit, "date": date, "code": code, "configs": configs, "missing": missing, "bytes": size}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--git-dir", default=os.environ.get("AITER_GIT_DIR", DEFAULT_GIT_DIR))
    ap.add_argument("--rev", default="HEAD")
    ap.add_argument("--out", type=Path, default=Path(".stage/aiter"))
    ap.add_argument(
        "--pr", metavar="REV", help="stage REV's parent into OUT/main and REV into OUT/pr (a PR against main)"
    )
    ap.add_argument("--list", action="store_true", help="print every staged file")
    a = ap.parse_args(argv)
    if not Path(a.git_dir).is_dir():
        print(f"aiter_stage: no git directory {a.git_dir} (--git-dir, or $AITER_GIT_DIR)", file=sys.stderr)
        return 2
    todo = [(f"{a.pr}^", a.out / "main"), (a.pr, a.out / "pr")] if a.pr else [(a.rev, a.out)]
    for rev, out in todo:
        r = stage(a.git_dir, rev, out)
        if a.list:
            print("\n".join([*r["code"], *r["configs"]]))  # type: ignore[list-item]
        print(
            f"aiter_stage: {out}: AITER {r['commit'][:10]} ({r['date']}), {len(r['code'])} Python files, "  # type: ignore[index]
            f"{len(r['configs'])} config files, {r['bytes'] / 1024:.0f} KiB"  # type: ignore[arg-type]
        )
        if r["missing"]:
            print(f"aiter_stage: imported but not in the checkout: {', '.join(r['missing'])}")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
