"""What a kernel declares, read from its source without importing it (the driver may have no torch or triton).

A kernel file (``kernels/*.py`` or a user's ``path/to/file.py[:name]``) may declare, as plain literals:

    PARAMS = {"B": "int", "M": "int", "N": "int", "K": "int", "dtype": "str", "bias": "bool"}  # case fields
    CONFIG_KEYS = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "NUM_KSPLIT")   # config keys it reads besides the launch options
    CONFIG_NAME = "BATCHED_GEMM-A16W16"                           # its config files' family

For ``file.py:name`` the declarations are class attributes of ``name`` (its bases in the same file included).
A kernel that declares nothing keeps working: only the common fields (:data:`COMMON_PARAMS`) of its cases are
checked. Each file is parsed with :mod:`ast`, so a missing file, a syntax error or a missing interface function
is refused when the suite loads, in one line, instead of failing every case at run time.
"""

from __future__ import annotations

import ast
import importlib.util
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, did_you_mean

#: fields every case has, whatever the kernel: the worker reads them (shape, config lookup, inputs' seed)
COMMON_PARAMS = {"B": "int", "M": "int", "N": "int", "K": "int", "seed": "int"}
#: fields that must be > 0 (a shape); ``seed`` must be >= 0
POSITIVE = ("B", "M", "N", "K")
TYPES = ("bool", "float", "int", "str")


@dataclass(frozen=True)
class KernelSpec:
    """A kernel as a suite names it. ``params`` / ``config_keys`` are None when the kernel declares none."""

    spec: str
    file: Path
    params: dict[str, str] | None
    config_keys: tuple[str, ...] | None
    config_name: str | None

    def fields(self) -> dict[str, str]:
        """The case fields this kernel reads, with their types (the common ones included)."""
        return {**COMMON_PARAMS, **(self.params or {})}


def _registry() -> dict[str, str]:
    from kernels import REGISTRY  # the package's __init__ is standard library only

    return REGISTRY


def kernel_file(spec: str, base: Path | None) -> tuple[Path, str]:
    """(file, object name or '') of a registered name or ``path/to/file.py[:name]`` (relative to ``base``)."""
    from kernels import is_path_spec, split_spec

    reg = _registry()
    if spec in reg:
        found = importlib.util.find_spec(reg[spec])
        if found is None or not found.origin:
            raise HarnessError(f"kernel {spec!r}: registered module {reg[spec]} not found")
        return Path(found.origin), ""
    if not is_path_spec(spec):
        hint = did_you_mean(spec, reg) or f" (registered: {', '.join(reg)}; or give path/to/file.py[:name])"
        raise HarnessError(f"unknown kernel {spec!r}{hint}")
    file, attr = split_spec(spec)
    path = Path(file)
    if not path.is_absolute() and base is not None:
        path = base / path
    if not path.is_file():
        raise HarnessError(f"kernel {spec!r}: file {path} not found")
    return path, attr


def load_kernel_spec(spec: str, base: Path | None = None) -> KernelSpec:
    """Read and check what kernel ``spec`` declares; HarnessError when it cannot be a kernel."""
    path, attr = kernel_file(spec, base)
    return _load(spec, str(path.resolve()), attr)


@lru_cache(maxsize=256)
def _load(spec: str, path: str, attr: str) -> KernelSpec:
    tree = _parse(Path(path))
    scope = _Scope(tree.body)
    if attr:
        body = scope.object_body(attr, path)
        where = f"{path}: {attr}"
    else:
        body, where = scope, path
    _check_interface(body, where)
    try:
        name = _literal(body, "CONFIG_NAME", where)
    except HarnessError:
        name = None  # computed: fine for the worker, but its config files cannot be checked here
    return KernelSpec(
        spec=spec,
        file=Path(path),
        params=_params(_literal(body, "PARAMS", where), where),
        config_keys=_config_keys(_literal(body, "CONFIG_KEYS", where), where),
        config_name=name if isinstance(name, str) else None,
    )


def _parse(path: Path) -> ast.Module:
    try:
        return ast.parse(path.read_bytes(), filename=str(path))
    except SyntaxError as err:
        raise HarnessError(f"{path}: line {err.lineno}: SyntaxError: {err.msg}") from None
    except (OSError, ValueError) as err:
        raise HarnessError(f"{path}: cannot read kernel file: {err}") from None


