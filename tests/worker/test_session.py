"""The requests by which the driver keeps one worker process instead of starting another: a timing resolved after
the hello or another run's memory budget, and the prepared cases forgotten between two runs. Driven in process
(Triton's CPU interpreter)."""

from __future__ import annotations

import json

import pytest

from harness.inputs.kernel import load_kernel
from harness.inputs.suite import Case
from harness.run.cases import worker_case
from harness.worker.main import serve
from harness.worker.session import Session
from tests.worker import interp_session


@pytest.fixture(scope="module")
def w():
    yield from interp_session("auto")


def case(m: int) -> dict:
    k = load_kernel("batched_gemm_bf16")
    return worker_case(Case(k, k.spec.case_params({"B": 1, "M": m, "N": 32, "K": 64, "dtype": "fp16"}, "t")))


def ask(w: Session, *requests: dict) -> list[dict]:
    """The answers of the worker's own request loop (main.serve) to ``requests``."""
    answers: list[dict] = []
    serve(w, [json.dumps(r) for r in requests], answers.append)
    return answers


def test_a_worker_started_with_auto_times_by_the_timing_it_is_told(w):
    assert w.hello()["timing"] == "auto" and w.mem_budget == 0.5
    told, budget = ask(w, {"op": "set", "timing": "wallclock"}, {"op": "set", "mem_budget": 0.125})
    assert told == budget == {"status": "ok"} and (w.timing, w.mem_budget) == ("wallclock", 0.125)
    bad = ask(w, {"op": "set", "timing": "rocprofv3"}, {"op": "set", "timing": "cupti", "mem_budget": 2})
    assert [a["status"] for a in bad] == ["runtime_error"] * 2
    assert "expected one of cupti, events, wallclock" in bad[0]["error"] and "from 0 to 1" in bad[1]["error"]
    assert (w.timing, w.mem_budget) == ("wallclock", 0.125), "a refused setting changes nothing"
    prep, rep = ask(w, {"op": "prepare", "case": case(16)}, {"op": "time", "case": case(16), "n": 1})
    assert prep["status"] == "ok" and rep["status"] == "ok" and rep["n"] == 1 and rep["time_us"] > 0


def test_forget_drops_every_prepared_case_and_a_later_rep_prepares_again(w):
    ask(w, {"op": "forget"}, {"op": "prepare", "case": case(16)}, {"op": "prepare", "case": case(32)})
    assert ask(w, {"op": "forget"}, {"op": "forget"}) == [
        {"status": "ok", "dropped": 2},
        {"status": "ok", "dropped": 0},
    ]
    (rep,) = ask(w, {"op": "time", "case": case(16), "n": 1})  # what a kept worker gets from its next run
    assert rep["status"] == "ok" and rep["time_us"] > 0 and list(w.prepared) == [w.key(case(16))]
