"""Where a run's wall time went, from its results' sidecars: each env's phases (preparing and compiling, heating,
the reps, re-measuring), and for `run --gpus` the node's compile pass and every part's wall time.

    python3 lab/gpu_validation/phases.py GOLDEN.csv TOT.csv ...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def sidecar(csv: Path) -> dict:
    return json.loads(Path(f"{csv}.env.json").read_text())


def parts_of(csv: Path) -> list[Path]:
    folder = csv.parent / f"{csv.name}.parts"
    return sorted(folder.glob("*.csv")) if folder.is_dir() else [csv]


def main(paths: list[str]) -> None:
    for p in map(Path, paths):
        meta = sidecar(p)
        node = meta.get("node") or {}
        print(f"{p}: {meta.get('env_name')}, node wall {node.get('wall_s', '?')} s")
        for c in node.get("precompile") or []:
            print(
                f"  node compile {c['env']}: {c.get('cases')} cases in {c.get('blocks')} blocks, {c.get('jobs')} jobs, "
                f"{c.get('wall_s')} s wall, {c.get('compile_s')} s of compiling"
            )
        walls = {q["part"]: q for q in node.get("parts") or []}
        for part in parts_of(p):
            ph = sidecar(part).get("phases") or {}
            w = walls.get(part.stem, {})
            figures = ", ".join(f"{k} {v}" for k, v in ph.items())
            print(f"  {part.stem}: {w.get('cases', '?')} cases, part wall {w.get('wall_s', '?')} s; {figures}")
            pre = sidecar(part).get("precompile")
            if pre:
                print(f"    its own compile pass: {pre}")


if __name__ == "__main__":
    main(sys.argv[1:])
