"""Short human descriptions of a run's environment sidecar (shared by every renderer)."""

from __future__ import annotations

from typing import Any

#: (label, key path) rows shown side by side for golden and TOT
ENV_ROWS = (
    ("environment", ("env_name",)),
    ("triton", ("triton", "version")),
    ("triton commit", ("triton", "commit")),
    ("torch", ("torch", "version")),
    ("CUDA / ROCm", ("torch", "gpu_runtime")),
    ("python", ("python", "executable")),
    ("GPU", ("gpu", "name")),
    ("driver", ("gpu", "driver")),
    ("timing", ("timing",)),
    ("captured", ("captured_at",)),
    ("knobs", ("knobs",)),
)


def get(env: dict[str, Any], path: tuple[str, ...]) -> str:
    cur: Any = env
    for k in path:
        if not isinstance(cur, dict) or k not in cur:
            return ""
        cur = cur[k]
    if isinstance(cur, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(cur.items()))
    return "" if cur is None else str(cur)


def libraries(env: dict[str, Any]) -> str:
    """The kernel libraries a run imported from checkouts, each with its commit: ``aiter fc01c4f00f`` ("" when
    none). Two runs under one Triton on two checkouts (a PR against main) differ here only."""
    libs = env.get("libraries")
    if not isinstance(libs, dict):
        return ""
    out = []
    for pkg, lib in sorted(libs.items()):
        commit = lib.get("commit") if isinstance(lib, dict) else None
        out.append(f"{pkg} {commit[:10] if commit else '(commit unknown)'}")
    return ", ".join(out)


def one_line(env: dict[str, Any]) -> str:
    """``golden: triton 3.6.0 (abc123), torch 2.11.0, NVIDIA H100, timing cupti``."""
    if not env:
        return "no metadata (no .env.json sidecar)"
    parts = []
    tv = get(env, ("triton", "version"))
    if tv:
        commit = get(env, ("triton", "commit"))
        parts.append(f"triton {tv}" + (f" ({commit[:10]})" if commit else ""))
    if libraries(env):
        parts.append(libraries(env))
    for label, path in (
        ("torch", ("torch", "version")),
        ("", ("torch", "gpu_runtime")),
        ("", ("gpu", "name")),
        ("timing", ("timing",)),
    ):
        v = get(env, path)
        if v:
            parts.append(f"{label} {v}".strip())
    name = get(env, ("env_name",))
    return (f"{name}: " if name else "") + (", ".join(parts) or "metadata present")


def side_by_side(golden: dict[str, Any], tot: dict[str, Any]) -> list[tuple[str, str, str]]:
    rows = []
    for label, path in ENV_ROWS:
        g, t = get(golden, path), get(tot, path)
        if g or t:
            rows.append((label, g, t))
        if label == "triton commit" and (libraries(golden) or libraries(tot)):
            rows.append(("libraries", libraries(golden), libraries(tot)))
    return rows
