"""Profiler integrity (worker/clocks.py): the profiler's records of a rep checked against a second clock, the CUDA
events around each launch. Faults are injected into what the profiler hands back (records dropped, shifted to
another launch, duplicated, mistimed) on top of a rep whose two clocks agree."""

from __future__ import annotations

import json

import pytest

from harness.worker import clocks
from harness.worker.clocks import InstrumentError
from harness.worker.timing import attribute_dispatches

F = "_harness_l2_flush"


def profiler_stream(launches: list[list[tuple[str, float]]]) -> list[tuple[str, float]]:
    """The kernels the profiler saw: the flush before each launch, then the launch's dispatches."""
    out: list[tuple[str, float]] = []
    for dispatches in launches:
        out += [(F, 60.0), *dispatches]
    return out


def split_k(n: int = 20) -> tuple[list[list[tuple[str, float]]], list[float]]:
    """``n`` launches of a split-K op (gemm then reduce) and the events around each: 2.5 µs more than the two
    dispatches (the gap between them and the host's submission after the first event)."""
    launches = [[("gemm", 40.0 + 0.1 * (i % 3)), ("reduce", 4.0)] for i in range(n)]
    return launches, [sum(us for _, us in launch) + 2.5 for launch in launches]


def judged(launches: list[list[tuple[str, float]]], events: list[float]) -> str:
    """The worker's verdict on a rep: '' when its records stand, else why not (status ``instrument``)."""
    times, _ = attribute_dispatches(profiler_stream(launches), F, len(events))
    return clocks.problem(clocks.compare(times, events))


def test_a_rep_whose_clocks_agree_is_kept():
    launches, events = split_k()
    assert judged(launches, events) == ""
    times, _ = attribute_dispatches(profiler_stream(launches), F, 20)
    assert clocks.compare(times, events) == {"event_us": 46.6, "gap_us": 2.5, "over": 0, "n": 20}


def test_a_dropped_launch_record_is_refused():
    launches, events = split_k()
    launches[7] = []  # the profiler lost both records of launch 7: 19 invocations with kernels for 20 launches
    with pytest.raises(InstrumentError, match="saw 19 op invocations with kernels, expected 20"):
        judged(launches, events)


def test_dispatches_lost_at_random_are_refused():
    """HIP graph replay lost 26-65 % of dispatches (a public ROCm issue): launches short of their peers."""
    launches, events = split_k()
    for i in (2, 5, 11):
        launches[i] = launches[i][:1]
    with pytest.raises(InstrumentError, match=r"3 of 20 launches have fewer dispatches \(1\) than most \(2\)"):
        judged(launches, events)


def test_a_one_off_kernel_in_one_launch_is_the_ops_own():
    """The multi-GPU kernel fills its signal pad in one launch of a rep (a W = 2 run on two H200s: 1 of 47 and
    1 of 93 launches had 4 dispatches, the rest 3): allowed for one launch or 5 %, not for more."""
    launches, events = split_k()
    launches[0] = [("fill", 1.0), *launches[0]]
    events[0] += 1.0
    assert judged(launches, events) == ""
    for i in (1, 2):
        launches[i] = [("fill", 1.0), *launches[i]]
        events[i] += 1.0
    with pytest.raises(InstrumentError, match=r"3 of 20 launches have more dispatches \(3\) than most \(2\)"):
        judged(launches, events)


def test_the_same_dispatch_lost_from_every_launch_is_not_caught():
    """The limit, said in worker/clocks.py: the events also hold the host's submission (84-420 µs on an H200),
    so a profiler that loses the gemm of every launch alike still passes; the excess is recorded."""
    launches, events = split_k()
    launches = [launch[1:] for launch in launches]
    assert judged(launches, events) == ""
    times, _ = attribute_dispatches(profiler_stream(launches), F, 20)
    assert clocks.compare(times, events)["gap_us"] == 42.6


def test_shifted_timestamps_are_refused():
    """MI300X's timestamps before ROCm 6.4.2 (a public ROCm issue): each record's start read 5 µs early, so each
    dispatch reads 5 µs long, and every launch longer than the events around it."""
    launches, events = split_k()
    shifted = [[(name, us + 5.0) for name, us in launch] for launch in launches]
    assert "20 of 20 launches read longer by the profiler" in judged(shifted, events)


