"""harness/retune/retune.py's guard rounds, with a measurer that answers from a known landscape: what a round
decides for one slot must not decide another slot on a change that is not settled yet."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from harness.retune.guard import Measured
from harness.retune.inputs import CaseInfo
from harness.retune.measure import Cost
from harness.retune.model import Options, Slot
from harness.retune.placement import Lookup, resolve
from harness.retune.retune import Retune
from harness.verdict.rule import Rule

OLD, NEW = {"BM": 128}, {"BM": 64}
DEFAULT = '{\n  "any": {"BM": 128}\n}\n'


def tot(n: int, cfg: dict) -> float:
    """N=8 and N=16 regress with BM 128 (60 µs against golden's 30) and are fixed by BM 64; N=32 does not care."""
    return 30.0 if n == 32 or cfg == NEW else 60.0


def golden(n: int, cfg: dict) -> float:
    """BM 64 slows golden's N=32 (45 µs): a shared edit of the default file's bucket must be refused."""
    return 45.0 if n == 32 and cfg == NEW else 30.0


class Landscape:
    """A measurer whose guard answers from :func:`tot` and :func:`golden`; it records each round's cases."""

    def __init__(self):
        self.cost, self.rounds = Cost(), []

    def guard(self, cases, dirs, phase, rule=None):
        self.rounds.append(sorted(g.case.key for g in cases))
        out = {}
        for g in cases:
            n = g.case.n
            times = golden(n, g.golden_old), tot(n, g.tot_old), golden(n, g.new), tot(n, g.new)
            out[g.case.key] = Measured(g.case.name, g.case.case_id, *times)
        return out


def info(n: int, verdict: str) -> CaseInfo:
    case = SimpleNamespace(name="k", case_id=f"N{n}", key=f"k/N{n}", n=n)
    lookup = Lookup("F", "sm90", f"N={n}", "M", 256)
    return CaseInfo(case, verdict, 30.0, tot(n, OLD), None, lookup, resolve({"sm90-F.json": DEFAULT}, lookup))


def test_a_slot_is_not_fixed_by_a_shared_edit_that_the_guard_then_refuses(tmp_path: Path):
    r = Retune(Options(Path("c.csv"), "t", "g", tmp_path), log=lambda m: None)
    cases = [info(8, "regression"), info(16, "regression"), info(32, "ok")]
    r.rule, r.measurer, r.stamp = Rule(), Landscape(), {"triton": "3.9.0"}
    r.original = r.state = {"sm90-F.json": DEFAULT}
    r.before_dir = r.state_dir(r.original)
    r.by_key, r.lookups = {c.key: c for c in cases}, {c.key: c.lookup for c in cases}
    slots = []
    for c in cases[:2]:
        s = Slot("F", c.lookup.key, "sm90-F.json", "any", [c])
        s.candidates = [NEW]
        slots.append(s)
    r.guard(slots)
    # round 1 tried the shared edit for N=8, which moves N=16 too; the guard refused it (N=32 golden 30 → 45)
    # and wrote N=8's own file; N=16 waited for that decision, then got its own file in round 2
    assert [s.outcome for s in slots] == ["kept", "kept"]
    assert sorted(r.state) == ["sm90-F-N=16.json", "sm90-F-N=8.json", "sm90-F.json"]
    assert r.state["sm90-F.json"] == DEFAULT
    assert [resolve(r.state, c.lookup).config for c in cases] == [NEW, NEW, OLD]
    assert len(r.measurer.rounds) == 2 and r.measurer.rounds[0] == ["k/N16", "k/N32", "k/N8"]
