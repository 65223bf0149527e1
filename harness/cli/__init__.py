"""The `harness` command line: a thin layer over plain functions in the stage modules.

Exit codes: 0 done; 1 `--fail-on-regression` found a regression or a TOT failure (or `run` had failing
cases with `--fail-on-error`); 2 bad input or usage (one line on stderr, never a traceback); 3 a bug in harness
(its traceback kept); 130 Ctrl-C; 143 SIGTERM. A CI gate can so tell "slower" (1) from "could not tell" (2, 3).
"""

from __future__ import annotations

import sys

import typer

from harness import process
from harness.cli import (  # typer only at import: each command imports its work when it runs
    agree,
    bisect,
    calibrate,
    compare,
    env,
    explain,
    flip,
    history,
    merge,
    publish,
    report,
    retune,
    run,
    suite,
)
from harness.errors import HarnessError

app = typer.Typer(
    name="harness",
    help="Regression tracking for GPU kernels across Triton compiler stacks (golden vs top-of-tree).",
    no_args_is_help=False,
    pretty_exceptions_show_locals=False,  # locals may hold credentials
    add_completion=False,
    # click's plain help, for every command: rich's panels wrap each option's help into a column ~20 wide
    rich_markup_mode=None,
)


@app.callback()
def _root() -> None:
    """Regression tracking for GPU kernels across Triton compiler stacks (golden vs top-of-tree)."""


# commands first, then groups, each in the order `harness --help` lists them
app.command("compare")(compare.compare)
app.command("agree")(agree.agree)
app.command("run")(run.run)
app.command("merge")(merge.merge)
app.command("retune")(retune.retune)
app.command("explain")(explain.explain)
app.command("bisect")(bisect.bisect)
app.command("flip")(flip.flip)
app.command("report")(report.report)
app.command("calibrate")(calibrate.calibrate)
app.add_typer(env.app, name="env")
app.add_typer(history.app, name="history")
app.add_typer(publish.app, name="publish")
app.add_typer(suite.app, name="suite")


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI job cancelled, `timeout`): unwinds like Ctrl-C, so workers are killed, but exits 143."""


#: signals received, in order: typer returns 130 for any KeyboardInterrupt (older click raises Abort), so the
#: exit code is decided from what arrived rather than from what typer makes of it
_SIGNALS: list[int] = []


def _on_signal(signum, frame):  # noqa: ANN001
    import signal

    _SIGNALS.append(signum)
    raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt


#: what a command cut by a signal tells the user to do
RESUME_HINTS = {
    "run": ": rerun with --resume",
    "bisect": ": rerun with --resume",
    "retune": ": rerun the same command, it resumes from its --out",
}


def _exit_signalled(command: str) -> None:
    import signal

    term = signal.SIGTERM in _SIGNALS
    tail = RESUME_HINTS.get(command, "")
    print(f"harness: {'terminated' if term else 'interrupted'}{tail}", file=sys.stderr)
    sys.exit(143 if term else 130)


def _click_exceptions() -> tuple[type[BaseException], ...]:
    """ClickException of every click that typer may raise: its bundled copy (typer >= 0.20) and click itself."""
    import importlib

    found = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            found.append(importlib.import_module(name).ClickException)
        except (ImportError, AttributeError):
            continue
    return tuple(found)


def _usage_line(err: BaseException) -> str:
    """One line for a click usage error: its message and the command it concerns."""
    ctx = getattr(err, "ctx", None)
    where = (getattr(ctx, "command_path", "") if ctx is not None else "") or "harness"
    msg = " ".join(err.format_message().split()) if hasattr(err, "format_message") else str(err)
    if type(err).__name__ == "NoArgsIsHelpError" or not msg:
        msg = "missing command"
    return f"{where}: {msg} (see '{where} --help')"


def main(argv: list[str] | None = None) -> None:
    """Exit codes: 0 done; 1 a gated finding (--fail-on-regression, --fail-on-error); 2 bad input or usage;
    3 a bug in harness (with its traceback); 130 interrupted (Ctrl-C); 143 terminated (SIGTERM). Every user
    error is one line on stderr, never a traceback."""
    import signal

    args = sys.argv[1:] if argv is None else argv
    command = args[0] if args else ""
    if argv is None:
        process.pipe_safe_stdout()
    _SIGNALS.clear()
    previous = {sig: signal.signal(sig, _on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        rc = app(args=args, prog_name="harness", standalone_mode=False)
    except HarnessError as err:
        print(f"harness: error: {err}", file=sys.stderr)
        sys.exit(err.exit_code)
    except typer.Exit as ex:
        sys.exit(ex.exit_code)
    except (KeyboardInterrupt, typer.Abort):
        _SIGNALS.append(signal.SIGINT)
        _exit_signalled(command)
    except _click_exceptions() as err:
        print(f"harness: error: {_usage_line(err)}", file=sys.stderr)
        sys.exit(2)
    except Exception:  # our bug, not the user's: keep the traceback, and never exit 1 ("regression found")
        import traceback

        traceback.print_exc()
        print("harness: internal error (a bug in harness: please report it with the traceback above)", file=sys.stderr)
        sys.exit(3)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if _SIGNALS:
        _exit_signalled(command)
    sys.exit(rc if isinstance(rc, int) else 0)


def entry() -> None:
    """The `harness` command (console script, `python -m harness`): :func:`main`, then the process ends as
    process.end says (a QUICK_EXIT command without the interpreter's teardown). Tests call :func:`main`, which only
    raises SystemExit."""
    try:
        main()
    except SystemExit as done:
        process.end(done, sys.argv[1] if len(sys.argv) > 1 else "")


if __name__ == "__main__":
    entry()
