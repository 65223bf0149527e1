"""`harness bisect`: the plan (cases, suite, envs; refusals), the rounds (who is measured again, what each
measurement decides, resuming), and the whole thing on the CPU with real venvs (Triton 3.6.0, 3.8.0, 3.9.0), an
unpacked overlay and a user kernel whose time depends on triton.__version__ in a known way."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from harness.bisect.bisect import run_rounds
from harness.bisect.plan import make_plan, select_targets
from harness.bisect.search import Step
from harness.compare.store import load_compare
from harness.errors import HarnessError
from tests.bisect.known_times import KnownTimes, by_round, comparison, const, plan
from tests.conftest import DATA, ROOT, cli

GOLDEN = [40.0, 40.2, 40.1]
BAD = [60.0, 60.1, 60.2]
GOOD = [30.0, 30.1, 30.2]
STRADDLE = [30.0, 60.0, 30.0]  # the closest pair reads good, the reps' range crosses the limit


@pytest.fixture
def cmp_csv(tmp_path) -> Path:
    golden = {c: GOLDEN for c in ("step380", "noisy", "settles", "transient")}
    tot = {"step380": BAD, "noisy": BAD, "settles": BAD, "transient": GOOD}
    return comparison(tmp_path, golden, tot)


def known(case_times: dict[str, dict[str, object]]) -> KnownTimes:
    times = {}
    for case, per_stack in case_times.items():
        for stack, reps in per_stack.items():
            times[(stack, case)] = reps if callable(reps) else const(*reps)
    return KnownTimes(times)


TIMES = {
    "step380": {"golden": GOLDEN, "3.7.1": GOOD, "3.8.0": BAD, "tot": BAD},
    "noisy": {"golden": GOLDEN, "3.7.1": STRADDLE, "3.8.0": BAD, "tot": BAD},
    "settles": {"golden": GOLDEN, "3.7.1": GOOD, "3.8.0": by_round(STRADDLE, BAD, BAD), "tot": BAD},
}


# ---------------------------------------------------------------------------------------------- rounds


def test_noisy_pairs_are_measured_again_and_only_they_take_the_new_readings(tmp_path, cmp_csv):
    p = plan(tmp_path, cmp_csv, ["3.7.1", "3.8.0"])
    assert [c.case_id for c in p.cases] == ["step380", "noisy", "settles"]  # regressions only, worst first
    meas = known(TIMES)
    res = run_rounds(p, meas, log=lambda m: None)
    rounds = [(r, stacks, sorted(cases)) for r, stacks, cases in meas.calls]
    assert rounds == [
        (1, ["golden", "3.7.1", "3.8.0", "tot"], ["noisy", "settles", "step380"]),
        (2, ["golden", "3.7.1", "3.8.0"], ["noisy", "settles"]),  # settles good-straddling, then bad: disagree
        (3, ["golden", "3.7.1", "3.8.0"], ["noisy", "settles"]),
    ]
    st = res.states
    assert st[("versioned/step380", "3.7.1")] == "good" and st[("versioned/step380", "3.8.0")] == "bad"
    assert st[("versioned/noisy", "3.7.1")] == "noisy" and len(res.readings[("versioned/noisy", "3.7.1")]) == 3
    assert len(res.readings[("versioned/noisy", "3.8.0")]) == 1  # decided in round 1: rounds 2-3 not taken
    assert st[("versioned/settles", "3.8.0")] == "bad" and len(res.readings[("versioned/settles", "3.8.0")]) == 3
    h = res.histories
    assert h["versioned/step380"].culprit == Step("3.7.1", "3.8.0")
    assert h["versioned/noisy"].culprit == Step("3.6.0 (golden)", "3.8.0", ("3.7.1",))
    assert h["versioned/settles"].culprit == Step("3.7.1", "3.8.0")
    assert [r["round"] for r in res.rounds] == [1, 2, 3]


def test_no_remeasure_leaves_noisy_pairs_noisy(tmp_path, cmp_csv):
    meas = known(TIMES)
    res = run_rounds(plan(tmp_path, cmp_csv, ["3.7.1", "3.8.0"], remeasure=0), meas, log=lambda m: None)
    assert len(meas.calls) == 1 and res.states[("versioned/settles", "3.8.0")] == "noisy"


def test_a_resumed_bisection_measures_nothing_twice(tmp_path, cmp_csv):
    p = plan(tmp_path, cmp_csv, ["3.7.1", "3.8.0"])
    first = run_rounds(p, known(TIMES), log=lambda m: None)
    p.opts.resume = True
    again = known(TIMES)
    res = run_rounds(p, again, log=lambda m: None)
    assert again.calls == [] and res.states == first.states
    spent = json.loads((p.out / "runs" / "round-1" / "seconds.json").read_text())
    assert spent["calls"] == 1 and res.rounds[0]["seconds"] == spent["seconds"]


def test_a_failure_under_a_release_is_bad_and_not_measured_again(tmp_path, cmp_csv):
    times = {**TIMES, "step380": {"golden": GOLDEN, "3.7.1": [], "3.8.0": BAD, "tot": BAD}}
    meas = known(times)
    res = run_rounds(plan(tmp_path, cmp_csv, ["3.7.1", "3.8.0"]), meas, log=lambda m: None)
    assert res.states[("versioned/step380", "3.7.1")] == "failed"
    assert res.readings[("versioned/step380", "3.7.1")][0].why == "compile_error: boom"
    assert res.histories["versioned/step380"].culprit == Step("3.6.0 (golden)", "3.7.1")
    assert all("step380" not in cases for r, _, cases in meas.calls if r > 1)


def test_tot_from_the_comparison(tmp_path, cmp_csv):
    p = plan(tmp_path, cmp_csv, ["3.8.0"], tot=False)
    meas = known({c: {k: v for k, v in t.items() if k != "tot"} for c, t in TIMES.items()})
    res = run_rounds(p, meas, log=lambda m: None)
    assert meas.calls[0][1] == ["golden", "3.8.0"]
    assert res.states[("versioned/noisy", "tot")] == "bad"
    assert res.readings[("versioned/noisy", "tot")][0].why == "the comparison's verdict"
    assert res.histories["versioned/step380"].culprit == Step("3.6.0 (golden)", "3.8.0")


# ------------------------------------------------------------------------------------------------ plan


def test_targets(tmp_path, cmp_csv):
    cmp = load_compare(cmp_csv)
    assert list(select_targets(cmp, None, "c")["case_id"]) == ["step380", "noisy", "settles"]
    assert list(select_targets(cmp, ["transient$"], "c")["case_id"]) == ["transient"]  # any verdict
    with pytest.raises(HarnessError, match="--case nope: no case of c matches"):
        select_targets(cmp, ["nope"], "c")
    with pytest.raises(HarnessError, match="--case: not a valid regular expression"):
        select_targets(cmp, ["("], "c")
    quiet = comparison(tmp_path / "q", {"a": GOLDEN}, {"a": GOLDEN})
    with pytest.raises(HarnessError, match="no regression or TOT failure to bisect .pick cases with --case."):
        select_targets(load_compare(quiet), None, "q")


def test_plan_refusals(tmp_path, cmp_csv, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def q(versions=("3.8.0",), **kw):
        return make_plan(cmp_csv, list(versions), tmp_path / "o", log=lambda m: None, **kw)

    with pytest.raises(HarnessError, match="--versions: name at least one release"):
        q(versions=[])
    with pytest.raises(HarnessError, match="--remeasure -1"):
        q(remeasure=-1)
    with pytest.raises(HarnessError, match="--versions: 3.8.0 is named twice"):
        q(versions=["3.8.0", "3.7.1", "3.8.0"])
    with pytest.raises(HarnessError, match=r"the env spec its golden run used is not here: pass --golden ENV"):
        q()
    (tmp_path / "g.yaml").write_text(f"python: {sys.executable}\n")
    with pytest.raises(HarnessError, match=r"slow.yaml: has no case versioned/step380 \(pass --suite"):
        q(suite=str(DATA / "slow.yaml"))
    with pytest.raises(HarnessError, match=r"overlay .*3.8.0 does not exist: unpack the release there"):
        q(mode="overlay", tot="none")
    assert (tmp_path / "o" / "envs" / "triton-3.8.0.yaml").exists()  # the spec it made, for `harness env show`
    with pytest.raises(HarnessError, match="--tot nope.yaml: no such env spec|nope.yaml: no such env spec"):
        q(tot="nope.yaml")


def test_a_comparison_without_its_suite_needs_suite(tmp_path):
    from harness.compare.compare import compare_files
    from harness.compare.store import write_compare

    bad = comparison(tmp_path, {"step380": GOLDEN}, {"step380": BAD})
    side = bad.with_name("golden.csv.env.json")
    side.write_text(json.dumps({k: v for k, v in json.loads(side.read_text()).items() if k != "suite"}))
    write_compare(compare_files(bad.with_name("golden.csv"), bad.with_name("tot.csv")), bad)
    with pytest.raises(HarnessError, match=r"the suite its golden run measured \(not recorded\) is not here: pass --s"):
        make_plan(bad, ["3.8.0"], tmp_path / "o", log=lambda m: None)


# ------------------------------------------------------------------------------------------ on the CPU

VENVS = {name: ROOT / ".venvs" / name / "bin" / "python" for name in ("golden", "v380", "tot")}


def harness(*args, env, timeout=900) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "harness", *map(str, args)], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=timeout)  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    return r


@pytest.mark.slow
@pytest.mark.skipif(
    not all(p.exists() for p in VENVS.values()), reason="the test command builds .venvs/golden, v380 and tot"
)
def test_bisect_four_stacks_on_the_cpu(tmp_path, capsys, monkeypatch):
    """Golden 3.6.0 (venv) vs TOT 3.9.0 (venv) through `harness run` and `compare`, then `harness bisect` over
    "3.7.1" (a release packed and unpacked by `harness env pack/unpack`, made from golden's env in overlay mode;
    a shim that runs golden's Triton under that version number) and 3.8.0 (a venv spec): the kernel's known
    times decide every state and history (tests/data/bisect_kernel.py)."""
    from tests.envs.wheels import shim_wheel

    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "100", "HARNESS_TRITON_DIR": str(tmp_path / "tri"),
           "HARNESS_TEST_BISECT_DIR": str(tmp_path / "markers")}  # fmt: skip
    (tmp_path / "markers").mkdir()
    g, t, c = tmp_path / "golden.csv", tmp_path / "tot.csv", tmp_path / "compare.csv"
    harness("run", "--env", "envs/venv-golden.yaml", "--with-env", "envs/venv-tot.yaml", "--suite", DATA / "bisect.yaml",
            "--out", g, "--with-out", t, env=env)  # fmt: skip
    for name in ("COLUMNS", "HARNESS_TRITON_DIR"):  # the steps between the measurements: in process
        monkeypatch.setenv(name, env[name])
    monkeypatch.chdir(ROOT)
    assert cli(capsys, "compare", g, t, "--out", c)[0] == 0
    assert set(pd.read_csv(c)["verdict"]) == {"regression", "improvement"}  # transient: faster at TOT
    code, _, err = cli(capsys, "env", "pack", "3.7.1", "--wheel", shim_wheel(tmp_path / "w", "3.7.1"), "--out",
                       tmp_path / "b")  # fmt: skip
    assert code == 0, err
    code, _, err = cli(capsys, "env", "unpack", tmp_path / "b")
    assert code == 0, err
    out = tmp_path / "bisect"
    r = harness("bisect", c, "--versions", "3.7.1,envs/venv-v380.yaml", "--mode", "overlay", "--case", ".",
                "--out", out, "--artifacts", env=env)  # fmt: skip
    assert "versioned/bgb: 3.9.0 (TOT) [non-monotonic]" in r.stdout

    cul = pd.read_csv(out / "culprits.csv").set_index("case_id")
    assert cul.loc["step371", "culprit"] == "3.7.1" and cul.loc["step371", "history"] == "step"
    assert cul.loc["step380", "culprit"] == "3.8.0" and cul.loc["step380", "last_good"] == "3.7.1"
    assert cul.loc["step390", "culprit"] == "3.9.0 (TOT)" and cul.loc["step390", "git_range"] == "v3.8.0..v3.9.0"
    assert cul.loc["settles", "culprit"] == "3.8.0" and cul.loc["settles", "state 3.8.0"] == "bad"
    assert cul.loc["noisy", "state 3.8.0"] == "noisy" and cul.loc["noisy", "culprit"] == "3.8.0 or 3.9.0 (TOT)"
    assert cul.loc["bgb", "history"] == "non-monotonic" and cul.loc["bgb", "culprit"] == "3.9.0 (TOT)"
    assert [cul.loc["bgb", f"state {s}"] for s in ("3.7.1", "3.8.0", "3.9.0 (TOT)")] == ["bad", "good", "bad"]
    assert cul.loc["transient", "history"] == "non-monotonic" and pd.isna(cul.loc["transient", "culprit"])
    assert cul.loc["transient", "verdict"] == "improvement"

    series = pd.read_csv(out / "series.csv")
    noisy = series[(series["case_id"] == "noisy") & (series["stack"] == "3.8.0")]
    assert list(noisy["round"]) == [1, 2, 3] and not noisy["clean"].any()  # measured again twice, noisy each time
    settles = series[(series["case_id"] == "settles") & (series["stack"] == "3.8.0")]
    assert not settles["clean"].iloc[0] and settles["clean"].iloc[-1] and len(settles) in (2, 3)
    assert (series.groupby(["case_id", "stack"]).size().drop([("noisy", "3.8.0"), ("settles", "3.8.0")]) == 1).all()

    summary = json.loads((out / "bisect.json").read_text())
    assert [s["triton"] for s in summary["stacks"]] == ["3.6.0", "3.7.1", "3.8.0", "3.9.0"]
    assert summary["stacks"][1]["spec"].endswith("envs/triton-3.7.1.yaml")
    side = json.loads((out / "runs" / "round-1" / "3.7.1.csv.env.json").read_text())
    assert side["triton"]["version"] == "3.7.1" and str(tmp_path / "tri" / "3.7.1") in side["env_spec"]["pythonpath"]
    md = (out / "bisect.md").read_text()
    assert "non-monotonic: bad at 3.7.1, good again at 3.8.0, bad again at 3.9.0 (TOT)" in md
    assert "[compare view](https://github.com/triton-lang/triton/compare/v3.7.1...v3.8.0)" in md
    assert "Triton's CPU interpreter compiles no kernels" in md and " of 3 bad) |" in md  # noisy: how it fell
    assert (out / "timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "steps" / "3.7.1..3.8.0" / "compare.csv").exists()


@pytest.mark.slow
def test_a_release_env_importing_another_triton_is_refused(tmp_path, cmp_csv, monkeypatch):
    """The probe: an overlay whose folder lost its triton package falls back to site-packages' Triton; two envs
    importing one Triton would compare a stack with itself."""
    from harness.bisect.model import Stack
    from harness.bisect.plan import probe_stacks
    from harness.envs.pack import pack
    from harness.envs.spec import load_env_spec, release_env
    from harness.envs.unpack import unpack
    from tests.envs.wheels import shim_wheel

    golden = tmp_path / "g.yaml"
    golden.write_text(f"python: {sys.executable}\n")
    g = load_env_spec(golden)
    pack("3.7.1", tmp_path / "b", wheel=shim_wheel(tmp_path / "w", "3.7.1"), log=lambda m: None)
    dest, _ = unpack(tmp_path / "b", tmp_path / "tri" / "3.7.1", log=lambda m: None)
    monkeypatch.setenv("HARNESS_TRITON_DIR", str(tmp_path / "tri"))
    rel = release_env("3.7.1", "overlay", g, tmp_path / "envs")
    cmp = load_compare(cmp_csv)
    stacks = [Stack("golden", "golden", g), Stack("3.7.1", "release", rel, asked="3.7.1"), Stack("tot", "tot", None)]
    probe_stacks(stacks, cmp, log=lambda m: None)
    assert [s.label for s in stacks] == [f"{stacks[0].version} (golden)", "3.7.1", "3.9.0 (TOT)"]
    shutil.rmtree(dest / "triton")
    with pytest.raises(
        HarnessError, match=r"triton-3.7.1.yaml: its worker imports Triton 3\.\d+\.\d+ from .*, not 3.7.1"
    ):
        probe_stacks(stacks, cmp, log=lambda m: None)
    twin = [Stack("golden", "golden", g), Stack("again", "release", g), Stack("tot", "tot", None)]
    with pytest.raises(HarnessError, match=r"g.yaml and .*g.yaml both run Triton"):
        probe_stacks(twin, cmp, log=lambda m: None)


# ------------------------------------------------------------------------------------------------ identity


def test_other_code_than_the_comparisons_is_named_or_refused(tmp_path, cmp_csv):
    """results/identity.BISECT: the kernels edited since the comparison, a warning in the terminal and the report
    while TOT is measured again; refused while TOT's verdicts are the comparison's (they are of other code)."""
    from harness.bisect.plan import same_identity
    from harness.bisect.render import markdown
    from harness.run.sidecar import code_record

    p = plan(tmp_path, cmp_csv, ["3.8.0"])
    now = code_record(p.cases)
    said: list[str] = []
    same_identity(p, now, "the code here", said.append)
    assert said == [] and p.warnings == [], "the comparison's sidecar records no code: unknown, never a difference"
    p.cmp.golden_env["kernel_content"] = {k: "0" * 64 for k in now["kernel_content"]}
    same_identity(p, now, "the code here", said.append)
    same_identity(p, now, "this bisection's golden run", said.append)  # said once, whoever says it again
    assert len(said) == 1 and said[0].startswith("warning: the comparison's golden run and the code here differ in "
                                                 "kernels' source files (kernel_content)")  # fmt: skip
    res = run_rounds(p, known(TIMES), log=lambda m: None)
    assert "- **Warning**: the comparison's golden run and the code here differ in kernels'" in markdown(res, False)
    (tmp_path / "v").mkdir()
    by_verdict = plan(tmp_path / "v", cmp_csv, ["3.8.0"], tot=False)
    by_verdict.cmp.golden_env["kernel_content"] = {k: "0" * 64 for k in now["kernel_content"]}
    with pytest.raises(HarnessError, match=r"differ in kernels' source files .*pass --tot ENV to measure TOT"):
        same_identity(by_verdict, now, "the code here", said.append)


def test_a_rows_reps_are_read_by_the_one_rule():
    from harness.bisect.bisect import _reps

    assert _reps("[1.0, 2.0]") == (1.0, 2.0)
    assert _reps("[1.0, 0, 2.0]") == _reps("[true, 2.5]") == _reps("[1e999, 2]") == _reps("5") == _reps(None) == ()
