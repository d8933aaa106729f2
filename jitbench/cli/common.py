"""What every command shares: the Typer app, the two consoles, the error boundary and
option parsing.

Each command module registers its command on `app` and imports nothing else from
`jitbench.cli` but this module, `options`, `output` and its own helpers (`revisions` for
`ab` and `bisect`, `run_options` and `progress` for `run`); `jitbench.cli` imports the
command modules. Options a command no longer takes get a one-line cause naming what to
use instead (`RETIRED_OPTIONS`).
Importing the command line imports no JAX, NumPy or plotly: each command imports what it
needs when it runs, so `--help`, `report` and `compare` start at once.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Annotated, Any, TextIO, TypeVar, cast

import typer
import typer.core
from rich.console import Console
from rich.segment import Segment
from rich.text import Text

from jitbench.errors import ConfigError, JitbenchError, short_repr, shorten_quoted
from jitbench.formatting import terminal_safe
from jitbench.runner.signals import Terminated, exit_status, stop_signals


def _usable_std_streams() -> None:
    """Make stdin, stdout and stderr safe to use, whatever the process was started with.

    - A closed descriptor 0, 1 or 2 (`jitbench run >&-`; some CI runners and daemons close
      them) is opened on /dev/null: Python leaves sys.stdout None then, and the next file
      opened would take the free descriptor, so a child process or a library writing to
      "stdout" would write into it (a run file).
    - A stream whose encoding cannot write every character (a C/POSIX locale without UTF-8
      mode) escapes what it cannot write instead of failing on "µs" or "×".
    """
    for fd, name, mode in (
        (0, "stdin", os.O_RDONLY),
        (1, "stdout", os.O_WRONLY),
        (2, "stderr", os.O_WRONLY),
    ):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, mode)
            if opened != fd:  # pragma: no cover - the lowest free descriptor is taken
                os.dup2(opened, fd)
                os.close(opened)
            if getattr(sys, name) is None:
                setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))  # noqa: SIM115
    for stream in (sys.stdout, sys.stderr):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if encoding != "utf8" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


_usable_std_streams()


class SafeConsole(Console):
    """A rich console that shows, never sends, what a terminal would act on.

    Names, labels and messages come from run files (an OSC 52 clipboard write or a screen
    clear in a workload name); every text rich renders passes `formatting.terminal_safe`
    here, at the output edge, so no command has to remember it. rich's own escape codes
    (colours, the progress bar's cursor moves) are control segments and pass as they are.
    """

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(terminal_safe(segment.text), segment.style)
            for segment in buffer
        )

    def on_broken_pipe(self) -> None:
        """The reader closed the stream (`jitbench … | head`): stop quietly with 141, as
        command-line tools do (rich's own choice, 1, would read as a regression). Only
        reached where the stream is not a `GuardedStream`."""
        _drop_stdout()
        raise SystemExit(EXIT_BROKEN_PIPE)


class GuardedStream:
    """stdout or stderr, where a write that fails (the reader went away: `2>&1 | head -1`;
    a full disk: `2>/dev/full`; an I/O error) never reaches the command: the failure is
    recorded (`stream_failures`), the stream is pointed at /dev/null, and the command goes
    on, so a run still measures, saves and writes its pages. The error boundary then
    picks the exit code (`EXIT_BROKEN_PIPE`, `EXIT_STREAM_FAILED`) and says what was lost.
    """

    def __init__(self, stream: TextIO, name: str) -> None:
        self._stream = stream
        self.name = name

    def write(self, text: str) -> int:
        if self.name not in _stream_failures:
            try:
                return self._stream.write(text)
            except OSError as exc:  # BrokenPipeError is one
                self._failed(exc)
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self.name not in _stream_failures:
            try:
                self._stream.flush()
            except OSError as exc:
                self._failed(exc)

    def _failed(self, exc: OSError) -> None:
        _stream_failures.setdefault(self.name, exc)
        # What is still buffered, and whatever writes the descriptor later (a child
        # process, Python's flush at exit), goes to /dev/null instead of failing again.
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        with contextlib.suppress(OSError, ValueError):
            self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


#: The standard streams whose writes failed, by name ("stdout", "stderr"), and why.
_stream_failures: dict[str, OSError] = {}
#: What the command kept on disk ("run saved to X"), for the message when its stdout
#: could not be written.
_kept: list[str] = []


def guard_std_streams() -> None:
    """Wrap sys.stdout and sys.stderr in `GuardedStream` (the console script does this
    before running a command; tests that invoke the app in-process keep their own)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if not isinstance(stream, GuardedStream):
            setattr(sys, name, GuardedStream(stream, name))


def kept(line: str) -> None:
    """Note a file the command wrote ("run saved to X"): said again on stderr when stdout,
    where the command said it first, could not be written."""
    _kept.append(line)


def _exit_after_streams(code: int) -> int:
    """The exit code once the command is over: a failed stdout or stderr turns success
    into 141 (a reader went away) or 74 (a write failed: full disk, I/O error), with a
    line on stderr, when it still works, saying what was lost and what was not. Any
    other code (a regression, an interrupt) says more and is kept."""
    if not _stream_failures:
        return code
    failures = dict(_stream_failures)
    stdout_failure = failures.get("stdout")
    if stdout_failure is not None and "stderr" not in failures:
        lost = "the rest of its output was lost"
        if _kept:
            lost += f", not the files: {'; '.join(_kept)}"
        if isinstance(stdout_failure, BrokenPipeError):
            if _kept:
                err.print(f"note: stdout was closed by its reader; {escape(lost)}.")
        else:
            why = stdout_failure.strerror or str(stdout_failure)
            err.print(
                f"[bold red]error:[/] cannot write to stdout ({escape(why)}); {escape(lost)}. "
                "Free space where stdout goes, or send it elsewhere."
            )
    if code != EXIT_OK:
        return code
    broken = all(isinstance(e, BrokenPipeError) for e in failures.values())
    return EXIT_BROKEN_PIPE if broken else EXIT_STREAM_FAILED


if TYPE_CHECKING:
    from rich.console import RenderableType

#: Width of piped output: wide enough that a line of text (an error, a path) is not
#: wrapped, so it stays one greppable line. Tables are fitted to $COLUMNS when it is set,
#: else printed at their natural width (`print_fitted`).
PIPED_WIDTH = 250

out = SafeConsole(highlight=False, width=None if sys.stdout.isatty() else PIPED_WIDTH)
err = SafeConsole(stderr=True, highlight=False, width=None if sys.stderr.isatty() else PIPED_WIDTH)

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_BROKEN_WORKLOAD = 3  # a case failed in every mode, NumPy included: the workload's bug
EXIT_INCONCLUSIVE = 4  # the gate cannot vouch for the new run (and was not told to accept it)
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports a process ended by SIGTERM
EXIT_HUNG_UP = 129  # 128 + SIGHUP: the terminal or session went away
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: the reader of stdout or stderr went away
EXIT_STREAM_FAILED = 74  # sysexits' EX_IOERR: stdout or stderr could not be written

_debug = False

#: The order `jitbench --help` lists the commands in: the everyday ones first.
COMMAND_ORDER = ("run", "list", "profile", "report", "history", "compare", "ab", "bisect", "env")


class _OrderedGroup(typer.core.TyperGroup):
    """Lists the commands in `COMMAND_ORDER` (others after them, as registered), and
    refuses an empty path before any command runs (`_empty_path`)."""

    def list_commands(self, ctx: Any) -> list[str]:
        names = super().list_commands(ctx)
        rank = {name: i for i, name in enumerate(COMMAND_ORDER)}
        return sorted(names, key=lambda n: rank.get(n, len(rank)))

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        at = next((i for i, a in enumerate(args) if a in self.commands), None)
        if at is not None and (moved := _retired_option(args[at], args[at + 1 :])):
            err.print(f"[bold red]error:[/] {escape(moved)}")
            raise typer.Exit(EXIT_USAGE)
        named = None if at is None else _empty_path(self.commands[args[at]], args[at + 1 :])
        if named is not None:
            err.print(
                f"[bold red]error:[/] {escape(named)} was given an empty path (''), as an "
                "unset variable gives; name the file or folder, or leave it out."
            )
            raise typer.Exit(EXIT_USAGE)
        return cast("list[str]", super().parse_args(ctx, args))


_TO_AB = (
    "is gone: measuring two revisions or Pythons now is `jitbench ab` (the same options: "
    "jitbench ab --rev BASE); compare judges two stored runs: jitbench compare BASE NEW."
)
_TO_COMPARE = (
    "is gone: the gate is `jitbench compare` after the run (e.g. jitbench run -s S --out "
    "head/ && jitbench compare BASE head/; its --allow-inconclusive too)."
)


def _to_setting(name: str) -> str:
    return f"is `--setting {name}=VALUE` now (docs/reference/settings.md says what it does)."


#: The wide table is a format of the terminal's table, as markdown and CSV are formats.
_TO_WIDE = "is `--format wide` now."

#: Options a command no longer takes, and what to type instead: one line and exit 2, not
#: click's "No such option" (docs/reference/cli.md, "Options that moved").
RETIRED_OPTIONS: dict[str, dict[str, str]] = {
    "compare": {
        **dict.fromkeys(("--rev", "--rev-new", "--python-base", "--python-new"), _TO_AB),
        "--wide": _TO_WIDE,
    },
    "ab": {"--wide": _TO_WIDE},
    "report": {"--wide": _TO_WIDE},
    "run": {
        **dict.fromkeys(
            ("--baseline", "--fail-on-regression", "--allow-inconclusive"), _TO_COMPARE
        ),
        "--precision": _to_setting("precision"),
        "--seed": _to_setting("seed"),
        "--sweep": "is `--setting sweep=true` now.",
        "--time-split": "is `--setting time_split=true` now.",
        "--retry-timeouts": "is `--setting retry_timeouts=true` now (with --timeout).",
        "--wide": _TO_WIDE,
        "--coordinator": "is the JAX_COORDINATOR_ADDRESS=HOST:PORT variable now (JAX reads it).",
        "--num-processes": "is the N of `--process-id I/N` now (e.g. --process-id 0/2).",
    },
}


def _retired_option(command: str, args: Sequence[str]) -> str | None:
    """What to use instead of the first option in `args` that `command` no longer takes
    (`RETIRED_OPTIONS`), as one line naming it; None when there is none."""
    retired = RETIRED_OPTIONS.get(command, {})
    for token in args:
        if token == "--":
            break
        name = token.partition("=")[0] if token.startswith("--") else token
        if name in retired:
            return f"jitbench {command} {name} {retired[name]}"
    return None


#: Metavars of the options that name a file, folder or program though typed as text.
_PATH_METAVARS = frozenset({"FILE", "FOLDER", "PATH", "PYTHON"})


def _names_a_path(param: Any) -> bool:
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    return "Path" in repr(annotation) or getattr(param, "metavar", None) in _PATH_METAVARS


def _empty_path(command: Any, args: Sequence[str]) -> str | None:
    """The option (or argument) of `command` that `args` give an empty path, if any:
    `Path('')` is the working folder, so `--out ''` (an unset variable in a CI script)
    would write there; `--python-base ''` would quietly take this Python."""
    options = {opt: p for p in command.params if p.param_type_name == "option" for opt in p.opts}
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    given = 0  # positional arguments so far
    tokens = iter(args)
    for token in tokens:
        if token == "--":
            break
        name, eq, value = token.partition("=")
        param = options.get(name if eq and token.startswith("--") else token)
        if param is not None:
            if getattr(param, "is_flag", False) or getattr(param, "count", False):
                continue
            if not eq:
                value = next(tokens, None)  # type: ignore[assignment]
            if value == "" and _names_a_path(param):
                return str(param.opts[0])
        elif arguments:  # the last argument may take many (`report RUNS...`)
            argument = arguments[min(given, len(arguments) - 1)]
            given += 1
            if token == "" and _names_a_path(argument):
                return str(argument.name).upper()
    return None


class PanelledCommand(typer.core.TyperCommand):
    """A command whose plain `--help` lists its options in the panels their
    `rich_help_panel` names (the rest under "Options"), as typer's rich help would."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        args: list[tuple[str, str]] = []
        panels: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                args.append(record)
            else:
                panel = getattr(param, "rich_help_panel", None) or "Options"
                panels.setdefault(panel, []).append(record)
        if args:
            with formatter.section("Arguments"):
                formatter.write_dl(args)
        others = panels.pop("Options", [])
        for name, records in [*panels.items(), ("Options", others)]:
            if records:
                with formatter.section(name):
                    formatter.write_dl(records)


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
    code; any other exception too, with a traceback only under --debug. SIGTERM and SIGHUP
    stop every command as Ctrl-C does (`stop_signals`): what it was writing is cleaned up
    (an atomic write's temp file), one line, 143 or 129, not a silent death."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with stop_signals():
                fn(*args, **kwargs)
        except typer.Exit as exc:
            raise typer.Exit(_exit_after_streams(exc.exit_code)) from None
        except typer.Abort:
            raise
        except JitbenchError as exc:
            if _debug:
                err.print_exception()
            err.print(f"[bold red]error:[/] {escape(shorten_quoted(str(exc)))}")
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt as exc:
            terminated = isinstance(exc, Terminated)
            err.print(f"[yellow]{'terminated' if terminated else 'interrupted'}[/]")
            raise typer.Exit(exit_status(exc)) from None
        except BrokenPipeError:
            # The reader closed stdout (`jitbench … | head`): stop quietly, as command-line
            # tools do; the files already written stay.
            _drop_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        except Exception as exc:
            if _debug:
                err.print_exception()
            if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
                # A path the user gave (a value pasted in the wrong place): bad input.
                named = f" {short_repr(exc.filename)}" if exc.filename else ""
                err.print(
                    f"[bold red]error:[/] a path given is too long for the filesystem"
                    f"{escape(named)}; check the command line for a value in the wrong place."
                )
                raise typer.Exit(EXIT_USAGE) from None
            err.print(
                f"[bold red]internal error:[/] {type(exc).__name__}: "
                f"{escape(shorten_quoted(str(exc))[:2000])} "
                "(rerun with --debug for the traceback, and please report it)"
            )
            raise typer.Exit(EXIT_USAGE) from None
        raise typer.Exit(_exit_after_streams(EXIT_OK))

    return wrapper  # type: ignore[return-value]


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so flushing it at exit does not fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def escape(text: str) -> str:
    from rich.markup import escape as _escape

    return _escape(text)


def split_list(values: Sequence[str] | None, option: str) -> list[str]:
    """Accept both repeated options and comma-separated values: `-s S,M -s L`.

    Raises:
        ConfigError: a value of `option` (its name, for the message) that names nothing
            (`-s ''`, as an unset variable in a CI script gives), which would otherwise
            run the default silently.
    """
    items: list[str] = []
    for v in values or ():
        named = [p.strip() for p in v.split(",") if p.strip()]
        if not named:
            raise ConfigError(
                f"{option} was given an empty value ({v!r}); name one, or leave {option} "
                "out for its default."
            )
        items.extend(named)
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
        yield SafeConsole(
            file=cast(TextIO, GuardedStream(stream, "stderr")), highlight=False, force_terminal=True
        )
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

    write_plain(plain_text(line), console)


def print_fitted(
    build: Callable[[int | None], RenderableType],
    *,
    console: Console = out,
    natural: bool = False,
) -> None:
    """Print what `build(width)` returns, fitted to `fit_width(console)`. On a terminal with
    colour; piped, as plain text without trailing spaces, at that width or (no $COLUMNS)
    at the renderable's natural width, so nothing is cut or padded.

    `natural` (`--format wide`): at its natural width (`build(None)`) whatever the terminal's or
    $COLUMNS: a table of every column squeezed into 80 or 120 columns would cut its
    figures; a terminal narrower than the table wraps its lines instead (`| less -S`)."""
    from rich.segment import Segments

    from jitbench.render.layout import natural_width, plain_text

    width = None if natural else fit_width(console)
    renderable = build(width)
    if console.is_terminal:
        if natural:  # rendered at its own width: rich's print caps a width at the terminal's
            wide = max(console.width, natural_width(renderable))
            lines = console.render(renderable, console.options.update_width(wide))
            console.print(Segments(lines), crop=False)
        else:
            console.print(renderable)
        return
    write_plain(plain_text(renderable, width), console)


def write_plain(text: str, console: Console = out) -> None:
    """Write text that rich does not render (piped tables, markdown, CSV) to the console's
    stream, with what a terminal would act on shown instead (`terminal_safe`)."""
    console.file.write(terminal_safe(text))
    console.file.flush()
