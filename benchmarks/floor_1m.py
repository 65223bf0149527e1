"""The floor under `harness compare` of two big files: what Arrow alone takes, in a fresh process, to read both
results files as the loader does and to write a compare.csv of the same table, with no check, no verdict and no
pandas. Run beside the whole CLI, interleaved, it says how much of a time target is left for harness' own work
on this machine at this hour (benchmarks/README.md).

    python benchmarks/floor_1m.py DIR [--repeat 5] [--cli]

DIR holds golden.csv and tot.csv (compare_1m.py --keep DIR) and the compare.csv harness wrote of them (c.csv, else
compare.csv): its table is kept once as Arrow IPC (DIR/floor-table.arrow, memory-mapped, so it costs the timed run
nothing to get) and written again as CSV, the two halves on two threads as harness.compare.store writes them.
--cli times `python -m harness compare DIR/golden.csv DIR/tot.csv --out ...` too, each run after a floor run.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

#: one floor run, a fresh interpreter: its wall and CPU seconds, as JSON on its last line
FLOOR = r"""
import json, resource, sys, time
from concurrent.futures import ThreadPoolExecutor
w0 = time.perf_counter()
import pyarrow as pa, pyarrow.csv as pacsv, pyarrow.ipc
from harness.results.arrowcsv import read_table
from pathlib import Path
pa.set_memory_pool(pa.jemalloc_memory_pool())
d, out = Path(sys.argv[1]), Path(sys.argv[2])
tables = [read_table(d / "golden.csv"), read_table(d / "tot.csv")]
w1 = time.perf_counter()
table = pa.ipc.open_file(pa.memory_map(str(d / "floor-table.arrow"))).read_all()
half = table.num_rows // 2
opts = pacsv.WriteOptions(batch_size=65536)
second = out.with_name(out.name + ".second")
def write(part, path, header):
    with open(path, "wb") as fh:
        pacsv.write_csv(part, fh, pacsv.WriteOptions(batch_size=65536, include_header=header))
with ThreadPoolExecutor(1) as pool:
    later = pool.submit(write, table.slice(half), second, False)
    write(table.slice(0, half), out, True)
    later.result()
with open(out, "ab") as fh, open(second, "rb") as src:
    while chunk := src.read(1 << 24):
        fh.write(chunk)
second.unlink()
r = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"read": w1 - w0, "write": time.perf_counter() - w1, "wall": time.perf_counter() - w0,
                  "cpu": r.ru_utime + r.ru_stime, "rows": [t.num_rows for t in tables]}))
"""


def keep_table(d: Path) -> None:
    """DIR/floor-table.arrow from the compare.csv harness wrote (once)."""
    import csv
    import re

    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.ipc

    kept = d / "floor-table.arrow"
    if kept.exists():
        return
    source = next((p for p in (d / "c.csv", d / "compare.csv") if p.exists()), None)
    if source is None:
        sys.exit(f"floor_1m: {d} holds no c.csv or compare.csv (harness compare ... --out {d}/c.csv first)")
    with open(source, encoding="utf-8") as fh:
        names, first = next(csv.reader([fh.readline()])), fh.readline()
    # a column harness writes quoted stays text (an empty one too, "" as written, not an empty cell)
    quoted = [cell.startswith('"') for cell in re.findall(r'("(?:[^"]|"")*"|[^,\n]*)(?:,|\n|$)', first)]
    types = {name: pa.string() for name, q in zip(names, quoted, strict=False) if q}
    table = pacsv.read_csv(source, convert_options=pacsv.ConvertOptions(column_types=types))
    with pyarrow.ipc.new_file(str(kept), table.schema) as w:
        w.write_table(table)


def child_seconds(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", type=Path)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cli", action="store_true", help="time the whole `harness compare` too, interleaved")
    a = ap.parse_args()
    d = a.dir
    keep_table(d)
    here = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(here)}
    for k in range(a.repeat):
        wall, cpu, out = child_seconds([sys.executable, "-c", FLOOR, str(d), str(d / "floor-out.csv")], env)
        shown = f"run {k + 1}: floor wall {wall:.2f} s, cpu {cpu:.2f} s ({out.strip().splitlines()[-1]})"
        if a.cli:
            cmd = [sys.executable, "-m", "harness", "compare", str(d / "golden.csv"), str(d / "tot.csv"),
                   "--out", str(d / "floor-cli.csv")]  # fmt: skip
            for p in (d / "floor-cli.csv", d / "floor-cli.csv.meta.json"):
                p.unlink(missing_ok=True)
            wall, cpu, _ = child_seconds(cmd, env)
            shown += f"; harness compare wall {wall:.2f} s, cpu {cpu:.2f} s"
        print(shown + f"   (load average {os.getloadavg()[0]:.2f})", flush=True)


if __name__ == "__main__":
    main()
