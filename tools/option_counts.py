"""How many options each `jitbench` command takes, counted from the real Typer app.

Every parameter click sees is counted: options (a `--x/--no-x` pair is one), arguments,
and hidden options too (they are still surface a maintainer keeps working); the global
`--debug` and click's own `--help` are not. Prints one line per command, then the total;
`--names` lists each command's options.

    python tools/option_counts.py
    python tools/option_counts.py --names run compare
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import typer.main

from jitbench.cli import app


@dataclass(frozen=True)
class CommandSurface:
    """One command's parameters: every option and argument, and which are hidden."""

    name: str
    options: tuple[str, ...]
    arguments: tuple[str, ...]
    hidden: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.options) + len(self.arguments)


def command_surfaces() -> list[CommandSurface]:
    """Each registered command's parameters, in `jitbench --help`'s order."""
    group = typer.main.get_command(app)
    context = group.make_context("jitbench", ["run"], resilient_parsing=True)
    surfaces = []
    for name in group.list_commands(context):  # type: ignore[attr-defined]
        command = group.get_command(context, name)  # type: ignore[attr-defined]
        options, arguments, hidden = [], [], []
        for param in command.params:
            if param.name == "help":
                continue
            label = max(param.opts, key=len) if param.opts else str(param.name)
            if param.param_type_name == "argument":
                arguments.append(str(param.name).upper())
                continue
            options.append(label)
            if getattr(param, "hidden", False):
                hidden.append(label)
        surfaces.append(CommandSurface(name, tuple(options), tuple(arguments), tuple(hidden)))
    return surfaces


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commands", nargs="*", help="only these commands (default: all)")
    parser.add_argument("--names", action="store_true", help="list each command's options")
    args = parser.parse_args()
    surfaces = [s for s in command_surfaces() if not args.commands or s.name in args.commands]
    for surface in surfaces:
        hidden = f", {len(surface.hidden)} hidden" if surface.hidden else ""
        print(
            f"{surface.name:<8} {surface.count:>3}  ({len(surface.options)} options, "
            f"{len(surface.arguments)} arguments{hidden})"
        )
        if args.names:
            for option in surface.options:
                print(f"           {option}{' (hidden)' if option in surface.hidden else ''}")
            for argument in surface.arguments:
                print(f"           {argument} (argument)")
    print(f"{'total':<8} {sum(s.count for s in surfaces):>3}")


if __name__ == "__main__":
    main()
