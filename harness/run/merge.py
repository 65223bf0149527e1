"""Merging the parts of one environment's results (the GPUs of a node, the shards of a CI matrix or a Slurm array)
into the one results file every later stage reads. Parts are merged only when their times mean the same thing:
one stack, one method, one GPU model — a part that differs is refused, naming the field and both values. No case
may be in two parts, and with the suite given none may be missing."""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path
from typing import Any

from harness.errors import HarnessError, counted
from harness.fsutil import Output, atomic_write, guard_outputs, json_object
from harness.inputs.suite import load_suite
from harness.results import identity, integrity
from harness.results.gpu import gpu_field
from harness.results.load import load_results, records
from harness.results.schema import artifacts_dir, sidecar_path, written_sidecar
from harness.run.sidecar import write_sidecar


def check_parts(parts: list[Path]) -> list[dict[str, Any]]:
    """The parts' sidecars, after checking they agree on every SAME field (HarnessError naming the first that
    does not, with both values and both files) and are parts of one suite, each shard once. An empty part (a
    shard without cases) measured nothing: only its suite and shard are checked."""
    envs = [_env_of(p) for p in parts]
    measured = [(p, e) for p, e in zip(parts, envs) if not e.get("empty")]
    first, env0 = measured[0] if measured else (None, {})
    for p, env in measured[1:]:
        for d in identity.differences(env0, env, identity.PARTS):
            if d.facet == "suite":
                continue  # _check_identity says it with the suites' names, empty parts included
            if d.severity == identity.REFUSE:
                raise HarnessError(f"{p}: {d.field} is {identity.show(d.b)} but {first} has {identity.show(d.a)}: "
                                   "parts of one results file must be measured the same way")  # fmt: skip
    _check_identity(parts, envs)
    return envs


def _env_of(part: Path) -> dict[str, Any]:
    """A part's sidecar; its rows are checked too, except in a part its sidecar calls empty (header only)."""
    from harness.results.load import load_env

    env = load_env(part)
    if env.get("empty"):
        header, rows = _rows(part)
        if rows:
            raise HarnessError(f"{part}: its sidecar says it is an empty shard but it has {len(rows)} rows")
        return env
    return load_results(part).attrs["env"]


def _check_identity(parts: list[Path], envs: list[dict[str, Any]]) -> None:
    """One suite (by its content where the sidecars record it, else by its file name); no shard twice (the
    parts of --gpus share their shard, each with its own GPUs); all N shards."""
    contents = [e.get("suite_content") for e in envs]
    if all(contents):
        for p, e, c in zip(parts[1:], envs[1:], contents[1:]):
            if c != contents[0]:
                raise HarnessError(f"{p}: its suite ({identity.suite_name(e)}) holds other entries than "
                                   f"{parts[0]}'s ({identity.suite_name(envs[0])}): parts of one suite only")  # fmt: skip
    else:
        named = [(p, n) for p, n in zip(parts, map(identity.suite_name, envs)) if n]
        for p, s in named[1:]:
            if s != named[0][1]:
                raise HarnessError(f"{p}: suite {s} but {named[0][0]} ran suite {named[0][1]}: parts of one suite only")
    seen: dict[tuple[str, Any], Path] = {}
    totals: dict[str, Path] = {}
    for p, e in zip(parts, envs):
        shard = e.get("shard")
        if not shard:
            continue
        ident = (str(shard), tuple(e.get("visible_gpus") or ()))
        if ident in seen:
            raise HarnessError(f"{p}: shard {shard} is also {seen[ident]}: each shard once")
        seen[ident] = p
        totals.setdefault(str(shard).split("/")[-1], p)
    if len(totals) > 1:
        (n1, p1), (n2, p2) = list(totals.items())[:2]
        raise HarnessError(f"{p2}: a shard of {n2} but {p1} is a shard of {n1}: parts of one split only")
    gpu_parts = any(e.get("visible_gpus") for e in envs)  # the parts of one `run --gpus`: one shard's
    if totals and len(seen) == len(parts) and not gpu_parts:  # every part a shard: all of them must be here
        n = int(next(iter(totals)))
        have = {int(str(s).split("/")[0]) for s, _ in seen}
        missing = [f"{i}/{n}" for i in range(1, n + 1) if i not in have]
        if missing:
            raise HarnessError(
                f"shard {', '.join(missing)} missing: their cases are in no part (a job not finished?): merge every shard's results"
            )


def _rows(path: Path) -> tuple[list[str], list[list[str]]]:
    """The header and rows as the loader reads them (blank lines skipped, as the checked frame skipped them)."""
    found = [row for _, row in records(path.read_text(encoding="utf-8-sig"))]
    return (found[0], found[1:]) if found else ([], [])


