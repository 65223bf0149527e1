"""Output folders that never swallow what harness did not write.

A command that writes a folder (``retune --out``, ``bisect --out``, ``report --out``, ``explain --out``) calls
:func:`prepare_out_dir` before any work. It refuses, in one line naming the option:

- a folder that is, lies inside or holds one of the command's inputs (the compare CSV, a results file, a bundle,
  a database, an artifacts folder): writing there could overwrite what the command reads;
- a folder that holds files harness did not write: no marker (:data:`MARKER`) and none of the command's own
  file names (a folder an older harness wrote, before the marker existed);
- a folder another harness command wrote (a report folder given to ``retune --out``);
- a folder that cannot be made or written into, or a file in its place.

Then it creates the folder and writes the marker, naming the command, so the next run (a resume, ``--force``)
knows the folder is harness's own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from harness.errors import HarnessError

#: written into every output folder a harness command creates: {"written_by": "harness COMMAND"}
MARKER = ".harness-output.json"


def overlap(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> str:
    """How path ``a`` overlaps path ``b``: 'is', 'lies inside', 'holds', or '' (paths resolved, links followed)."""
    ra, rb = Path(a).resolve(), Path(b).resolve()
    if ra == rb:
        return "is"
    if rb in ra.parents:
        return "lies inside"
    if ra in rb.parents:
        return "holds"
    return ""


def refuse_overlap(option: str, out: str | os.PathLike[str], inputs: Iterable[str | os.PathLike[str] | None]) -> None:
    """One line when the folder ``out`` is, lies inside or holds one of ``inputs`` (None entries are skipped)."""
    for src in inputs:
        if src is None or str(src) == "":
            continue
        how = overlap(out, src)
        if how:
            raise HarnessError(
                f"{option} {out} {how} the input {src}: refusing to write there (choose a folder of its own)"
            )


def written_by(folder: str | os.PathLike[str]) -> str | None:
    """The command that wrote ``folder`` by its marker ('harness retune'), or None without a readable marker."""
    try:
        data = json.loads((Path(folder) / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return str(data.get("written_by")) if isinstance(data, dict) and data.get("written_by") else None


def prepare_out_dir(
    option: str,
    out: str | os.PathLike[str],
    command: str,
    *,
    inputs: Iterable[str | os.PathLike[str] | None] = (),
    own: Iterable[str] = (),
    create: bool = True,
) -> Path:
    """Check and create the output folder of ``harness COMMAND`` (see the module docstring); ``own``: file names
    only this command writes, which mark a folder an older harness wrote (before the marker); ``create=False``:
    check only (before the inputs are read), the folder is made by a later call. Returns it."""
    out = Path(out)
    what = f"{option} {out}"
    me = f"harness {command}"
    refuse_overlap(option, out, inputs)
    if out.exists() and not out.is_dir():
        raise HarnessError(f"{what}: is a file, expected a folder")
    blocker = next((a for a in out.parents if a.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise HarnessError(f"{what}: {blocker} is a file, not a folder")
    if out.is_dir():
        by = written_by(out)
        if by is not None and by != me:
            raise HarnessError(f"{what}: was written by `{by}`, not `{me}`: choose another folder")
        try:
            names = {p.name for p in out.iterdir()}
        except OSError as err:
            raise HarnessError(f"{what}: cannot read the folder: {err.strerror}") from None
        if by is None and names and not names & set(own):
            raise HarnessError(
                f"{what}: holds files harness did not write ({_some(names)}): choose a new or empty folder"
            )
    if not create:
        there = out if out.exists() else blocker
        if there is not None and not os.access(there, os.W_OK | os.X_OK):
            raise HarnessError(f"{what}: folder {there} is not writable")
        return out
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise HarnessError(f"{what}: cannot create the folder: {err.strerror}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise HarnessError(f"{what}: the folder is not writable")
    if written_by(out) != me:
        try:
            (out / MARKER).write_text(json.dumps({"written_by": me}) + "\n", encoding="utf-8")
        except OSError as err:
            raise HarnessError(f"{what}: cannot write into the folder: {err.strerror}") from None
    return out


def _some(names: set[str]) -> str:
    shown = sorted(names)[:3]
    return ", ".join(shown) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
