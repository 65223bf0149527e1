"""Time the reading of a results file's rep columns (``rep_times_us`` by reps.Column, ``rep_procs`` by
procs.Labels), as the loader's Arrow table holds them, in a fresh process per checkout: CPU seconds of each, the
best of a few parses (the first in a process also pays for fresh memory).

    python benchmarks/rep_columns.py FILE.csv [--base OTHER_CHECKOUT] [--repeat 3]

FILE.csv: a labelled results file (compare_1m.py --filled --odd 10 --labelled --keep DIR: DIR/golden.csv).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ONE = r"""
import json, os, sys, time
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
from pathlib import Path
import pyarrow as pa
pa.set_memory_pool(pa.jemalloc_memory_pool())
from harness.results.arrowcsv import read_table
from harness.verdict import reps
try:  # the rep processes' reader: verdict/procs.py from 2026-12-02, reps.py before
    from harness.verdict.procs import Labels
except ImportError:
    Labels = reps.Labels
table = read_table(Path(sys.argv[1]))
got = {"rep_times_us": [], "rep_procs": []}
for _ in range(int(sys.argv[2])):
    for name, kind in (("rep_times_us", reps.Column), ("rep_procs", Labels)):
        t0 = time.process_time()
        kind(table[name]).parsed()
        got[name].append(time.process_time() - t0)
print(json.dumps(got))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("file", type=Path)
    ap.add_argument("--base", type=Path)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    sides = [("this", Path(__file__).resolve().parents[1])] + ([("base", a.base.resolve())] if a.base else [])
    for name, checkout in sides:
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        done = subprocess.run([sys.executable, "-c", ONE, str(a.file.resolve()), str(a.repeat)], env=env,
                              cwd=checkout, capture_output=True, text=True, check=True)  # fmt: skip
        got = json.loads(done.stdout.strip().splitlines()[-1])
        shown = ", ".join(f"{col} {min(s):.3f} (first {s[0]:.3f})" for col, s in got.items())
        print(f"{name}: CPU s best of {a.repeat}: {shown}")


if __name__ == "__main__":
    main()
