"""The `jitbench` command line: typer commands that parse, call the library and render.

The app lives in `cli.common`; each command module registers its command there when it is
imported below, and none of them imports this package, so there is no import cycle.
"""

from __future__ import annotations

from jitbench.cli import compare, info, profile, report, run  # noqa: F401  (register commands)
from jitbench.cli.common import app, guard_std_streams

__all__ = ["app", "main"]


def main() -> None:
    """The `jitbench` console script."""
    guard_std_streams()
    app()
