"""`harness compare GOLDEN TOT --aa GOLDEN_AA` on AITER's batched GEMMs measured on an H200 (golden, TOT and golden
again interleaved in one run; tests/data/aiter-h200-aa): the a8w8 kernel's two golden processes differ by 0.3–5.8 %
while its reps agree within 0.6 %, so its confident flags become ambiguous; the verdicts stay the rule's; an A/A
that is not golden's stack in the same run is refused in one line."""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest

from tests.conftest import DATA, cli

H200 = DATA / "aiter-h200-aa"
A8, BF = "aiter_batched_gemm_a8w8", "aiter_batched_gemm_bf16"


def _compare(capsys, tmp_path, *extra: object) -> tuple[pd.DataFrame, str, dict]:
    out = tmp_path / "c.csv"
    code, stdout, err = cli(capsys, "compare", H200 / "golden.csv", H200 / "tot.csv", "--out", out, *extra)
    assert code == 0, err
    return pd.read_csv(out, keep_default_na=False), stdout, json.loads((tmp_path / "c.csv.meta.json").read_text())


def _flags(t: pd.DataFrame, kernel: str, confidence: str) -> int:
    k = t[t["kernel"] == kernel]
    return int((k["verdict"].isin(["regression", "improvement"]) & (k["confidence"] == confidence)).sum())


