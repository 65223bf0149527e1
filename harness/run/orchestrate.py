"""Several environments measuring one selection of cases, under locks and progress bars: the one way every stage
(`harness run`, bisect, retune, calibrate) reaches the driver.

The bars and the warning line are the terminal's, which this floor cannot import (render/ sits above run/): the
command line hands them in as a :class:`Driver`, and a stage calls ``driver.measure``. A Driver without bars
shows none (tests, library use)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from harness.envs.spec import EnvSpec
from harness.errors import HarnessError
from harness.inputs.suite import Case
from harness.run.interleave import run_interleaved
from harness.run.options import RunOptions
from harness.run.outputs import lock_outputs
from harness.run.runner import run_suite
from harness.run.workers import WorkerPool

Runs = list[tuple[EnvSpec, Path]]
#: ``(env index, case label, done, total)``: moves that env's bar
Progress = Callable[[int, str, int, int], None]
#: the env names → a context that shows one bar per env and yields its Progress
EnvBars = Callable[[list[str]], AbstractContextManager[Progress]]
#: the env names → a context yielding ``bars(part)``, one bar per env and part (``--gpus``)
PartBars = Callable[[list[str]], AbstractContextManager[Callable[[str], Progress]]]


@dataclass(frozen=True)
class Driver:
    """How a stage measures: progress bars and warnings as the caller shows them (no bars: none shown; no
    ``warn``: the run's own warnings go to stderr); ``workers``: a pool that keeps the workers between the
    stage's runs (none: each run starts its own and ends them)."""

    bars: EnvBars | None = None
    part_bars: PartBars | None = None
    warn: Callable[[str], None] | None = None
    workers: WorkerPool | None = None

    def measure(
        self, runs: Runs, cases: list[Case], opts: RunOptions, suite: str, *, names: list[str] | None = None,
        lock: bool = True,
    ) -> list[dict[str, int]]:  # fmt: skip
        """Every env of ``runs`` measures ``cases`` (interleaved when several); returns each env's counts.
        ``names``: the bars' labels (default: the envs' names). ``lock``: check and lock every output until all
        are done (off: each run checks and locks its own file, as a stage with its own lock on OUT does)."""
        labels = names or [s.name for s, _ in runs]
        with _locked(runs, opts, suite, lock), self._bars(labels) as bars:
            if len(runs) == 1:
                spec, out = runs[0]
                progress = (lambda label, done, total: bars(0, label, done, total)) if bars else None
                return [run_suite(spec, cases, out, opts, progress, suite, lock, self.workers)]
            return run_interleaved(
                runs, cases, opts, progress=bars, suite_name=suite, locked=lock, warn=self.warn, workers=self.workers
            )

    def measure_on_gpus(
        self, runs: Runs, cases: list[Case], opts: RunOptions, suite: str, gpus: list[int],
        previous: Mapping[str, float] | None = None,
    ) -> list[dict[str, int]]:  # fmt: skip
        """``--gpus``: one part of the cases per GPU, every env on each; the parts merged into each env's OUT."""
        from harness.run.node import run_on_gpus

        names = [s.name for s, _ in runs]
        parts = self.part_bars(names) if self.part_bars else nullcontext(_no_part_bar)
        with lock_outputs(runs, opts, suite), parts as bars:
            return run_on_gpus(runs, cases, opts, gpus, suite, bars, previous, self.warn)

    def _bars(self, names: list[str]) -> AbstractContextManager[Progress | None]:
        return self.bars(names) if self.bars else nullcontext(None)


def _no_part_bar(part: str) -> Progress:
    return lambda index, label, done, total: None


def _locked(runs: Runs, opts: RunOptions, suite: str, lock: bool) -> AbstractContextManager[None]:
    return lock_outputs(runs, opts, suite) if lock else nullcontext()


def write_empty_parts(runs: Runs, opts: RunOptions, suite: str) -> None:
    """Every OUT of a shard without cases: the header and a sidecar (checked and locked like any run's)."""
    from harness.run.options import run_options
    from harness.run.sidecar import write_empty_part

    with lock_outputs(runs, opts, suite):
        for spec, out in runs:
            write_empty_part(spec, opts, Path(out), suite, run_options(spec, opts, suite))


def selected_cases(
    suite: Path,
    kernel: list[str] | None,
    filter_: str | None,
    shard: str | None = None,
    previous: Mapping[str, float] | None = None,
    config_arch: str | None = None,
) -> list[Case]:
    """The suite's cases that --kernel, --filter and --shard leave (as --config-arch says); none left is bad
    input."""
    from harness.inputs.suite import as_config_arch, load_suite, select

    cases = as_config_arch(select(load_suite(suite), kernel, filter_), config_arch)
    if not cases:
        raise HarnessError(f"{suite}: no case matches --kernel/--filter")
    if shard:
        from harness.run.shards import shard as take_shard

        cases = take_shard(cases, shard, previous)  # may be empty: more shards than cases
    return cases


def previous_times(path: Path) -> dict[str, float]:
    """``kernel/case_id`` → time (µs) of the timed rows of a results file (--times balances --shard, --gpus)."""
    from harness.results.load import load_results

    df = load_results(path)
    df = df[df["time_us"].notna()]
    return dict(zip(df["kernel"] + "/" + df["case_id"], df["time_us"].astype(float)))
