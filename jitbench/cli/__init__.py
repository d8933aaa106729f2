"""The `jitbench` command line: typer commands that parse, call the library and render."""

from __future__ import annotations

from typing import Annotated

import typer

from jitbench.cli import common

app = typer.Typer(
    name="jitbench",
    help="Benchmark NumPy vs JAX eager vs JAX jit under one honest measurement protocol.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    common.set_debug(debug)


# Each command lives in its own module and registers itself on `app`.
from jitbench.cli import compare as _compare  # noqa: E402,F401
from jitbench.cli import info as _info  # noqa: E402,F401
from jitbench.cli import profile as _profile  # noqa: E402,F401
from jitbench.cli import report as _report  # noqa: E402,F401
from jitbench.cli import run as _run  # noqa: E402,F401


def main() -> None:
    app()
