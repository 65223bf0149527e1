"""Helpers for a kernel file that runs a library's op as the library's users call it (the ``chosen_config`` hook,
docs/kernels-from-another-repository.md): standard library only, as the rest of the kernel contract."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def returned(owner: Any, name: str, optional: bool = False) -> Iterator[list[Any]]:
    """While inside, every call of ``owner.name`` (a module's function, an object's method) still runs as it would,
    and what it returned is appended to the list yielded: how an adapter learns the config a library's entry picked
    for itself (AITER's ``_get_config``), without re-implementing its lookup. ``owner.name`` is put back on exit.
    ``optional``: an ``owner`` without ``name`` (an older checkout) yields a list that stays empty."""
    if optional and not hasattr(owner, name):
        yield []
        return
    real = getattr(owner, name)
    seen: list[Any] = []

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        seen.append(_snapshot(out))  # as returned: the caller may change it next (AITER pops ``kernel_type``)
        return out

    setattr(owner, name, spy)
    try:
        yield seen
    finally:
        setattr(owner, name, real)


def _snapshot(value: Any) -> Any:
    """``value`` with its dicts copied (at its top level and inside a tuple or list)."""
    if isinstance(value, dict):
        return dict(value)
    if isinstance(value, (tuple, list)):
        return type(value)(dict(v) if isinstance(v, dict) else v for v in value)
    return value
