"""The progress bars of `harness run`: one line per environment, on stderr, with the case being measured."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

if TYPE_CHECKING:
    from harness.run.orchestrate import Driver


@contextmanager
def env_bars(con: Console, names: list[str]) -> Iterator[Callable[[int, str, int, int], None]]:
    """A callback ``(env index, case label, done, total)`` that moves that env's bar."""
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[case]}"),
    )
    with Progress(*columns, console=con, transient=False) as bar:
        tasks = [bar.add_task(name, total=None, case="") for name in names]

        def update(i: int, label: str, done: int, total: int) -> None:
            bar.update(tasks[i], completed=done, total=total, case=label[:48])

        yield update


@contextmanager
def part_bars(con: Console, names: list[str]) -> Iterator[Callable[[str], Callable[[int, str, int, int], None]]]:
    """For runs split into parts (``--gpus``): ``bars(part)`` gives that part's callback, one bar per env and
    part (``golden@gpu2``), made when the part starts."""
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[case]}"),
    )
    with Progress(*columns, console=con, transient=False) as bar:

        def bars(part: str) -> Callable[[int, str, int, int], None]:
            tasks = [bar.add_task(f"{n}@{part}", total=None, case="") for n in names]

            def update(i: int, label: str, done: int, total: int) -> None:
                bar.update(tasks[i], completed=done, total=total, case=label[:40])

            return update

        yield bars


@contextmanager
def byte_bars(con: Console) -> Iterator[Callable[[str, int, int], None]]:
    """A callback ``(stage, done bytes, total bytes)``: one bar per stage (pack, split, verify, unpack)."""
    from rich.progress import DownloadColumn, TransferSpeedColumn

    columns = (TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn())
    with Progress(*columns, console=con, transient=False) as bar:
        tasks: dict[str, int] = {}

        def update(stage: str, done: int, total: int) -> None:
            if stage not in tasks:
                tasks[stage] = bar.add_task(stage, total=total)
            bar.update(tasks[stage], completed=done, total=total)

        yield update


def console_driver(con: Console) -> Driver:
    """The driver every measuring command hands its stage: these bars on ``con``, warnings as red lines there."""
    from functools import partial

    from harness.run.orchestrate import Driver

    def say(message: str) -> None:
        con.print(f"WARNING: {message}", style="bold red", markup=False, highlight=False)

    return Driver(bars=partial(env_bars, con), part_bars=partial(part_bars, con), warn=say)
