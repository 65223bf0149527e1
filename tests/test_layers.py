"""The packages of harness import downhill: each floor may import the floors below it, never a floor above (an
arrow back up) nor a package beside it on its own floor, and no two modules import each other, directly or round
a loop (a circle). Every import statement counts, those inside functions and under TYPE_CHECKING too: a lazy
import is still a dependency, only a later one. A new package must be given its floor here. And the sizes issue 46
set: the command line's function bodies, all together, and every module of harness, each."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

#: lowest first. worker is standalone (tests/worker/test_imports.py: it imports no other harness package), so it
#: sits low; report is an aggregator above the stages whose outputs it shows (history, retune); cli and
#: __main__ are the top.
FLOORS = [
    ["kernel_api"],  # the kernel contract: standard library only (tests/worker/test_imports.py)
    ["errors", "__init__"],  # __init__: harness itself, which re-exports the contract
    ["fsutil", "outdir", "process", "worker", "csvrows"],  # process: the command's own process settings, stdlib only
    ["envs"],  # env specs and venvs: the library reader (inputs/library.py) reads their schema
    ["results", "inputs"],
    ["verdict"],  # the rule, confidence, stability, re-measuring: pure, below both stages that use them
    ["run", "compare"],
    ["render"],
    ["explain", "publish", "history", "retune"],
    ["bisect", "report", "calibrate"],
    ["flip"],  # finds a comparison's cases and envs as bisect plans them (bisect/plan.py)
    ["cli"],
    ["__main__"],
]
PACKAGE = ROOT / "harness"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported(path: Path, known: dict[str, Path]) -> set[str]:
    """The harness modules a file imports: ``from harness.x import y`` names module harness.x.y when y is one,
    else harness.x; relative imports are resolved against the file's package."""
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], *([node.module] if node.module else [])])
            found |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names}
    return {m for m in found if m in known}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(path, known) - {name} for name, path in known.items()}


def floor_of(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    for i, names in enumerate(FLOORS):
        if top in names:
            return i
    raise AssertionError(f"{module}: package {top} has no floor in tests/test_layers.py FLOORS")


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while (w := stack.pop()) != v:
                comp.append(w)
            if comp:
                found.append(sorted([v, *comp]))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_every_package_has_a_floor():
    tops = {m.split(".")[1] for m in modules() if m.count(".")} - {"__init__"}
    floored = {name for names in FLOORS for name in names}
    assert tops <= floored, f"give these a floor in FLOORS: {sorted(tops - floored)}"


def test_imports_run_downhill():
    """An import between packages goes to a lower floor: never up, never sideways."""
    wrong = []
    for src, targets in graph().items():
        for dst in sorted(targets):
            same_package = src.split(".")[:2] == dst.split(".")[:2]
            if dst != "harness" and not same_package and floor_of(dst) >= floor_of(src):
                wrong.append(f"{src} → {dst}")
    assert not wrong, "imports up or sideways:\n" + "\n".join(wrong)


def test_no_module_imports_itself_round_a_loop():
    assert not cycles(graph()), f"import circles: {cycles(graph())}"


def test_no_private_name_crosses_a_package():
    """A name or module starting with ``_`` is its package's own: another package importing it would tie itself to
    what may change without notice (make it public where it is shared)."""
    crossing = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom) or node.level or not (node.module or "").startswith("harness."):
                continue
            if node.module.split(".")[:2] == name.split(".")[:2]:
                continue
            private = [a.name for a in node.names if a.name.startswith("_")]
            private += [p for p in node.module.split(".") if p.startswith("_") and not p.startswith("__")]
            crossing += [f"{name} → {node.module}.{p}" for p in private]
    assert not crossing, "\n".join(crossing)


#: the most statement lines the command line's function bodies may hold, all of harness/cli together (issue 46):
#: each command parses and forwards its options to a keyword function of its stage, whose work it is
CLI_BODY_LINES = 600
#: the most lines a module of harness may have (issue 46): past it, a module holds more than one thing to name
MODULE_LINES = 500


def body_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The lines from a function's first statement after its docstring to its last (a nested function is inside
    its parent's span, so counted once); the signature and docstring are not counted."""
    body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
    return body[-1].end_lineno - body[0].lineno + 1 if body else 0


def cli_body_lines() -> dict[str, int]:
    """Each module of harness/cli: the body lines of its top-level functions and its classes' methods."""
    counts = {}
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        fns = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        fns += [m for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body
                if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)]  # fmt: skip
        counts[path.name] = sum(map(body_lines, fns))
    return counts


def test_the_cli_is_thin():
    counts = cli_body_lines()
    per_file = "\n".join(f"{n:5d} {name}" for name, n in sorted(counts.items(), key=lambda kv: -kv[1]))
    assert sum(counts.values()) <= CLI_BODY_LINES, (
        f"harness/cli's function bodies hold {sum(counts.values())} lines, more than {CLI_BODY_LINES}: move the "
        f"work into the stage's package\n{per_file}"
    )


def test_no_module_over_500_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MODULE_LINES
    }
    assert not long, f"modules over {MODULE_LINES} lines (split each along a seam with a name): {long}"


def test_the_worker_and_examples_use_only_public_kernel_api():
    """The worker and the examples import no private name of the kernel contract or of the kernels (``_x``, or a
    module ``_x``): what they use is what a kernel author may rely on."""
    private = []
    for path in sorted([*(PACKAGE / "worker").glob("*.py"), *(ROOT / "examples").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and not node.level:
                mods, names = (node.module or "").split("."), [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                mods, names = [p for a in node.names for p in a.name.split(".")], []
            else:
                continue
            if mods[0] in ("harness", "kernels") and mods[:2] != ["harness", "worker"]:
                bad = [p for p in [*mods, *names] if p.startswith("_") and not p.startswith("__")]
                private += [f"{path.relative_to(ROOT)}:{node.lineno}: {p}" for p in bad]
    assert not private, "\n".join(private)
