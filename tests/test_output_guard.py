"""The standing guard of issue 43 item 3 on outputs: every command that writes, pointed at a file or a folder the
user made, refuses in one line with exit 2 and leaves it exactly as it was. A new command with an output joins
this table, so the class does not come back one command at a time."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import DATA, ROOT, cli

G, T = DATA / "aiter-h200-aa" / "golden.csv", DATA / "aiter-h200-aa" / "tot.csv"
ENV, SUITE = DATA / "cpu-env.yaml", ROOT / "suites" / "ci.yaml"

#: command → (arguments, with {file} or {dir} where the output goes), what the user's output is
COMMANDS = {
    "run": (["run", "--env", ENV, "--suite", SUITE, "--out", "{file}"], "file"),
    "compare --out": (["compare", "{g}", "{t}", "--out", "{file}"], "file"),
    "compare --markdown": (["compare", "{g}", "{t}", "--markdown", "{file}"], "file"),
    "merge": (["merge", "{g}", "--out", "{file}"], "file"),
    "history show": (
        ["history", "show", "--db", "{db}", "--kernel", "aiter_batched_gemm_bf16", "--out", "{file}"],
        "file",
    ),  # fmt: skip
    "history add": (["history", "add", "{g}", "--db", "{file}"], "file"),
    "history trend": (
        ["history", "trend", "--db", "{db}", "--kernel", "aiter_batched_gemm_bf16", "--out", "{file}"],
        "file",
    ),  # fmt: skip
    "history list": (["history", "list", "--db", "{db}", "--out", "{file}"], "file"),
    "report": (["report", "{g}", "{t}", "--out", "{dir}"], "dir"),
    "explain": (["explain", "{cmp}", "--out", "{dir}"], "dir"),
    "calibrate": (["calibrate", SUITE, "--env", ENV, "--out", "{dir}"], "dir"),
    "retune": (["retune", "{cmp}", "--env", ENV, "--golden-env", ENV, "--out", "{dir}"], "dir"),
    "bisect": (["bisect", "{cmp}", "--versions", "3.7.0", "--out", "{dir}"], "dir"),
    "env pack": (["env", "pack", "3.9.0", "--out", "{dir}"], "dir"),
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    for src in (G, T):
        shutil.copy(src, d / src.name)
        shutil.copy(f"{src}.env.json", d / f"{src.name}.env.json")
    return d


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_output_the_user_made_is_never_written_over(command, inputs, tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    args, kind = COMMANDS[command]
    g, t = inputs / "golden.csv", inputs / "tot.csv"
    cmp = tmp_path / "c.csv"
    if "{cmp}" in map(str, args):
        assert cli(capsys, "compare", g, t, "--out", cmp)[0] in (0, 1)
    db = tmp_path / "h.sqlite"
    if "{db}" in map(str, args):
        assert cli(capsys, "history", "add", g, "--db", db)[0] == 0
    mine = tmp_path / "mine"
    if kind == "file":
        mine = tmp_path / "mine.txt"
        mine.write_text("the user's own notes\n")
    else:
        mine.mkdir()
        (mine / "notes.txt").write_text("the user's own notes\n")
    subst = {"{g}": g, "{t}": t, "{cmp}": cmp, "{db}": db, "{file}": mine, "{dir}": mine}
    code, _, err = cli(capsys, *(subst.get(str(a), a) for a in args))
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, (command, err)
    if kind == "file":
        assert mine.read_text() == "the user's own notes\n"
    else:
        assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
        assert (mine / "notes.txt").read_text() == "the user's own notes\n"