def test_the_aa_makes_a8w8s_process_noise_flags_ambiguous(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    before, _, _ = _compare(capsys, tmp_path)
    (tmp_path / "c.csv").unlink()
    (tmp_path / "c.csv.meta.json").unlink()
    after, stdout, meta = _compare(capsys, tmp_path, "--aa", H200 / "golden-aa.csv", "--markdown", tmp_path / "c.md")
    assert after["verdict"].tolist() == before["verdict"].tolist()  # the rule decides, never the A/A
    assert list(after.columns) == list(before.columns)
    # a8w8: 10 confident regressions and 2 confident improvements, all within its ±5.3-point process noise
    assert (_flags(before, A8, "confident"), _flags(after, A8, "confident")) == (12, 0)
    # bf16 (σ_p 0.23 %): its flags well past the limit stay confident, those within 0.46 point of it do not
    assert (_flags(before, BF, "confident"), _flags(after, BF, "confident")) == (5, 1)
    kept = after[(after["kernel"] == BF) & (after["confidence"] == "confident")]
    assert len(kept) == 9  # 8 ok and the -1.2 % improvement of the 19.5 ms case
    rec = meta["process_noise"]
    assert rec["path"].endswith("golden-aa.csv") and len(rec["sha256"]) == 64 and rec["not_in_aa"] == 0
    assert rec["kernels"][A8]["cases"] == 18 and rec["kernels"][A8]["sigma_pct"] == pytest.approx(2.70, abs=0.01)
    assert rec["kernels"][BF]["sigma_pct"] == pytest.approx(0.23, abs=0.01)
    assert (rec["kernels"][A8]["ambiguous"], rec["kernels"][BF]["ambiguous"]) == (17, 5)
    lines = stdout.splitlines()
    i = lines.index("process noise (A/A golden-aa.csv):")
    assert lines[i + 1 : i + 4] == [
        f"  {A8} 2.7 %: 17 verdicts ambiguous because of it",
        f"  {BF} 0.23 %: 5 verdicts ambiguous because of it",
        "  to decide them: run again with --fresh-process-rounds",  # same-process reps cannot shrink it
    ]
    assert all(len(line) <= 80 for line in lines[i : i + 4])
    md = (tmp_path / "c.md").read_text()
    assert f"Process noise (A/A golden-aa.csv):\n\n- {A8} 2.7 %: 17 verdicts ambiguous because of it\n" in md
    assert "process noise 2.7 % (A/A)" in after.loc[after["kernel"] == A8, "note"].tolist()
    # publish renders the stored comparison: the same lines
    from harness.compare.store import load_compare
    from harness.render.markdown import render_markdown

    stored = load_compare(tmp_path / "c.csv")
    assert stored.process_noise == rec
    assert f"- {BF} 0.23 %: 5 verdicts ambiguous because of it\n" in render_markdown(stored, artifact="c.csv")


def test_a_quiet_aa_keeps_what_it_cannot_explain(capsys, tmp_path):
    """The a8w8 repeat (golden, golden, TOT): its two golden processes agree within 2.1 % (σ_p 0.87 %): the
    ok cases far from the limit stay confident."""
    out = tmp_path / "c.csv"
    code, stdout, err = cli(capsys, "compare", H200 / "B-1-golden.csv", H200 / "B-3-tot.csv", "--out", out,
                            "--aa", H200 / "B-2-golden.csv")  # fmt: skip
    assert code == 0, err
    t = pd.read_csv(out, keep_default_na=False)
    assert (t["confidence"] == "confident").sum() == 4 and (t["confidence"] == "ambiguous").sum() == 5
    assert f"  {A8} 0.87 %: 5 verdicts ambiguous because of it" in stdout


def test_cases_missing_from_the_aa_are_not_widened_and_counted(capsys, tmp_path):
    aa = tmp_path / "aa.csv"
    rows = pd.read_csv(H200 / "golden-aa.csv", dtype=str, keep_default_na=False)
    rows[rows["kernel"] == BF].to_csv(aa, index=False)  # an A/A of the bf16 kernel only
    shutil.copy(H200 / "golden-aa.csv.env.json", tmp_path / "aa.csv.env.json")
    t, stdout, meta = _compare(capsys, tmp_path, "--aa", aa)
    assert meta["process_noise"]["not_in_aa"] == 18 and meta["process_noise"]["widened"] == 18
    assert list(meta["process_noise"]["kernels"]) == [BF]
    assert _flags(t, A8, "confident") == 12  # judged by their reps alone, as without --aa
    assert "process noise (A/A aa.csv): 18 cases not in it" in stdout


def _refused(capsys, golden, tot, aa) -> str:
    code, out, err = cli(capsys, "compare", golden, tot, "--aa", aa)
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def _copy(tmp_path, name: str, **sidecar: object):
    """golden-aa.csv copied as ``name``, its sidecar's fields replaced by ``sidecar``."""
    p = tmp_path / name
    shutil.copy(H200 / "golden-aa.csv", p)
    env = json.loads((H200 / "golden-aa.csv.env.json").read_text())
    env.update(sidecar)
    (tmp_path / f"{name}.env.json").write_text(json.dumps(env))
    return p


def test_an_aa_that_is_not_goldens_stack_in_the_same_run_is_refused(capsys, tmp_path):
    g, t = H200 / "golden.csv", H200 / "tot.csv"
    assert f"--aa {tmp_path / 'nope.csv'}: no such file" in _refused(capsys, g, t, tmp_path / "nope.csv")
    assert "is TOT" in _refused(capsys, g, t, t)
    assert "is GOLDEN" in _refused(capsys, g, t, g)
    shutil.copy(g, tmp_path / "copy.csv")
    assert "is GOLDEN" in _refused(capsys, g, t, tmp_path / "copy.csv")  # the same bytes under another name
    # the repeat ran on another H200 (another physical GPU) than the three-way run
    assert "another GPU than golden's" in _refused(capsys, g, t, H200 / "B-2-golden.csv")
    # TOT's stack as the A/A: another Triton
    err = _refused(capsys, H200 / "B-1-golden.csv", H200 / "B-2-golden.csv", H200 / "B-3-tot.csv")
    assert "another Triton than golden's (3.9.0" in err
    other = _copy(tmp_path, "suite.csv", suite="suites/ci.yaml")
    assert "another suite than golden's (ci.yaml vs batched_gemm.yaml)" in _refused(capsys, g, t, other)


def test_an_aa_of_other_cases_is_refused(capsys, tmp_path):
    aa = tmp_path / "other.csv"
    rows = pd.read_csv(H200 / "golden-aa.csv", dtype=str, keep_default_na=False)
    rows.assign(case_id=rows["case_id"] + "_x").to_csv(aa, index=False)
    err = _refused(capsys, H200 / "golden.csv", H200 / "tot.csv", aa)
    assert "none of golden's 36 cases was timed ok" in err


def test_an_aa_of_another_checkout_or_run_or_not_results(capsys, tmp_path):
    """Another commit of the library (its sidecar's `libraries`) is another stack: refused. An A/A captured hours
    from golden is another run: compared, with a warning that its noise is that run's. A file that is not results
    is refused naming --aa."""
    g, t = H200 / "golden.csv", H200 / "tot.csv"
    libs = json.loads((H200 / "golden-aa.csv.env.json").read_text())["libraries"]
    moved = {k: {**v, "commit": "fc01c4f00f" + "0" * 30} for k, v in libs.items()}
    err = _refused(capsys, g, t, _copy(tmp_path, "pr.csv", libraries=moved))
    assert "another library checkout than golden's (aiter fc01c4f00f vs aiter e4048607a5)" in err
    later = _copy(tmp_path, "later.csv", captured_at="2026-11-26T09:50:52Z")
    code, _, err = cli(capsys, "compare", g, t, "--aa", later)
    assert code == 0 and f"warning: --aa {later}: captured 240 min from golden, not in the same run" in err
    sidecar = tmp_path / "side.csv"
    shutil.copy(H200 / "golden.csv.env.json", sidecar)
    assert _refused(capsys, g, t, sidecar).startswith(f"harness: error: --aa: {sidecar}")


def test_ambiguous_regressions_are_not_shown_as_blocking(capsys, tmp_path):
    """With the A/A every regression is ambiguous: --fail-on-regression passes, so the summary must not say they
    block (terminal: 'ambiguous' beside the count; markdown: ⚠️, not ❌); --fail-on-ambiguous still fails."""
    md = tmp_path / "c.md"
    _, stdout, _ = _compare(capsys, tmp_path, "--aa", H200 / "golden-aa.csv", "--markdown", md)
    row = next(line for line in stdout.splitlines() if line.startswith("regression"))
    assert row.split()[1:] == ["14", "ambiguous"]
    assert "**⚠️ 14 regressions (14 ambiguous)" in md.read_text() and "❌" not in md.read_text()
    code, stdout, _ = cli(capsys, "compare", H200 / "golden.csv", H200 / "tot.csv", "--aa", H200 / "golden-aa.csv",
                          "--fail-on-regression")  # fmt: skip
    assert code == 0
    code, _, _ = cli(capsys, "compare", H200 / "golden.csv", H200 / "tot.csv", "--aa", H200 / "golden-aa.csv",
                     "--fail-on-ambiguous")  # fmt: skip
    assert code == 1
    _, stdout, _ = _compare(capsys, tmp_path)  # without the A/A: 13 of them confident
    row = next(line for line in stdout.splitlines() if line.startswith("regression"))
    assert row.split()[1:] == ["14", "13", "block"]


# two H200s of the repeat (B-*) and three-way runs: a run over both (--gpus all) merges one part from each
GPU_A, GPU_B = "53753b43-965b-33c5-4d80-63aa25a91c21", "00c445dc-ae6e-e2e1-1837-b96233240c14"


def _merged(tmp_path, name: str, on_a: set[str], first: str = "A") -> object:
    """H200's ``name``.csv as `harness merge` writes it from two parts: the cases of ``on_a`` timed on GPU_A, the
    others on GPU_B, each part's sidecar naming its GPU; ``first``: the part given first (its sidecar is kept)."""
    from harness.run.merge import merge_results

    rows = pd.read_csv(H200 / f"{name}.csv", dtype=str, keep_default_na=False)
    env = json.loads((H200 / f"{name}.csv.env.json").read_text())
    tmp_path.mkdir()
    parts = {}
    for label, uuid in (("A", GPU_A), ("B", GPU_B)):
        p = tmp_path / f"{name}-{label}.csv"
        rows[rows["case_id"].isin(on_a) == (label == "A")].assign(gpu=uuid).to_csv(p, index=False)
        gpu = {**env["gpu"], "uuid": uuid, "before": {**env["gpu"]["before"], "uuid": f"GPU-{uuid}"}}
        (tmp_path / f"{p.name}.env.json").write_text(json.dumps({**env, "gpu": gpu}))
        parts[label] = p
    out = tmp_path / f"{name}.csv"
    merge_results([parts[first], parts["B" if first == "A" else "A"]], out)
    return out


def test_an_aa_merged_from_several_gpus_is_checked_case_by_case(capsys, tmp_path):
    """Merged results name only their first part's GPU in the sidecar (its ``gpus`` list all of them): the A/A's
    GPU is then checked by its rows, as compare checks TOT's. Parts given in another order are golden's GPUs all
    the same; cases spread over the GPUs otherwise are not."""
    cases = set(pd.read_csv(H200 / "golden.csv", dtype=str)["case_id"])
    half = set(sorted(cases)[: len(cases) // 2])
    g, t = (_merged(tmp_path / side, side, half) for side in ("golden", "tot"))
    aa = _merged(tmp_path / "aa", "golden-aa", half, first="B")  # its sidecar names GPU_B, golden's GPU_A
    assert json.loads((tmp_path / "aa" / "golden-aa.csv.env.json").read_text())["gpus"] == sorted([GPU_A, GPU_B])
    code, stdout, err = cli(capsys, "compare", g, t, "--aa", aa)
    assert code == 0 and "process noise (A/A golden-aa.csv):" in stdout, err
    swapped = _merged(tmp_path / "swapped", "golden-aa", cases - half)  # its sidecar names GPU_A, as golden's
    err = _refused(capsys, g, t, swapped)
    assert "--aa" in err and "36 cases timed on another GPU than golden's (e.g. aiter_batched_gemm_" in err
