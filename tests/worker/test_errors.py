"""A failed case's error text: one summary line that keeps the chained cause and the user's file and line, then the
traceback's end. Driven through the worker's prepare in process (Triton's CPU interpreter), with the user kernels of
tests/data/error_kernels.py."""

from __future__ import annotations

import pytest

from harness.inputs.kernel import load_kernel
from harness.inputs.suite import Case
from harness.run.cases import worker_case
from harness.worker.errors import ERROR_CHARS, error_text
from tests.conftest import DATA
from tests.worker import interp_session

FILE = "tests/data/error_kernels.py"


def line_of(marker: str) -> int:
    lines = (DATA / "error_kernels.py").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if marker in line)


@pytest.fixture(scope="module")
def w():
    yield from interp_session("wallclock")


def prepare(w, name: str) -> dict:
    k = load_kernel(f"error_kernels.py:{name}", DATA)
    return w.prepare(worker_case(Case(k, k.spec.case_params({}, "test"))))


def test_raise_from_keeps_the_cause_and_the_users_lines(w):
    res = prepare(w, "chained")
    assert res["status"] == "runtime_error"
    first = res["error"].splitlines()[0]
    raise_line, cause_line = line_of("ERROR_KERNELS_RAISE_LINE"), line_of('config["BLOCK"]')
    assert first == (
        f"ValueError: config has no BLOCK size ({FILE}:{raise_line} in _pick_block); "
        f"caused by KeyError: 'BLOCK' ({FILE}:{cause_line} in _pick_block)"
    )
    assert "The above exception was the direct cause" in res["error"], "the traceback's end follows"
    assert len(res["error"]) <= 1500, "the driver keeps the last 1,500 characters: the summary must survive"


def test_an_error_out_of_triton_names_the_users_failing_line(w):
    res = prepare(w, "in_triton")
    assert res["status"] in ("runtime_error", "compile_error")
    first = res["error"].splitlines()[0]
    # Triton raised it, in its interpreter; the lines that matter are the user's launch and kernel source
    assert f"({FILE}:{line_of('_copy[(1,)]')} in launch)" in first
    assert (
        f"caused by ValueError: arange's range must be a power of 2 ({FILE}:{line_of('ERROR_KERNELS_ARANGE')}" in first
    )


@pytest.mark.parametrize(
    "name, why",
    [("no_y", "no 'y' among its keys: 'x', 'out'"), ("not_a_dict", "got list")],
)
def test_make_inputs_without_y_is_a_one_line_runtime_error(w, name, why):
    res = prepare(w, name)
    assert res["status"] == "runtime_error"
    assert res["error"] == f"make_inputs must return a dict with an output tensor 'y' ({why})"


def test_the_summary_follows_context_and_stops_where_the_user_said_from_none():
    def fail(suppress: bool):
        try:
            {}["k"]
        except KeyError:
            if suppress:
                raise RuntimeError("clean") from None
            raise RuntimeError("while handling it")  # noqa: B904 - the implicit context is what is tested

    for suppress, expect in ((False, "RuntimeError: while handling it"), (True, "RuntimeError: clean")):
        with pytest.raises(RuntimeError) as ei:
            fail(suppress)
        first = error_text(ei.value).splitlines()[0]
        assert first.startswith(expect)
        assert ("while handling KeyError: 'k'" in first) is not suppress, first


def test_a_huge_message_keeps_the_summary_within_the_drivers_limit():
    try:
        raise ValueError("x" * 10_000 + "\nsecond line")
    except ValueError as err:
        text = error_text(err)
    assert len(text) <= ERROR_CHARS and text.startswith("ValueError: xxx") and "second line" in text


def test_a_checkout_inside_the_repository_is_named_once_not_again_as_the_repositorys_frame(tmp_path):
    """A library staged inside the repository (.stage/aiter): an error raised in it names its line once, relative
    to the checkout, and no 'via' the same frame under the repository's path; the adapter's frame is the 'via'."""
    import importlib.util

    repo = tmp_path / "repo"
    lib = repo / ".stage" / "lib"
    lib.mkdir(parents=True)
    (lib / "mod.py").write_text("def f():\n    raise ValueError('deep')\n")
    (repo / "adapter.py").write_text("import mod\n\n\ndef launch():\n    mod.f()\n")
    import sys

    sys.path[:0] = [str(lib), str(repo)]
    try:
        spec = importlib.util.spec_from_file_location("adapter_t", repo / "adapter.py")
        adapter = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(adapter)
        with pytest.raises(ValueError) as err:
            adapter.launch()
    finally:
        del sys.path[:2]
        sys.modules.pop("mod", None)
    first = error_text(err.value, (), str(repo), (str(lib),)).splitlines()[0]
    assert first == "ValueError: deep (mod.py:2 in f; via adapter.py:5 in launch)"
    # the adapter not on the way: the checkout's line alone
    alone = error_text(err.value.with_traceback(err.value.__traceback__.tb_next.tb_next), (), str(repo), (str(lib),))
    assert alone.splitlines()[0] == "ValueError: deep (mod.py:2 in f)"


def test_importlibs_frozen_frames_are_never_the_repositorys_line(tmp_path, monkeypatch):
    """A frozen module's pseudo-file (<frozen importlib._bootstrap>) would resolve into the working directory, so
    inside the repository: an import that fails in importlib names no such line."""
    import importlib

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModuleNotFoundError) as err:
        importlib.import_module("no_such_module_anywhere")
    first = error_text(err.value, (), str(tmp_path)).splitlines()[0]
    assert "<frozen" not in first and first.startswith("ModuleNotFoundError: No module named 'no_such_module_anywhere'")