class _Scope:
    """The names a module or class body binds, and the nodes that bind them (the last one wins)."""

    def __init__(self, body: list[ast.stmt], bases: list[_Scope] | None = None, open_: bool = False):
        self.nodes: dict[str, ast.AST] = {}
        self.bases = bases or []
        #: True when names may come from where we cannot see (``import *``, ``__getattr__``, a foreign base)
        self.open = open_
        self._collect(body)

    def _collect(self, body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.nodes[node.name] = node
                self.open |= node.name == "__getattr__"
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            self.nodes[n.id] = node
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    self.open |= a.name == "*"
                    self.nodes[a.asname or a.name.split(".")[0]] = node
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                for part in ("body", "orelse", "finalbody", "handlers"):
                    for sub in getattr(node, part, []) or []:
                        self._collect(sub.body if isinstance(sub, ast.ExceptHandler) else [sub])

    def has(self, name: str) -> bool:
        return name in self.nodes or any(b.has(name) for b in self.bases)

    def node(self, name: str) -> ast.AST | None:
        if name in self.nodes:
            return self.nodes[name]
        return next((n for b in self.bases if (n := b.node(name)) is not None), None)

    def is_open(self) -> bool:
        return self.open or any(b.is_open() for b in self.bases)

    def object_body(self, attr: str, path: str) -> _Scope:
        """The scope of the top-level class ``attr``; an open scope when ``attr`` is not a class we can read."""
        node = self.nodes.get(attr)
        if node is None:
            if self.open:
                return _Scope([], open_=True)
            raise HarnessError(f"{path}: no top-level {attr!r}{did_you_mean(attr, self.nodes)}")
        if not isinstance(node, ast.ClassDef):
            return _Scope([], open_=True)  # built some other way: only running it can tell
        return self._class_scope(node, set())

    def _class_scope(self, node: ast.ClassDef, seen: set[str]) -> _Scope:
        bases, foreign = [], False
        for b in node.bases:
            base = self.nodes.get(b.id) if isinstance(b, ast.Name) else None
            if isinstance(base, ast.ClassDef) and base.name not in seen:
                bases.append(self._class_scope(base, seen | {node.name}))
            elif not (isinstance(b, ast.Name) and b.id == "object"):
                foreign = True
        return _Scope(node.body, bases, open_=foreign)


def _check_interface(scope: _Scope, where: str) -> None:
    from kernels import INTERFACE

    missing = [f for f in INTERFACE if not scope.has(f)]
    if missing and not scope.is_open():
        raise HarnessError(
            f"{where}: not a kernel: missing {', '.join(missing)} (the interface: {', '.join(INTERFACE)}; "
            "see kernels/__init__.py)"
        )


def _literal(scope: _Scope, name: str, where: str) -> Any:
    node = scope.node(name)
    if node is None:
        return None
    value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
    try:
        if value is None:
            raise ValueError(name)
        return ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        line = getattr(node, "lineno", "?")
        raise HarnessError(
            f"{where}: line {line}: {name} must be a plain literal (the driver reads it without importing the kernel)"
        ) from None


def _params(value: Any, where: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise HarnessError(f"{where}: PARAMS must be a dict of field name -> type ({', '.join(TYPES)})")
    for k, t in value.items():
        if t not in TYPES:
            raise HarnessError(f"{where}: PARAMS[{k!r}]: unknown type {t!r} (known: {', '.join(TYPES)})")
        if k in COMMON_PARAMS and t != COMMON_PARAMS[k]:
            raise HarnessError(f"{where}: PARAMS[{k!r}]: {k} is always {COMMON_PARAMS[k]!r}, not {t!r}")
    return dict(value)


def _config_keys(value: Any, where: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    if not isinstance(value, (tuple, list)) or not all(isinstance(k, str) for k in value):
        raise HarnessError(f"{where}: CONFIG_KEYS must be a tuple of config key names")
    return tuple(value)


# --------------------------------------------------------------------------------------------- values
def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a YAML bool"
    return {int: "an integer", float: "a number", str: "a string", type(None): "null"}.get(
        type(value), f"a {type(value).__name__}"
    )


def check_value(where: str, value: Any, typ: str | None, positive: bool = False) -> Any:
    """``value`` as a case field of type ``typ`` (None: any plain value), or HarnessError naming ``where``.

    A bool is not an integer, a number with a fraction is not an integer (16.0 is 16), strings stay strings."""
    if not isinstance(value, (bool, int, float, str, type(None))):
        raise HarnessError(f"{where}: expected a plain value, got {_kind(value)}: {_show(value)}")
    if typ == "int":
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise HarnessError(f"{where}: expected an integer, got {_kind(value)}: {_show(value)}")
    elif typ == "float":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise HarnessError(f"{where}: expected a number, got {_kind(value)}: {_show(value)}")
    elif typ == "bool" and not isinstance(value, bool):
        raise HarnessError(f"{where}: expected true or false, got {_kind(value)}: {_show(value)}")
    elif typ == "str" and not isinstance(value, str):
        raise HarnessError(f"{where}: expected a string, got {_kind(value)}: {_show(value)}")
    if positive and value <= 0:
        raise HarnessError(f"{where}: must be positive, got {value}")
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
