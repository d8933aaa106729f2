"""What every command shares: the Typer app, the two consoles, the error boundary and
option parsing.

Each command module registers its command on `app` and imports nothing else from
`jitbench.cli` but this module and `options`; `jitbench.cli` imports the command modules.
Importing the command line imports no JAX, NumPy or plotly: each command imports what it
needs when it runs, so `--help`, `report` and `compare` start at once.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
import typer.core
from rich.console import Console
from rich.text import Text

from jitbench.errors import JitbenchError
from jitbench.runner.signals import Terminated

if TYPE_CHECKING:
    from rich.console import RenderableType

#: Width of piped output: wide enough that a line of text (an error, a path) is not
#: wrapped, so it stays one greppable line. Tables are fitted to $COLUMNS when it is set,
#: else printed at their natural width (`print_fitted`).
PIPED_WIDTH = 250

out = Console(highlight=False, width=None if sys.stdout.isatty() else PIPED_WIDTH)
err = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else PIPED_WIDTH)

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports a process ended by SIGTERM

_debug = False

#: The order `jitbench --help` lists the commands in: the everyday ones first.
COMMAND_ORDER = ("run", "list", "profile", "report", "compare", "env")


class _OrderedGroup(typer.core.TyperGroup):
    """Lists the commands in `COMMAND_ORDER` (others after them, as registered)."""

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        rank = {name: i for i, name in enumerate(COMMAND_ORDER)}
        return sorted(names, key=lambda n: rank.get(n, len(rank)))


app = typer.Typer(
    name="jitbench",
    help="Benchmark NumPy vs JAX eager vs JAX jit under one honest measurement protocol.\n\n"
    "Start with `jitbench run --quick` (seconds), then `jitbench run` (the default suite, "
    "sizes S and M). `jitbench COMMAND --help` shows each command's options and examples.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=_OrderedGroup,
    # Plain (click) help: typer's rich help imports rich.markdown and markdown-it (~0.15 s
    # of every `--help`), and shows "<bool>" on every flag (typer 0.29).
    rich_markup_mode=None,
)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    set_debug(debug)


def set_debug(flag: bool) -> None:
    global _debug
    _debug = flag


def handles_errors(fn: F) -> F:
    """The one error boundary: a JitbenchError becomes a red one-line message and its exit
    code; any other exception too, with a traceback only under --debug."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.Abort):
            raise
        except JitbenchError as exc:
            if _debug:
                err.print_exception()
            err.print(f"[bold red]error:[/] {escape(str(exc))}")
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt as exc:
            terminated = isinstance(exc, Terminated)
            err.print(f"[yellow]{'terminated' if terminated else 'interrupted'}[/]")
            raise typer.Exit(EXIT_TERMINATED if terminated else EXIT_INTERRUPTED) from None
        except Exception as exc:
            if _debug:
                err.print_exception()
            err.print(
                f"[bold red]internal error:[/] {type(exc).__name__}: {escape(str(exc))} "
                "(rerun with --debug for the traceback, and please report it)"
            )
            raise typer.Exit(EXIT_USAGE) from None

    return wrapper  # type: ignore[return-value]


def escape(text: str) -> str:
    from rich.markup import escape as _escape

    return _escape(text)


def split_list(values: Sequence[str] | None) -> list[str]:
    """Accept both repeated options and comma-separated values: `-s S,M -s L`."""
    items: list[str] = []
    for v in values or ():
        items.extend(p.strip() for p in v.split(",") if p.strip())
    return items


def is_interactive() -> bool:
    return out.is_terminal and sys.stdout.isatty()


@contextlib.contextmanager
def progress_console() -> Iterator[Console | None]:
    """A console for live progress on stderr's terminal, or None when stderr is not one.

    It writes to a duplicate of the terminal's file descriptor: while a workload is
    measured, fds 1 and 2 are redirected to capture what it prints (`measure.capture`), and
    the progress display must not be captured with it."""
    if not err.is_terminal:
        yield None
        return
    stream = open(  # noqa: SIM115 - closed below
        os.dup(sys.stderr.fileno()), "w", buffering=1, encoding="utf-8", errors="replace"
    )
    try:
        yield Console(file=stream, highlight=False, force_terminal=True)
    finally:
        stream.close()


def fit_width(console: Console = out) -> int | None:
    """The width a table must fit: the terminal's, $COLUMNS when piped, or None (piped
    with no $COLUMNS: no limit)."""
    if console.is_terminal:
        return console.width
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


def say(text: str | Text, *, console: Console = out) -> None:
    """Print a line of prose (rich markup, or a Text): wrapped at the terminal's width;
    piped, plain and unwrapped (one greppable line), without trailing spaces."""
    line = Text.from_markup(text) if isinstance(text, str) else text
    if console.is_terminal:
        console.print(line)
        return
    from jitbench.render.layout import plain_text

    console.file.write(plain_text(line))
    console.file.flush()


def print_fitted(build: Callable[[int | None], RenderableType], *, console: Console = out) -> None:
    """Print what `build(width)` returns, fitted to `fit_width(console)`. On a terminal with
    colour; piped, as plain text without trailing spaces, at that width or (no $COLUMNS)
    at the renderable's natural width, so nothing is cut or padded."""
    width = fit_width(console)
    renderable = build(width)
    if console.is_terminal:
        console.print(renderable)
        return
    from jitbench.render.layout import plain_text

    console.file.write(plain_text(renderable, width))
    console.file.flush()
