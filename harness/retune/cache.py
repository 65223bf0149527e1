"""Timings a retune has taken, kept in its output folder (``DIR/cache.jsonl``) so that a second retune measures
only what the first did not, and a killed one goes on where it stopped.

One JSON line per timing, appended and fsync'ed as soon as the run that took it has finished. Its key is
everything the time depends on: the kernel (and a hash of its source file), the case, the config, the stack
(Triton version and folder), the GPU (its UUID; the model and host on a machine without one), and what the
timing was for (``tag``: ``search`` for the single-stack timings of the search, ``guard:…`` for the four
interleaved measurements of one change, which are only ever reused together).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.retune.space import config_key


@dataclass(frozen=True)
class Key:
    kernel: str
    source: str  # hash of the kernel file's bytes
    case_id: str
    config: str  # config_key(config)
    stack: str
    gpu: str
    tag: str


#: the columns of a results row a timing keeps besides its time: what compare's confidence reads (its reps)
EVIDENCE = ("reps", "rep_times_us", "rep_procs", "spread_pct", "sm_clock_mhz")


@dataclass(frozen=True)
class Entry:
    key: Key
    status: str
    time_us: float | None
    error: str = ""
    #: EVIDENCE's cells of the row (None: cached before they were kept)
    evidence: dict[str, Any] | None = None

    def row(self) -> dict[str, Any]:
        """The results row this timing stands for, as far as compare's confidence reads one."""
        return {"status": self.status, "time_us": self.time_us, **(self.evidence or {})}


def source_hash(path: str | os.PathLike[str]) -> str:
    """A short hash of a kernel file (``file.py:name`` names the file): its timings go stale when it changes."""
    file = str(path).partition(".py:")[0]
    file = file if file.endswith(".py") else file + ".py"
    try:
        return hashlib.sha1(Path(file).read_bytes()).hexdigest()[:12]
    except OSError:
        return ""


def digest(*parts: Any) -> str:
    """A short, stable hash of JSON-able parts (batch and tag names)."""
    return hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


class Cache:
    """The timings of ``DIR/cache.jsonl``, by key; a torn last line (a kill mid-write) is skipped."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.entries: dict[Key, Entry] = {}
        self.loaded = 0
        self.lines = 0  # non-empty lines read, timings or not: a file of lines none of which is a timing is no cache
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
                self.lines += bool(line.strip())
                try:
                    d = json.loads(line)
                    ev = d.get("evidence")
                    e = Entry(
                        Key(**d["key"]),
                        d["status"],
                        d.get("time_us"),
                        d.get("error", ""),
                        ev if isinstance(ev, dict) else None,
                    )
                except (ValueError, KeyError, TypeError):
                    continue
                self.entries.setdefault(e.key, e)
        self.loaded = len(self.entries)

    def get(self, key: Key) -> Entry | None:
        return self.entries.get(key)

    def add(self, entries: list[Entry]) -> None:
        """Append ``entries`` (those not already held) and fsync."""
        new = [e for e in entries if e.key not in self.entries]
        if not new:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            for e in new:
                fh.write(json.dumps({**asdict(e), "key": asdict(e.key)}) + "\n")
                self.entries[e.key] = e
            fh.flush()
            os.fsync(fh.fileno())


def make_key(kernel: str, source: str, case_id: str, config: dict[str, Any], stack: str, gpu: str, tag: str) -> Key:
    return Key(kernel, source, case_id, config_key(config), stack, gpu, tag)
