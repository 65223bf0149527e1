"""A kernel's SPEC, read from its file without importing it (the driver may have no torch or triton).

The file's top-level statements are evaluated in a namespace that holds only the kernel contract (``harness``,
``harness.kernel_api``, and the old ``kernels.spec``), a few standard modules and safe builtins: imports of
anything else, and statements that need them (``@triton.jit`` functions, ``DTYPES = {"bf16": torch.bfloat16}``),
are skipped. What remains is what a SPEC may use: literals, constants,
pure functions and lambdas. For ``file.py:name`` the SPEC is the class attribute of ``name`` (inherited from a
class of the same file). Everything wrong with a kernel file is one line naming the file, before anything runs.
"""

from __future__ import annotations

import ast
import builtins
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import harness.kernel_api as contract
import kernels
from harness.errors import HarnessError, did_you_mean
from harness.kernel_api import spec as S

KERNELS_DIR = Path(kernels.__file__).resolve().parent
#: functions every kernel file defines (on the module, or on the ``:name`` object)
INTERFACE = ("make_inputs", "launch", "reference")
#: modules a SPEC may use; every other import is skipped
PURE_MODULES = {
    "math": math,
    "dataclasses": __import__("dataclasses"),
    "harness": contract,  # `from harness import KernelSpec`: the public names are the contract's
    "harness.kernel_api": contract,
    "harness.kernel_api.spec": S,
    "kernels.spec": S,  # the deprecated re-export, for kernel files written before the contract was public
}
SAFE_BUILTINS = {
    n: getattr(builtins, n)
    for n in [
        "abs",
        "all",
        "any",
        "bool",
        "dict",
        "divmod",
        "enumerate",
        "float",
        "int",
        "isinstance",
        "len",
        "list",
        "max",
        "min",
        "pow",
        "range",
        "round",
        "set",
        "sorted",
        "str",
        "sum",
        "tuple",
        "zip",
        "ValueError",
        "KeyError",
        "staticmethod",
        "classmethod",
        "property",
        "__build_class__",
    ]
}


@dataclass(frozen=True)
class Kernel:
    """A kernel as a suite names it: its SPEC and where the worker finds its code."""

    spec: S.KernelSpec
    file: Path
    attr: str = ""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def source(self) -> str:
        """What the worker loads: ``/abs/file.py`` or ``/abs/file.py:name``."""
        return f"{self.file}:{self.attr}" if self.attr else str(self.file)


def is_path_spec(text: str) -> bool:
    return ".py" in text or "/" in text


def split_spec(text: str) -> tuple[str, str]:
    """``file.py:name`` -> (``file.py``, ``name``); ``file.py`` -> (``file.py``, ``''``)."""
    return (text.partition(".py:")[0] + ".py", text.partition(".py:")[2]) if ".py:" in text else (text, "")


@lru_cache(maxsize=1)
def registry() -> dict[str, Path]:
    """The shipped kernels by declared name: every module of kernels/ that declares a SPEC."""
    found: dict[str, Path] = {}
    for f in sorted(KERNELS_DIR.glob("*.py")):
        if f.name.startswith("_") or f.name in ("spec.py", "common.py"):  # helpers, not kernels
            continue
        k = load_file(str(f), "")
        if k.name in found:
            raise HarnessError(f"{f}: kernel name {k.name!r} is declared by {found[k.name]} too")
        found[k.name] = f
    return found


def load_kernel(text: str, base: Path | None = None) -> Kernel:
    """A registered kernel name, or ``path/to/file.py[:name]`` (relative to ``base``): HarnessError when it
    cannot be a kernel."""
    reg = registry()
    if text in reg:
        return load_file(str(reg[text]), "")
    if not is_path_spec(text):
        hint = did_you_mean(text, reg) or f" (registered: {', '.join(reg)}; or give path/to/file.py[:name])"
        raise HarnessError(f"unknown kernel {text!r}{hint}")
    file, attr = split_spec(text)
    path = Path(file)
    if not path.is_absolute() and base is not None:
        path = base / path
    if not path.is_file():
        raise HarnessError(f"kernel {text!r}: file {path} not found")
    return load_file(str(path.resolve()), attr)


@lru_cache(maxsize=256)
def load_file(path: str, attr: str) -> Kernel:
    tree = _parse(Path(path))
    where = f"{path}:{attr}" if attr else path
    ns, classes = _evaluate(tree, path)
    if attr:
        if attr not in classes:
            known = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
            raise HarnessError(f"{path}: no top-level class {attr!r}{did_you_mean(attr, known)}")
        obj = classes[attr]
        spec, defined = getattr(obj, "SPEC", None), obj.defined
    else:
        spec, defined = ns.get("SPEC"), _defined(tree.body)
    if not isinstance(spec, S.KernelSpec):
        got = "no SPEC" if spec is None else f"SPEC is a {type(spec).__name__}"
        raise HarnessError(
            f"{where}: not a kernel: {got} (declare SPEC = KernelSpec(...) from harness; see docs/writing-kernels.md)"
        )
    # chosen_config may be left to the worker: it records what the library's entry launched (worker/launches.py)
    missing = [f for f in (*INTERFACE, *spec.hooks) if f not in defined and f not in S.OPTIONAL_HOOKS]
    if missing:
        raise HarnessError(f"{where}: kernel {spec.name} lacks {', '.join(missing)} (see docs/writing-kernels.md)")
    undeclared = [h for h in S.HOOKS if h in defined and h not in spec.hooks]
    if undeclared:
        raise HarnessError(
            f"{where}: defines {undeclared[0]}() but its SPEC does not list it in hooks (the worker would not call it)"
        )
    return Kernel(spec, Path(path), attr)