def merge_results(parts: list[Path], out: Path, suite: Path | None = None) -> dict[str, int]:
    """Write ``out`` (+ sidecar) from ``parts``; returns counts per status."""
    if not parts:
        raise HarnessError("harness merge: no parts given")
    guard_outputs(
        [
            Output("--out", out, merged, "a file `harness merge` wrote"),
            Output(
                "--out's sidecar",
                sidecar_path(out),
                lambda p: written_sidecar(json_object(p)),
                "a sidecar harness wrote",
            ),
        ],
        [*parts, *map(sidecar_path, parts)],
    )
    envs = check_parts(parts)
    header, rows, seen = None, [], {}
    for p in parts:
        h, rs = _rows(p)
        if header is not None and h != header:
            raise HarnessError(f"{p}: line 1: columns differ from {parts[0]}'s (written by another harness version)")
        header = h
        if "kernel" not in h or "case_id" not in h:  # an empty shard's header, which no loader checked
            raise HarnessError(f"{p}: line 1: missing required column '{'kernel' if 'kernel' not in h else 'case_id'}'")
        ki, ci = h.index("kernel"), h.index("case_id")
        for r in rs:
            key = (r[ki], r[ci])
            if key in seen:
                raise HarnessError(f"{p}: case {key[0]}/{key[1]} is also in {seen[key]}: parts must not overlap")
            seen[key] = p
        rows += rs
    if suite is not None:
        _check_complete(set(seen), suite)
    with atomic_write(out) as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    meta = merged_sidecar(parts, envs)
    meta.pop("artifacts_dir", None)  # the first part's folder, relative to that part: see gather_artifacts
    kept = gather_artifacts(parts, envs, out)
    if kept:
        meta["artifacts_dir"] = kept
    meta[integrity.KEY] = integrity.record(out, len(rows))  # the merged file's own, not its first part's
    write_sidecar(out, meta)
    status = header.index("status")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[status]] = counts.get(r[status], 0) + 1
    return counts


def merged(out: Path) -> bool:
    """Whether ``out`` is a file an earlier merge wrote (its sidecar lists the parts): the one existing --out a
    merge replaces; a results file of a run, a comparison or any other file there is refused, not overwritten."""
    meta = json_object(sidecar_path(out))
    return meta is not None and isinstance(meta.get("parts"), list)


def _check_complete(present: set[tuple[str, str]], suite: Path) -> None:
    wanted = {(c.name, c.case_id) for c in load_suite(suite)}
    missing = sorted(wanted - present)
    if missing:
        shown = ", ".join(f"{k}/{c}" for k, c in missing[:3])
        are = "is" if len(missing) == 1 else "are"
        raise HarnessError(
            f"{suite}: {counted(len(missing), 'case')} {are} in no part (e.g. {shown}): a shard did not finish?"
        )
    extra = sorted(present - wanted)
    if extra:
        are = "is" if len(extra) == 1 else "are"
        raise HarnessError(
            f"{suite}: {counted(len(extra), 'case')} of the parts {are} not in the suite (e.g. {'/'.join(extra[0])})"
        )


def gather_artifacts(parts: list[Path], envs: list[dict[str, Any]], out: Path) -> str | None:
    """Every part's compiled kernels (``--artifacts``) under OUT's own artifacts folder, so that ``harness explain
    OUT`` finds them all: hard links where the filesystem allows (no space spent twice), copies elsewhere. A file
    two parts both hold (one kernel compiled on two GPUs of a model) is kept once; nothing is overwritten.
    Returns the folder's name, or None when no part kept kernels."""
    sources = [artifacts_dir(p, e) for p, e in zip(parts, envs) if e.get("artifacts_dir")]
    sources = [src for src in sources if src.is_dir()]
    if not sources:
        return None
    dest = artifacts_dir(out)
    dest.mkdir(parents=True, exist_ok=True)
    for src in sources:
        for item in sorted(src.rglob("*")):
            target = dest / item.relative_to(src)
            if item.is_dir():
                target.mkdir(parents=True, exist_ok=True)
            elif not target.exists():
                try:
                    os.link(item, target)
                except OSError:
                    shutil.copy2(item, target)
    return dest.name


def merged_sidecar(parts: list[Path], envs: list[dict[str, Any]]) -> dict[str, Any]:
    """The first part's sidecar, with every part listed (file, host, GPU, when) and the GPUs of all of them: the
    rows' ``gpu`` column says which measured what."""
    base = next((e for e in envs if not e.get("empty")), envs[0])
    meta = json.loads(json.dumps(base))
    for k in ("shard", "visible_gpus", "empty"):  # the merged file is every part's
        meta.pop(k, None)
    if isinstance(meta.get("run_options"), dict):
        meta["run_options"]["shard"] = None
    shards = sorted({str(e["shard"]) for e in envs if e.get("shard")})
    if shards:
        meta["merged_shards"] = shards
    # each part's UUID as compare reads it (nvidia-smi's where torch gave none, not [N/A]): two GPUs must count as two
    uuids = [gpu_field(e, "uuid") for e in envs]
    meta["parts"] = [
        {
            "path": str(p),
            "host": e.get("host"),
            "gpu": u or None,
            "captured_at": e.get("captured_at"),
            **({"empty": True} if e.get("empty") else {}),  # measured nothing: its host ran no case
        }
        for p, e, u in zip(parts, envs, uuids)
    ]
    meta["gpus"] = sorted(set(uuids) - {""})
    for key in PER_KERNEL:  # every part's kernels: a shard ran some of them
        merged = {k: v for e in envs if isinstance(e.get(key), dict) for k, v in e[key].items()}
        if merged:
            meta[key] = merged
    return meta


#: sidecar fields keyed by kernel name
PER_KERNEL = ("kernels", "kernel_sources", "kernel_content", "config_lookup")