def test_duplicated_records_are_refused():
    launches, events = split_k()
    doubled = [launch + launch[:1] for launch in launches]  # every launch's gemm record twice
    assert "20 of 20 launches read longer" in judged(doubled, events)
    doubled = [launch + launch[:1] if i % 2 else launch for i, launch in enumerate(launches)]
    with pytest.raises(InstrumentError, match="10 of 20 launches have more dispatches"):
        judged(doubled, events)  # in every other launch only: the others look short


def test_one_launch_past_its_events_is_within_the_events_resolution_share():
    launches, events = split_k()
    events[3] -= 4.0  # one bracket read 1.5 µs short: one launch is always allowed
    assert judged(launches, events) == ""
    events[4] -= 4.0  # two of 20: more than one and more than 5 %
    assert "2 of 20 launches read longer" in judged(launches, events)


def test_overlapping_dispatches_are_judged_by_their_span_not_their_sum():
    """A split-K whose reduce overlaps the GEMM (launched as a dependent, or on a second stream): the two
    records sum to more than the events around the launch; their span from first start to last end does not."""
    from harness.worker.timing import invocations, span

    events, brackets = [], []
    for i in range(20):
        t0 = 1000.0 * i
        events += [
            (F, 60.0, t0, t0 + 60.0),
            ("gemm", 40.0, t0 + 70.0, t0 + 110.0),
            ("reduce", 8.0, t0 + 105.0, t0 + 113.0),
        ]
        brackets.append(44.5)
    times, _ = attribute_dispatches(events, F, 20)
    assert times[0] == 48.0 and clocks.problem(clocks.compare(times, brackets)) != ""  # the sum would be refused
    spans = [span(g) for g in invocations(events, F, 20)]
    assert spans[0] == 43.0 and clocks.problem(clocks.compare(spans, brackets)) == ""


def test_mistimed_records_are_refused():
    """rocprofv3 read identical Triton relaunches 20 % apart (public ROCm issue): records 30 % long."""
    launches, events = split_k()
    long = [[(name, us * 1.3) for name, us in launch] for launch in launches]
    assert "20 of 20 launches read longer" in judged(long, events)


def test_counts_that_differ_are_refused():
    with pytest.raises(InstrumentError, match="3 profiler records for 4 timed launches"):
        clocks.compare([1.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0])


def test_the_worker_answers_instrument_and_keeps_the_clocks(monkeypatch):
    """Through the worker's own request loop: a rep whose clocks disagree is status instrument with its reason
    and the clocks' summary; one whose records are missing too; one that agrees carries the summary."""
    from tests.worker import interp_session
    from tests.worker.test_session import ask, case

    gen = interp_session("wallclock")
    w = next(gen)
    try:
        launches, events = split_k(5)
        times = [sum(us for _, us in launch) for launch in launches]
        monkeypatch.setattr(w, "_samples", lambda *a: (times, {"0:gemm": 40.0}, (times, events)))
        (ok,) = ask(w, {"op": "time", "case": case(16), "n": 5})
        assert ok["status"] == "ok" and ok["clocks"] == {"event_us": 46.6, "gap_us": 2.5, "over": 0, "n": 5}
        monkeypatch.setattr(w, "_samples", lambda *a: (times, None, (times, [t - 5.0 for t in times])))
        (bad,) = ask(w, {"op": "time", "case": case(16), "n": 5})
        assert bad["status"] == "instrument" and "5 of 5 launches read longer" in bad["error"]
        assert "time_us" not in bad and bad["clocks"]["over"] == 5

        def lost(*a):
            raise InstrumentError("profiler saw 4 op invocations with kernels, expected 5")

        monkeypatch.setattr(w, "_samples", lost)
        (gone,) = ask(w, {"op": "time", "case": case(16), "n": 5})
        assert gone == {"case_id": case(16)["case_id"], "status": "instrument",
                        "error": "timing: profiler saw 4 op invocations with kernels, expected 5"}  # fmt: skip
    finally:
        gen.close()
    json.dumps(ok)  # the answer crosses the pipe as JSON
