"""A kernel's own config lookup (``hooks=("lookup_config",)``): a library's lookup, called in the worker where the
library imports, instead of a ConfigLookup. Its answer is the config that runs, under the suite's overrides; none
is a skip, a failure names the lookup's line; `suite show` and the sidecar say which lookup a kernel takes. Driven
through the worker's prepare in process (Triton's CPU interpreter), with a softmax whose lookup is written here."""

from __future__ import annotations

import pytest

from harness.inputs.kernel import load_kernel
from harness.inputs.suite import Case, load_suite
from harness.kernel_api import ConfigLookup, KernelSpec, SpecError, dim
from harness.run.cases import worker_case
from harness.run.sidecar import lookup_record
from harness.run.suiteview import view
from tests.conftest import ROOT
from tests.worker import interp_session

SOFTMAX = (ROOT / "examples" / "softmax.py").read_text()
LOOKUP = """

class Own:
    SPEC = replace(SPEC, hooks=("lookup_config",))
    make_inputs = staticmethod(make_inputs)
    launch = staticmethod(launch)
    reference = staticmethod(reference)

    @staticmethod
    def lookup_config(params, arch):
        if params["M"] == 1:
            return None  # the library has no config for this shape
        if params["M"] == 2:
            return {"num_warps": 1}, 42  # not (dict, str)
        if params["M"] == 3:
            raise KeyError("no bucket for M=3")  # the library's lookup failing
        return {"num_warps": 2 if arch == "gfx950" else 8}, f"mylib rule for {arch}"
"""


@pytest.fixture(scope="module")
def w():
    yield from interp_session("wallclock")


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    f = tmp_path_factory.mktemp("own") / "own_softmax.py"
    f.write_text(
        SOFTMAX.replace("from harness import", "from dataclasses import replace\nfrom harness import") + LOOKUP
    )
    return load_kernel(f"{f}:Own")


def prepare(w, kernel, m: int, arch: str = "", overrides: dict | None = None) -> dict:
    case = Case(kernel, kernel.spec.case_params({"M": m, "N": 128}, "test"), dict(overrides or {}), config_arch=arch)
    return w.prepare(worker_case(case))


def test_the_kernels_own_lookup_decides_the_config_that_runs(w, kernel):
    res = prepare(w, kernel, 4)
    assert res["status"] == "ok", res.get("error")
    assert res["config"] == {"num_warps": 8} and res["config_source"] == "lookup_config: mylib rule for interp"
    res = prepare(w, kernel, 4, arch="gfx950", overrides={"num_warps": 4})  # the suite's config arch, its overrides
    assert res["config"] == {"num_warps": 4}
    assert res["config_source"] == "lookup_config: mylib rule for gfx950 (configs of gfx950) +suite overrides"


@pytest.mark.parametrize(("m", "status", "says"), [
    (1, "skipped", "config: the kernel's lookup_config found none"),
    (2, "runtime_error", "lookup_config: returned a tuple, expected a dict or (dict, str)"),
    (3, "runtime_error", "lookup_config: KeyError: 'no bucket for M=3' ("),
])  # fmt: skip
def test_no_config_a_wrong_answer_and_a_failing_lookup(w, kernel, m, status, says):
    res = prepare(w, kernel, m)
    assert res["status"] == status and res["error"].startswith(says), res["error"]
    if m == 3:  # the lookup's own line
        assert "own_softmax.py:" in res["error"].splitlines()[0] and "in lookup_config" in res["error"]


def test_suite_show_and_the_sidecar_name_the_kernels_own_lookup(kernel, tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text(f"config_arch: gfx950\nentries:\n  - kernel: {kernel.file}:Own\n    M: 4\n    N: 128\n")
    cases = load_suite(suite)
    (v,) = view(cases, "sm90")
    assert v.source == "lookup_config: the kernel's own lookup, called in the worker (configs of gfx950)"
    assert lookup_record(cases[0]) == {"folders": [], "layout": "lookup_config", "config_arch": "gfx950"}


def test_one_lookup_a_spec():
    with pytest.raises(SpecError, match="config=ConfigLookup\\(...\\) and the hook lookup_config: name one lookup"):
        KernelSpec(
            name="k", params=(dim("M"),), flops=lambda p: 1.0, bytes=lambda p: 1.0,
            config=ConfigLookup("F"), hooks=("lookup_config",),
        )  # fmt: skip