def _parse(path: Path) -> ast.Module:
    try:
        return ast.parse(path.read_bytes(), filename=str(path))
    except SyntaxError as err:
        raise HarnessError(f"{path}: line {err.lineno}: SyntaxError: {err.msg}") from None
    except (OSError, ValueError) as err:
        raise HarnessError(f"{path}: cannot read kernel file: {err}") from None


def _evaluate(tree: ast.Module, path: str, strict: bool = True) -> tuple[dict[str, Any], dict[str, SimpleNamespace]]:
    """The module's pure top-level names, and each top-level class as a namespace of its SPEC and the names it
    defines (its bases' included)."""
    ns: dict[str, Any] = {"__builtins__": SAFE_BUILTINS, "__name__": "harness_kernel_spec"}
    classes: dict[str, SimpleNamespace] = {}
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            _import(node, ns)
        elif isinstance(node, ast.ClassDef):
            classes[node.name] = ns[node.name] = _class(node, ns, classes, path)
        elif isinstance(node, (ast.FunctionDef, ast.Assign, ast.AnnAssign)):
            _try_exec(node, ns, path, strict=strict and _assigns(node, "SPEC"))
    return ns, classes


def _assigns(node: ast.stmt, name: str) -> bool:
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return any(isinstance(t, ast.Name) and t.id == name for t in targets)


def _module(name: str) -> Any:
    """A module a SPEC may use: math, dataclasses, the contract (harness), or another module of kernels/ as the
    namespace of its own pure names (so a user kernel can build on a shipped kernel's SPEC); None for anything else."""
    if name in PURE_MODULES:
        return PURE_MODULES[name]
    head, _, tail = name.partition(".")
    f = KERNELS_DIR / f"{tail}.py"
    if head == "kernels" and tail.isidentifier() and f.is_file():
        return SimpleNamespace(**_pure_names(str(f)))
    return None


@lru_cache(maxsize=64)
def _pure_names(path: str) -> dict[str, Any]:
    ns, _ = _evaluate(_parse(Path(path)), path, strict=False)
    return {k: v for k, v in ns.items() if not k.startswith("__")}


def _import(node: ast.Import | ast.ImportFrom, ns: dict[str, Any]) -> None:
    if isinstance(node, ast.Import):
        for a in node.names:
            mod = _module(a.name)
            if mod is not None and a.asname:
                ns[a.asname] = mod
            elif mod is not None and "." not in a.name:
                ns[a.name] = mod
            elif a.name.startswith("kernels.") and mod is not None:
                ns.setdefault("kernels", SimpleNamespace()).__dict__[a.name.partition(".")[2]] = mod
        return
    if node.module == "kernels":
        for a in node.names:
            mod = _module(f"kernels.{a.name}")
            if mod is not None:
                ns[a.asname or a.name] = mod
        return
    mod = _module(node.module or "")
    for a in node.names if mod is not None else ():
        if a.name == "*":
            ns.update({k: v for k, v in vars(mod).items() if not k.startswith("_")})
        elif hasattr(mod, a.name):
            ns[a.asname or a.name] = getattr(mod, a.name)


def _try_exec(node: ast.stmt, ns: dict[str, Any], path: str, strict: bool) -> None:
    """Run one top-level statement; one that needs what the driver does not load is skipped, except the SPEC
    itself, whose failure is the kernel's error."""
    code = compile(ast.Module(body=[node], type_ignores=[]), path, "exec")
    try:
        exec(code, ns)  # noqa: S102 - the user's own kernel file, restricted to pure names
    except S.SpecError as err:
        raise HarnessError(f"{path}: line {node.lineno}: {err}") from None
    except Exception as err:  # noqa: BLE001
        if strict:
            raise HarnessError(
                f"{path}: line {node.lineno}: SPEC cannot be evaluated without importing the kernel "
                f"({type(err).__name__}: {err}); a SPEC may use literals, harness's KernelSpec, math and the file's "
                "pure functions and constants"
            ) from None


def _defined(body: list[ast.stmt]) -> set[str]:
    """The names a module or class body binds at its top level (functions, classes, assignments, imports)."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def _class(node: ast.ClassDef, ns: dict[str, Any], classes: dict[str, SimpleNamespace], path: str) -> SimpleNamespace:
    defined: set[str] = set()
    spec = None
    for b in node.bases:
        base = classes.get(b.id) if isinstance(b, ast.Name) else None
        if base is not None:
            defined |= base.defined
            spec = base.SPEC
    defined |= _defined(node.body)
    local = dict(ns)
    for item in node.body:
        if isinstance(item, (ast.Assign, ast.AnnAssign)) and _assigns(item, "SPEC"):
            _try_exec(item, local, path, strict=True)
            spec = local["SPEC"]
    return SimpleNamespace(SPEC=spec, defined=defined)
