"""`harness flip` on the CPU: a toy kernel whose TOT regression one environment knob undoes for one case and not
for the other (tests/data/flip_kernel.py), the plain comparison first, then the flip; and the pure parts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.errors import HarnessError
from harness.flip import knobs as K
from tests.conftest import DATA, ROOT


def test_knobs_given_and_candidates():
    assert K.parse(["PTXAS_OPTIONS=--maxrregcount=128"]) == [K.Knob("PTXAS_OPTIONS", "--maxrregcount=128",
                                                                      "given with --knob")]  # fmt: skip
    for bad in ("NOVALUE", "=1", "9X=1", "A B=1"):
        with pytest.raises(HarnessError, match="expected NAME=VALUE"):
            K.parse([bad])
    # the backend's candidates that TOT's Triton declares, and not the value TOT already runs with
    got = K.candidates("cuda", ["DISABLE_PTXAS_OPT", "TRITON_DEFAULT_FP_FUSION"], [], {"TRITON_DEFAULT_FP_FUSION": "0"})
    assert [k.label for k in got] == ["DISABLE_PTXAS_OPT=1"]
    assert len(K.candidates("cuda", None, [], {})) == len(K.CANDIDATES["cuda"])  # a Triton that cannot say
    assert [k.label for k in K.candidates("interp", None, K.parse(["A=1"]), {})] == ["A=1"]
    with pytest.raises(HarnessError, match="named twice"):
        K.candidates("interp", None, K.parse(["A=1", "A=1"]), {})
    assert K.Knob("PTXAS_OPTIONS", "--maxrregcount 128").key == "knob-PTXAS_OPTIONS=--maxrregcount_128"
    with pytest.raises(HarnessError, match="reads as A=x y in a file name"):  # one results file and cache for two
        K.candidates("interp", None, K.parse(["A=x y", "A=x/y"]), {})


def test_a_knob_whose_value_is_a_path_makes_a_variant_with_a_file_name(tmp_path):
    """A value may hold a '/' (TRITON_LIBDEVICE_PATH=/opt/x.bc): the variant's name, which names its worker's
    log file, is made from the knob's file-name key."""
    from harness.envs.spec import EnvSpec
    from harness.flip.flip import variant

    tot = EnvSpec(name="tot", path=tmp_path / "tot.yaml", env={"A": "1"})
    v = variant(tot, K.parse(["TRITON_LIBDEVICE_PATH=/opt/x.bc"])[0], tmp_path)
    assert "/" not in v.name and v.env == {"A": "1", "TRITON_LIBDEVICE_PATH": "/opt/x.bc"} and tot.env == {"A": "1"}
    assert v.cache_dir.startswith(str(tmp_path.resolve() / "cache"))


def test_states():
    assert K.state("ok", "confident") == "flips" and K.state("improvement", "confident") == "flips"
    assert K.state("ok", "ambiguous") == "flips, not confirmed"
    assert K.state("regression", "confident") == "still slower" and K.state("failed_in_tot", "") == "fails"
    assert K.state("ignored", "") == "not measured", "golden under the floor says nothing of the knob"


def harness(args, env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=900)  # fmt: skip


def spec(path: Path, name: str, stack: str) -> Path:
    path.write_text(f"name: {name}\npython: {sys.executable}\n"
                    f"env: {{TRITON_INTERPRET: '1', FLIP_TOY_STACK: {stack}}}\n")  # fmt: skip
    return path


@pytest.mark.slow
def test_flip_names_the_knob_that_flips_one_case_and_none_for_the_other(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    g_spec, t_spec = spec(tmp_path / "golden.yaml", "golden", "golden"), spec(tmp_path / "tot.yaml", "tot", "tot")
    g, t, cmp = tmp_path / "golden.csv", tmp_path / "tot.csv", tmp_path / "compare.csv"
    r = harness(["run", "--env", g_spec, "--out", g, "--with-env", t_spec, "--with-out", t, "--suite",
                 DATA / "flip.yaml", "--launches", "2"], env)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    r = harness(["compare", g, t, "--out", cmp, "--rel", "1.25"], env)
    assert r.returncode == 0 and "2 regressions" in r.stdout, r.stdout
    out = tmp_path / "flip"
    r = harness(["flip", cmp, "--out", out, "--knob", "FLIP_TOY_FIX=1", "--knob", "FLIP_TOY_OTHER=1",
                 "--launches", "2"], env)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    lines = {line.split(":")[0]: line for line in r.stdout.splitlines() if line.startswith("flip_toy/")}
    assert "flipped by FLIP_TOY_FIX=1" in lines["flip_toy/N16"], r.stdout
    assert "no single knob flips it" in lines["flip_toy/N32"], r.stdout
    assert "1 of 2 cases flipped by a single knob" in r.stdout
    data = json.loads((out / "flip.json").read_text())
    n16 = data["cases"]["flip_toy/N16"]
    assert n16["flipped_by"] == ["FLIP_TOY_FIX=1"] and n16["tot"]["verdict"] == "regression"
    assert n16["knobs"]["FLIP_TOY_OTHER=1"]["state"] == "still slower"
    assert data["cases"]["flip_toy/N32"]["flipped_by"] == []
    md = (out / "flip.md").read_text()
    assert "| `FLIP_TOY_FIX` | `1` | given with --knob |" in md and "**flips**" in md
    # each variant ran in its own Triton cache and its own results file, beside golden's and TOT's
    assert sorted(p.name for p in (out / "runs").glob("*.csv")) == [
        "golden.csv", "knob-FLIP_TOY_FIX=1.csv", "knob-FLIP_TOY_OTHER=1.csv", "tot.csv"]  # fmt: skip
    # the folder is flip's own: the same command again is refused without --resume; with it, measures nothing
    # more and writes the same verdicts; a resume with other knobs is refused, naming them
    again = ["flip", cmp, "--out", out, "--knob", "FLIP_TOY_FIX=1", "--knob", "FLIP_TOY_OTHER=1", "--launches", "2"]
    r = harness(again, env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "pass --resume" in r.stderr, r.stderr
    r = harness([*again, "--resume"], env)
    assert r.returncode == 0 and json.loads((out / "flip.json").read_text())["cases"] == data["cases"], r.stderr
    r = harness(["flip", cmp, "--out", out, "--knob", "FLIP_TOY_FIX=1", "--launches", "2", "--resume"], env)
    assert (
        r.returncode == 2 and "is a flip of the knobs FLIP_TOY_FIX=1, FLIP_TOY_OTHER=1, not FLIP_TOY_FIX=1" in r.stderr
    )
