"""The timing backends, declared once (harness/worker/backends.py): every record has its timing loop and the
worker's adapter, ``auto`` picks as documented, and no other module of harness compares a backend's name."""

from __future__ import annotations

import ast

from harness.envs.schema import TIMINGS
from harness.worker.backends import BACKENDS, NAMES, auto, backend, times_gpu, wrapper_of
from harness.worker.session import SWITCHABLE, Session
from harness.worker.timing import Timer
from tests.conftest import ROOT


def test_every_backend_has_its_timing_loop_and_the_workers_adapter():
    for b in BACKENDS.values():
        assert callable(getattr(Timer, b.timer)) and callable(getattr(Session, f"_by_{b.timer}")), b.name
        assert b.measures and b.isolates and b.runs_on
    assert TIMINGS == NAMES == ("auto", *BACKENDS)


def test_auto_picks_the_first_backend_the_device_has():
    assert auto("cuda") == "cupti"
    assert auto("hip") == "events" and auto("hip", frozenset({"rocprofv3"})) == "rocprofv3"
    assert auto("interp") == "wallclock"


def test_what_a_wrapped_backend_cannot_do():
    assert wrapper_of("rocprofv3") == "rocprofv3" and not backend("rocprofv3").switchable
    assert (
        wrapper_of("auto") == ""
        and "rocprofv3" not in SWITCHABLE
        and set(SWITCHABLE) == {"cupti", "events", "wallclock"}
    )
    assert times_gpu("auto") and times_gpu("events") and not times_gpu("wallclock")
    assert backend("rocprofv3").launches == 20 and backend("wallclock").launches == 3 and backend("cupti").launches == 0


def test_no_module_compares_a_backends_name():
    """A backend's properties are its record's: ``timing == "cupti"`` anywhere else would bring back the string."""
    names = set(BACKENDS)
    found = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        if path.name == "backends.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Compare):
                consts = [c for c in ast.walk(node) if isinstance(c, ast.Constant) and c.value in names]
                found += [f"{path.relative_to(ROOT)}:{node.lineno}" for _ in consts[:1]]
            elif isinstance(node, ast.Dict) and any(
                isinstance(k, ast.Constant) and k.value in names for k in node.keys
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, f"compare the backend's record instead (worker/backends.py): {found}"
