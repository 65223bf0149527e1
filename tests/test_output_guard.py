"""The standing guard of issue 43 item 3 on outputs: every command that writes, pointed at a file or a folder the
user made, refuses in one line with exit 2 and leaves it exactly as it was. A new command with an output joins
this table, so the class does not come back one command at a time."""

from __future__ import annotations

import shutil
from pathlib import Path

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
    "flip": (["flip", "{cmp}", "--knob", "A=1", "--out", "{dir}"], "dir"),
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


def test_one_guard_checks_every_output_file_in_one_order(tmp_path):
    """fsutil.guard_outputs, the one guard of output files: an input, two outputs at one path, a file the option
    did not write, a path that cannot be written; each one line naming the option."""
    from harness.errors import HarnessError
    from harness.fsutil import Output, guard_outputs

    src, mine, ours = tmp_path / "in.csv", tmp_path / "mine.txt", tmp_path / "ours.csv"
    src.write_text("a\n")
    mine.write_text("the user's\n")
    ours.write_text("harness\n")

    def refused(outputs, inputs=()):
        with pytest.raises(HarnessError) as err:
            guard_outputs(outputs, inputs)
        return str(err.value)

    assert refused([Output("--out", src)], [src]) == f"--out {src} is the input {src}: refusing to overwrite it"
    both = [Output("--out", tmp_path / "x.csv"), Output("--markdown", tmp_path / "." / "x.csv")]
    assert refused(both) == f"--markdown {tmp_path / '.' / 'x.csv'} is where --out writes: give each its own file"
    assert "--md " + str(mine) + ": exists and is not harness's markdown: refusing" in refused(
        [Output("--md", mine, lambda p: p.read_text() == "harness\n", "harness's markdown")]
    )
    assert "is a directory" in refused([Output("--out", tmp_path)])
    guard_outputs([Output("--out", ours, lambda p: p.read_text() == "harness\n"), Output("--md", None)], [src])
    (tmp_path / "empty.txt").write_text("")
    guard_outputs([Output("--out", tmp_path / "empty.txt")])  # an empty file has nothing to lose
    assert mine.read_text() == "the user's\n" and ours.read_text() == "harness\n"


def test_no_stage_checks_an_output_file_by_itself():
    """The pieces of the guard (refuse_overwrite, refuse_foreign, check_writable) are called through
    guard_outputs only, so a new output cannot take one check and forget another; the history database's --db
    is opened, not written over, and checks only that it can be written."""
    import re

    allowed = {"harness/fsutil.py", "harness/history/database.py"}
    found = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        if rel not in allowed and re.search(r"\b(refuse_overwrite|refuse_foreign|check_writable)\(", text):
            found.append(rel)
    assert found == []


@pytest.mark.parametrize("beside", [".env.json", ".journal.jsonl"])
def test_a_run_never_writes_over_a_users_file_beside_its_out(beside, tmp_path, capsys, monkeypatch):
    """A stranger's test found `harness run --out X` writing its sidecar and journal over the user's X.env.json
    and X.journal.jsonl: the files a run writes beside --out are guarded as --out is."""
    import sys

    monkeypatch.setenv("HARNESS_TEST_PYTHON", sys.executable)
    out = tmp_path / "n.csv"
    mine = tmp_path / f"n.csv{beside}"
    mine.write_text("the user's own notes\n")
    code, _, err = cli(capsys, "run", "--env", ENV, "--suite", SUITE, "--filter", "rmsnorm", "--out", out)
    assert code == 2 and err.count("\n") == 1 and "exists and is not a" in err, err
    assert mine.read_text() == "the user's own notes\n" and not out.exists()


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_folder_that_takes_no_new_file_is_refused_before_any_work(capsys):
    # root passes every permission check, yet /proc takes no new file: the compare must not run and print first
    code, out, err = cli(capsys, "compare", G, T, "--out", "/proc/c.csv")
    assert code == 2 and out == "" and err.startswith("harness: error: --out /proc/c.csv: ") and err.count("\n") == 1
