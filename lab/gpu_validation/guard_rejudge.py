"""A multi-GPU run's guard decisions, made again from its journals with today's guard (harness/verdict/groupcheck.py):
for each stack, the cases the run made ``unstable`` through the guard, and those today's guard would refuse from
the same reps (every worker group's rank times, as the run journalled them). A change to the guard's bounds is
checked against the runs already measured this way, without a GPU.

    python lab/gpu_validation/guard_rejudge.py DIR [DIR ...]     # each DIR holds STACK.csv + STACK.csv.journal.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.run.cases import CaseState, group_problem  # noqa: E402
from harness.verdict.groupcheck import refused  # noqa: E402


class _Case:
    def __init__(self, key: str):
        self.name, _, self.case_id = key.partition("\x1f")


def states(journal: Path) -> dict[str, CaseState]:
    out: dict[str, CaseState] = {}
    for line in journal.read_text().splitlines():
        e = json.loads(line)
        if e.get("kind") != "rep" or not e.get("rank_times_us"):
            continue
        st = out.setdefault(e["key"], CaseState(case=_Case(e["key"]), request={}, label_procs=True))  # type: ignore[arg-type]
        st.add_rep(e["time_us"], None, None, e["rank_times_us"], e.get("halves_pct"), e.get("proc", 0))
    return out


def rejudge(results: Path) -> dict[str, list[str]]:
    import pandas as pd

    rows = pd.read_csv(results)
    sts = states(Path(f"{results}.journal.jsonl"))
    was = [f"{r.kernel}/{r.case_id}" for r in rows.itertuples() if refused(r._asdict())]
    now = []
    for key, st in sts.items():
        why = group_problem(st)
        if why:
            now.append(f"{key.replace(chr(31), '/')}: {why}")
    return {"was": was, "now": sorted(now), "cases": [str(len(sts))]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path)
    a = ap.parse_args()
    for d in a.dirs:
        for results in sorted(d.glob("*.csv")):
            if not Path(f"{results}.journal.jsonl").exists():
                continue
            r = rejudge(results)
            print(f"{results}: {r['cases'][0]} multi-GPU cases; refused by the run's guard {len(r['was'])}, "
                  f"by today's {len(r['now'])}")  # fmt: skip
            for why in r["now"]:
                print(f"  {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
