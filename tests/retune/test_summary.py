"""What the retune's report counts (Retune.summary's parts, on fake cases): a kernel without config files is in
every table with why, not dropped; a case that was no regression when timed again is counted apart from what a
kept change fixed; every regression left is listed, searched or not; and a --kernel that names only kernels
without config files is refused before any worker starts."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from harness.errors import HarnessError
from harness.retune.model import Options
from harness.retune.retune import Retune
from tests.bisect.known_times import comparison


def case(kernel: str, cid: str, verdict: str) -> SimpleNamespace:
    return SimpleNamespace(case=SimpleNamespace(name=kernel, case_id=cid), key=f"{kernel}/{cid}", verdict=verdict,
                           target=verdict in ("regression", "failed_in_tot"), delta_pct=10.0)  # fmt: skip


@pytest.fixture
def retune(tmp_path) -> Retune:
    r = Retune.__new__(Retune)
    r.opts = Options(tmp_path / "c.csv", "t", "g", tmp_path / "o")
    cases = [case("k", "a", "regression"), case("k", "b", "regression"), case("k", "c", "regression"),
             case("k", "d", "ok")]  # fmt: skip
    r.cases, r.by_key = cases, {c.key: c for c in cases}
    rows = [(c.case.name, c.case.case_id, c.verdict) for c in cases]
    rows += [("nocfg", "x", "regression"), ("nocfg", "y", "failed_in_tot"), ("nocfg", "z", "ok")]
    r.table = pd.DataFrame(rows, columns=["kernel", "case_id", "verdict"]).assign(delta_pct=5.0)
    r.notes, r.kept = [], []
    r.after = {"k/a": object()}  # a kept change moved k/a (and fixed it)
    r.after_verdict = {"k/b": "ok"}  # k/b: no regression when timed again, config unchanged
    slot = SimpleNamespace(name="s", targets=[cases[0], cases[1], cases[2]], why="every config slows golden")
    r._slots = [slot]
    return r


def verdicts(r: Retune) -> dict[str, str]:
    return {"k/a": "ok", "k/b": "ok", "k/c": "regression", "k/d": "ok"}


def test_a_kernel_without_config_files_is_in_the_table_with_why(retune):
    rows = {row["kernel"]: row for row in retune._kernel_rows(verdicts(retune))}
    assert set(rows) == {"k", "nocfg"}
    assert rows["nocfg"]["regressions_before"] == rows["nocfg"]["regressions_after"] == 1
    assert rows["nocfg"]["failed_before"] == rows["nocfg"]["failed_after"] == 1
    assert rows["nocfg"]["why"] == "its kernel looks up no config files: left alone"


def test_not_regressed_when_timed_again_is_not_counted_as_fixed(retune):
    k = next(row for row in retune._kernel_rows(verdicts(retune)) if row["kernel"] == "k")
    assert (k["regressions_before"], k["fixed"], k["retimed"], k["regressions_after"]) == (3, 1, 1, 1)


def test_every_regression_left_is_listed(retune):
    left = retune._left(retune._slots, verdicts(retune))
    assert [x["case"] for x in left] == ["k/c", "nocfg/x", "nocfg/y"]
    assert left[0]["why"] == "every config slows golden"
    assert left[1]["why"] == "its kernel looks up no config files: left alone"


def test_what_was_asked_and_what_was_done(retune):
    assert retune._asked(retune._slots) == {"kernels": "all", "targets": 5, "searched": 3, "slots": 1,
                                            "left_alone": 2}  # fmt: skip


def test_kernel_names_the_scope(retune):
    retune.opts.kernels = ["nocfg"]
    rows = retune._kernel_rows(verdicts(retune))
    assert [r["kernel"] for r in rows] == ["nocfg", "k"]  # k had targets in slots: still shown
    assert retune._asked([])["left_alone"] == 2


def test_a_kernel_option_of_kernels_without_config_files_is_refused_before_any_worker(tmp_path):
    cmp = comparison(tmp_path, {"a": [40.0, 40.1, 40.2]}, {"a": [60.0, 60.1, 60.2]})
    r = Retune(Options(cmp, "no-such-env", "no-such-env", tmp_path / "o", kernels=["versioned"]), log=print)
    with pytest.raises(HarnessError, match=r"--kernel versioned: its kernels look up no config files \(versioned: "
                       r"not a registered kernel.*\): nothing to retune"):  # fmt: skip
        r.open()
