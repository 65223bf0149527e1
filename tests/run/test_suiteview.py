"""Shapes from where teams keep them (``zip: FILE``, CSV or JSON) and ``harness suite show``: what a suite expands
to, with the config each case would resolve on an arch, without running anything."""

from __future__ import annotations

import pytest

from harness.errors import HarnessError
from harness.inputs.suite import load_suite
from tests.conftest import ROOT, cli


def _suite(tmp_path, zip_value: str) -> object:
    s = tmp_path / "s.yaml"
    s.write_text(f"name: s\nentries:\n  - kernel: batched_gemm_bf16\n    B: 2\n    M: [16, 32]\n    zip: {zip_value}\n")
    return s


def test_points_from_a_csv_and_a_json_file_expand_like_a_zip(tmp_path):
    (tmp_path / "shapes.csv").write_text("N,K\n512,128\n1024, 256\n")
    (tmp_path / "shapes.json").write_text('[{"N": 512, "K": 128}, {"N": 1024, "K": 256}]')
    inline = _suite(tmp_path, "[{N: 512, K: 128}, {N: 1024, K: 256}]")
    want = [c.case_id for c in load_suite(inline)]
    assert len(want) == 4
    for f in ("shapes.csv", "shapes.json"):
        assert [c.case_id for c in load_suite(_suite(tmp_path, f))] == want


def test_a_shapes_file_as_a_team_keeps_it(tmp_path, monkeypatch):
    """Its folder from a variable (the library's checkout), columns no kernel reads (a model, a layer) left out,
    and booleans as a benchmark script writes them (Python's False, YAML's true)."""
    shapes = tmp_path / "lib" / "op_tests"
    shapes.mkdir(parents=True)
    (shapes / "shapes.csv").write_text("model,N,K,bias\nDeepSeek-R1,512,128,False\nLlama-70B,1024,256,true\n")
    monkeypatch.setenv("LIB_CHECKOUT", str(tmp_path / "lib"))
    cases = load_suite(_suite(tmp_path, "${LIB_CHECKOUT}/op_tests/shapes.csv"))
    assert (
        sorted({(c.params["N"], c.params["bias"]) for c in cases}) == [(512, False), (1024, True)] and len(cases) == 4
    )
    assert all("model" not in c.params for c in cases)
    monkeypatch.delenv("LIB_CHECKOUT")
    with pytest.raises(HarnessError, match=r"zip: \$\{LIB_CHECKOUT\}/op_tests/shapes.csv: .*LIB_CHECKOUT"):
        load_suite(_suite(tmp_path, "${LIB_CHECKOUT}/op_tests/shapes.csv"))


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("missing.csv", None, "zip: missing.csv: no such file"),
        ("shapes.txt", "N,K\n1,2\n", "expected a .csv or .json file"),
        ("ragged.csv", "N,K\n512\n", "line 2: 1 values for the header's 2 names"),
        ("blank_line.csv", "N,K\n512,1\n\n512\n", "line 4: 1 values"),  # the line in the file, blank lines counted
        ("old_mac.csv", "N,K\r512,1\r512\r", "line 3: 1 values"),  # a bare CR ends a line (was a traceback)
        ("hole.csv", "N,K\n512,\n", "line 2: no value for 'K'"),
        ("typo.csv", "N,k\n512,128\n", "'k'"),  # K's misspelling: dropping it would run K's default
        ("bad.json", "[{", "not valid JSON"),
        ("typed.csv", "N,K\n512,big\n", "K"),
    ],
)
def test_a_bad_points_file_is_one_line_naming_file_and_line(tmp_path, name, text, message):
    if text is not None:
        (tmp_path / name).write_text(text)
    with pytest.raises(HarnessError, match=message):
        load_suite(_suite(tmp_path, name))


def test_suite_show_lists_every_case_with_its_config_and_runs_nothing(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    run = lambda *a: cli(capsys, "suite", "show", *a)  # noqa: E731 - in process: (exit code, stdout, stderr)
    code, out, err = run("suites/batched_gemm.yaml", "--arch", "gfx950", "--kernel", "batched_gemm_bf16")
    assert code == 0, err
    rows = out.splitlines()
    assert rows and all(line.startswith("batched_gemm_bf16 ") for line in rows)
    assert all("gfx950-BATCHED_GEMM" in line for line in rows) and err.strip() == f"{len(rows)} cases"
    _, sm90, _ = run("suites/batched_gemm.yaml", "--kernel", "batched_gemm_bf16")
    assert "sm90-BATCHED_GEMM" in sm90
    code, out, _ = run("suites/batched_gemm.yaml", "--arch", "gfx9999", "--kernel", "batched_gemm_bf16")
    assert code == 0 and "no config:" in out  # said per case, not a crash
    code, _, err = run("suites/batched_gemm.yaml", "--filter", "(")
    assert code == 2 and err.count("\n") == 1 and "not a valid regular expression" in err
    code, _, err = run("suites/batched_gemm.yaml", "--kernel", "batched_gemm_bf61")
    assert code == 2 and "no such kernel in the suite" in err
