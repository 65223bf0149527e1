"""A config arch no config folder knows (harness/inputs/configarch.py): refused before anything runs when no case
of the selection would get a config, a warning per family when only some would; kernels that need no file (a
default_config, no ConfigLookup) never count against it."""

from __future__ import annotations

import os
import sys

import pytest

from harness.errors import HarnessError
from harness.inputs import configarch
from harness.inputs.suite import as_config_arch, load_suite
from tests.conftest import DATA, ROOT, cli

FAKE = DATA / "fake_aiter"
CONFIGS = FAKE / "aiter" / "ops" / "triton" / "configs"
CPU = ROOT / "examples" / "aiter" / "cpu.yaml"  # bf16 (A16W16) and a8w8 (A8W8), config_arch gfx950


@pytest.fixture
def aiter(monkeypatch):
    monkeypatch.setenv("AITER_CHECKOUT", str(FAKE))
    monkeypatch.setenv("HARNESS_TEST_PYTHON", os.environ.get("HARNESS_TEST_PYTHON", sys.executable))
    return load_suite(CPU)


def test_an_arch_without_any_file_is_refused_naming_the_folders_and_the_arches_there(aiter):
    with pytest.raises(HarnessError) as err:
        configarch.check(as_config_arch(aiter, "gfx590"), "gfx590", CPU)
    assert str(err.value) == (
        f"--config-arch gfx590: no config file of BATCHED_GEMM-A16W16, BATCHED_GEMM-A8W8 for gfx590 in {CONFIGS} "
        "(files exist for gfx1250, gfx942, gfx950) (did you mean 'gfx950'?): no case of the selection would get a "
        "config"
    )


def test_an_arch_with_files_for_some_families_warns_per_family_and_runs_the_rest(aiter):
    lines = configarch.check(as_config_arch(aiter, "gfx942"), "gfx942", CPU)  # gfx942 has A16W16, no A8W8
    assert lines == [
        f"--config-arch gfx942: no config file of BATCHED_GEMM-A8W8 for gfx942 in {CONFIGS} (files exist for "
        "gfx950): its 1 case gets no config (skipped when run)"
    ]
    assert configarch.check(aiter, None, CPU) == []  # the suite's own gfx950: every family has its file


def test_the_suites_own_config_arch_is_named_by_the_suite(aiter, tmp_path):
    suite = tmp_path / "s.yaml"
    suite.write_text(CPU.read_text().replace("config_arch: gfx950", "config_arch: gfx590").replace(
        "batched_gemm.py", str(CPU.parent / "batched_gemm.py")))  # fmt: skip
    with pytest.raises(HarnessError, match=rf"^{suite}: config_arch gfx590: no config file of"):
        configarch.check(load_suite(suite), None, suite)


def test_kernels_that_need_no_file_never_count_against_an_arch():
    """softmax has a default_config and no ConfigLookup: any arch gives it its config."""
    cases = as_config_arch(load_suite(ROOT / "examples" / "softmax.yaml"), "gfx590")
    assert configarch.check(cases, "gfx590", "softmax.yaml") == []


def test_run_refuses_before_any_worker_and_leaves_nothing(aiter, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(
        capsys, "run", "--env", DATA / "cpu-env.yaml", "--suite", CPU, "--out", "g.csv", "--config-arch", "gfx590"
    )
    assert code == 2 and len(err.splitlines()) == 1 and "no case of the selection would get a config" in err
    assert list(tmp_path.iterdir()) == []


def test_suite_show_counts_the_cases_without_a_config(aiter, capsys):
    code, out, err = cli(capsys, "suite", "show", CPU, "--config-arch", "gfx942")
    assert code == 0 and err.splitlines()[-1] == "3 cases, 1 without a config", err
    assert err.startswith("warning: --config-arch gfx942: no config file of BATCHED_GEMM-A8W8")
