"""`--help` reads at 80 columns: click's plain layout (rich's panels squeezed each option's help into a column
about 20 characters wide), no line wider than the terminal, and `harness run --help` on one screen and a half."""

from __future__ import annotations

import pytest
import typer

from harness.cli import app, main


def _paths(cmd, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and group, as the words typed after `harness`."""
    found = [path]
    for name, sub in sorted(getattr(cmd, "commands", {}).items()):
        found += _paths(sub, (*path, name))
    return found


COMMANDS = _paths(typer.main.get_command(app))


def _help(capsys, monkeypatch, *words: str) -> list[str]:
    monkeypatch.setenv("COLUMNS", "80")  # what click's formatter reads for the terminal's width
    with pytest.raises(SystemExit) as ex:
        main([*words, "--help"])
    assert ex.value.code == 0
    return capsys.readouterr().out.splitlines()


def test_every_command_is_seen():
    assert {("run",), ("compare",), ("history", "add"), ("env", "pack"), ("suite", "show")} <= set(COMMANDS)


@pytest.mark.parametrize("words", COMMANDS, ids=lambda w: " ".join(w) or "(root)")
def test_help_fits_80_columns(words, capsys, monkeypatch):
    lines = _help(capsys, monkeypatch, *words)
    wide = [line for line in lines if len(line) > 80]
    assert not wide, "\n".join(wide)


def test_run_help_is_at_most_60_lines(capsys, monkeypatch):
    lines = _help(capsys, monkeypatch, "run")
    assert len(lines) <= 60, "\n".join(lines)
    assert "--shuffle-placement / --no-shuffle-placement" in "\n".join(lines)  # every option still there
