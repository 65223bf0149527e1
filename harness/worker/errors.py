"""A failed case's error text: one summary line, then the end of the traceback. Standard library only."""

from __future__ import annotations

import os
import traceback
from typing import Any


def tail(text: str, n: int = 1500) -> str:
    return text if len(text) <= n else "..." + text[-n:]


#: an error text's length: the driver keeps the last 1,500 characters of it (runner._row), prefixes included
ERROR_CHARS = 1400


def _chain(exc: BaseException) -> list[tuple[str, BaseException]]:
    """The exception and the ones it chains to, as (how it links to the one before, exception); at most 5."""
    out: list[tuple[str, BaseException]] = [("", exc)]
    seen = {id(exc)}
    while len(out) < 5:
        e = out[-1][1]
        nxt, how = (e.__cause__, "caused by") if e.__cause__ is not None else (e.__context__, "while handling")
        if nxt is None or e.__suppress_context__ and e.__cause__ is None or id(nxt) in seen:
            break
        seen.add(id(nxt))
        out.append((how, nxt))
    return out


def _where(exc: BaseException, files: tuple[str, ...], repo: str, roots: tuple[str, ...] = ()) -> str:
    """Where ``exc`` was raised: the deepest frame inside a library checkout (``roots``: the user's library, whose
    line is what its engineer fixes), then the kernel file's own frame (:func:`_own_where`), never a frame of the
    checkout again (one staged inside this repository, under .stage/, is inside ``repo`` too)."""
    tops = [os.path.realpath(r) + os.sep for r in roots]
    own = _own_where(exc, files, repo, tuple(tops))
    frames = traceback.extract_tb(exc.__traceback__)
    inside = [(f, t) for f in frames for t in tops if os.path.realpath(f.filename).startswith(t)]
    if not inside:
        return own
    f, top = inside[-1]
    lib = f"{os.path.relpath(os.path.realpath(f.filename), top)}:{f.lineno} in {f.name}"
    return f"{lib}; via {own}" if own else lib


def _own_where(exc: BaseException, files: tuple[str, ...], repo: str, skip: tuple[str, ...] = ()) -> str:
    """``file:line in function`` of the last frame of ``exc`` inside ``files`` (the kernel's own file), else
    inside ``repo`` other than this worker and the folders ``skip``; "" when the failure never passed through
    either."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"{_short_path(exc.filename, repo)}:{exc.lineno}"
    # a frozen module's or exec'd code's pseudo-file (<frozen importlib._bootstrap>) is no file: realpath would
    # place it in the working directory, inside the repository
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith("<")]
    real = {os.path.realpath(f) for f in files}
    mine = [f for f in frames if os.path.realpath(f.filename) in real]
    if not mine and repo:
        root = os.path.realpath(repo) + os.sep
        here = os.path.realpath(__file__)
        mine = [
            f
            for f in frames
            if (p := os.path.realpath(f.filename)).startswith(root) and p != here and not p.startswith(skip)
        ]
    if not mine:
        return ""
    f = mine[-1]
    return f"{_short_path(f.filename, repo)}:{f.lineno} in {f.name}"


def _short_path(path: str, repo: str) -> str:
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(repo)) if repo else path
    return path if rel.startswith("..") else rel


def error_text(exc: BaseException, files: tuple[str, ...] = (), repo: str = "", roots: tuple[str, ...] = ()) -> str:
    """An error as one summary line, then the traceback's end. The summary names each exception of the chain
    (``raise X from Y``: Y is the cause) with the file and line where it was raised in the kernel's own file
    (``files``), so a user kernel's failing line survives even when the exception came out of Triton; with
    ``roots`` (library checkouts) the deepest line inside them comes first."""
    parts = []
    for how, e in _chain(exc):
        msg = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), "")
        where = _where(e, files, repo, roots)
        text = f"{type(e).__name__}: {msg}".rstrip(": ") + (f" ({where})" if where else "")
        parts.append(f"{how} {text}" if how else text)
    head = "; ".join(parts)
    if len(head) > ERROR_CHARS // 2:
        head = head[: ERROR_CHARS // 2 - 3] + "..."
    body = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).strip()
    return head + "\n" + tail(body, ERROR_CHARS - len(head) - 4)  # 4: the newline and _tail's "..."


def import_failure(exc: ImportError, text: str) -> str:
    """An import's failure as a case's error: the module that could not be imported first (status import_error:
    a checkout or an env that lacks it, never the kernel's compile)."""
    return f"cannot import {exc.name or '?'}: {text}"


def is_compile_error(exc: BaseException) -> bool:
    """Did this fail while compiling? On a GPU Triton raises CompilationError & co.; under the interpreter a
    failed ``tl.static_assert`` surfaces as an InterpreterError whose cause was raised inside static_assert."""
    seen: BaseException | None = exc
    while seen is not None:
        names = {c.__name__ for c in type(seen).__mro__}
        if names & {"CompilationError", "CompileTimeAssertionFailure", "OutOfResources", "PTXASError"}:
            return True
        tb = seen.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_name in ("static_assert", "_new_static_assert"):
                return True
            tb = tb.tb_next
        seen = seen.__cause__ or seen.__context__
    return False


def output_problem(inputs: Any, torch: Any) -> str:
    """What is wrong with make_inputs' answer ("" when it is a dict holding a tensor 'y')."""
    if not isinstance(inputs, dict):
        return f"got {type(inputs).__name__}"
    if "y" not in inputs:
        return "no 'y' among its keys: " + (", ".join(map(repr, list(inputs)[:8])) or "none")
    if not isinstance(inputs["y"], torch.Tensor):
        return f"'y' is a {type(inputs['y']).__name__}"
    return ""
