"""The loader's refusals at a million rows: one mistake put into the benchmark's golden file (a few into TOT's) per
variant, then `harness compare` of each, for this checkout and (--base) another, printing each one-line message and
exit code and whether the two checkouts say the same. A fast path that skipped a check would show up here as exit 0.

    python benchmarks/compare_1m_refusals.py --keep DIR [--base OTHER_CHECKOUT]

DIR holds golden.csv and tot.csv of compare_1m.py (made here when missing).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

#: name -> (0-based data row, change to that row's bytes); row r is on file line r + 2
MISTAKES = {
    "negative time": (499_999, lambda r: re.sub(rb",ok,[0-9.]+,", b",ok,-1.5,", r, count=1)),
    "NaN time on an ok row": (799_999, lambda r: re.sub(rb",ok,[0-9.]+,", b",ok,nan,", r, count=1)),
    "unknown status": (699_999, lambda r: r.replace(b",ok,", b",passed,", 1)),
    "duplicate case": (899_999, lambda r: r.replace(b"case899999", b"case899994", 1)),
    "ragged row": (299_999, lambda r: r + b",extra"),
    "not UTF-8": (399_999, lambda r: r.replace(b"case399999", b"caf\xe9", 1)),
    "empty kernel": (123_455, lambda r: r[r.index(b",") :]),
    "world_size 0": (654_320, lambda r: r.replace(b",bf16,,", b",bf16,0,", 1)),
    "world_size 1e300": (654_321, lambda r: r.replace(b",bf16,,", b",bf16,1e300,", 1)),
    "params not JSON": (222_221, lambda r: r.replace(b",,bf16,", b",M=16,bf16,", 1)),
    "text in a number column": (99_999, lambda r: r.replace(b",3,", b",three,", 1)),
    "padded kernel (accepted)": (100_000, lambda r: b" " + r),
    "short row": (299_998, lambda r: r.rsplit(b",", 5)[0]),
    "+nan in a number column": (99_998, lambda r: r.replace(b",3,", b",+nan,", 1)),
    "True in world_size": (654_322, lambda r: r.replace(b",bf16,,", b",bf16,True,", 1)),
    "blank line, then a mistake": (599_999, lambda r: b"\n" + r.replace(b",ok,", b",passed,", 1)),
    "a quote left open in the last row": (999_999, lambda r: r.rsplit(b",", 1)[0] + b',"128'),
}
#: the same, put into the TOT file: golden's cases, row for row, make TOT's unique without a check of their own
#: (load_results' unique_keys), so these are TOT's cases other than golden's
TOT_MISTAKES = {
    "duplicate case in TOT": (899_999, lambda r: r.replace(b"case899999", b"case899994", 1)),
    "a TOT case renamed (accepted)": (899_999, lambda r: r.replace(b"case899999", b"case_renamed", 1)),
}


def variant(golden: bytes, row: int, change) -> bytes:  # noqa: ANN001 - a bytes -> bytes function
    lines = golden.split(b"\n")
    lines[row + 1] = change(lines[row + 1])
    return b"\n".join(lines)


def run(checkout: Path, g: Path, t: Path) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run([sys.executable, "-m", "harness", "compare", str(g), str(t)], env=env, cwd=checkout,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    return done.returncode, done.stderr.strip()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", type=Path, required=True)
    ap.add_argument("--base", type=Path)
    a = ap.parse_args()
    here = Path(__file__).resolve().parents[1]
    g, t = a.keep / "golden.csv", a.keep / "tot.csv"
    if not (g.exists() and t.exists()):
        subprocess.run([sys.executable, str(here / "benchmarks" / "compare_1m.py"), "--keep", str(a.keep),
                        "--repeat", "1"], check=True, stdout=subprocess.DEVNULL)  # fmt: skip
    golden, tot = g.read_bytes(), t.read_bytes()
    bad = a.keep / "bad.csv"
    same = 0
    mistakes = [(name, *m, False) for name, m in MISTAKES.items()]
    mistakes += [(name, *m, True) for name, m in TOT_MISTAKES.items()]
    for name, row, change, in_tot in mistakes:
        bad.write_bytes(variant(tot if in_tot else golden, row, change))
        files = (g, bad) if in_tot else (bad, t)
        rc, msg = run(here, *files)
        line = f"{name}: exit {rc}: {msg or '(no message)'}"
        if a.base:
            base = run(a.base.resolve(), *files)
            same += base == (rc, msg)
            line += "   [base: same]" if base == (rc, msg) else f"   [base: exit {base[0]}: {base[1]}]"
        print(line)
    bad.unlink()
    if a.base:
        print(f"{same} of {len(mistakes)} the same as {a.base}")


if __name__ == "__main__":
    main()
