"""The one error type for mistakes a user can make (bad files, bad options), and the helpers its messages use.

Raised anywhere in library code, caught once in the CLI, printed as one line, exit code 2.
Anything else that escapes is our bug and keeps its traceback.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class HarnessError(Exception):
    """A user-caused error; ``str(err)`` is the one line shown to the user."""

    exit_code = 2


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'num_warps'?)`` when a choice is close to ``word`` (case-insensitive), else ``''``."""
    options = {c.lower(): c for c in choices}
    close = difflib.get_close_matches(str(word).lower(), list(options), n=1, cutoff=0.75)
    return f" (did you mean '{options[close[0]]}'?)" if close else ""


def unknown_key(where: str, key: str, known: Iterable[str], what: str = "key") -> HarnessError:
    """``where: unknown key 'dtpye' (did you mean 'dtype'?)``; lists the known keys when none is close."""
    known = sorted(known)
    hint = did_you_mean(key, known) or f" (known: {', '.join(known)})"
    return HarnessError(f"{where}: unknown {what} {quoted(key)}{hint}")


def quoted(text: object) -> str:
    """``'text'``, or its escaped form where it holds a newline or another character that would break the line."""
    text = str(text)
    return f"'{text}'" if text.isprintable() else repr(text)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 case``, ``2 cases``, ``0 cases``: a count with its noun in the number it needs (``plural``: where adding
    an s is wrong, as in ``1 GPU`` / ``2 GPUs`` it is right, ``1 entry`` / ``2 entries`` it is not)."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
