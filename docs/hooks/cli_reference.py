"""MkDocs hook: the CLI reference is each command's `--help`, rendered at build time from
the typer app itself, so the page cannot drift from the code."""

from __future__ import annotations

from typing import Any

import typer.main

MARKER = "<!-- cli-reference -->"


def _help(command: Any, name: str) -> str:
    ctx = command.context_class(command, info_name=name, terminal_width=96, max_content_width=96)
    return str(command.get_help(ctx))


def on_page_markdown(markdown: str, **_kwargs: object) -> str:
    if MARKER not in markdown:
        return markdown
    from jitbench.cli import app

    group = typer.main.get_command(app)
    parts = ["## jitbench", "", "```text", _help(group, "jitbench"), "```", ""]
    ctx = group.context_class(group, info_name="jitbench")
    for name in group.list_commands(ctx):  # type: ignore[attr-defined]
        command = group.get_command(ctx, name)  # type: ignore[attr-defined]
        if command is None or command.hidden:
            continue
        parts += [f"## jitbench {name}", "", "```text", _help(command, f"jitbench {name}")]
        parts += ["```", ""]
    return markdown.replace(MARKER, "\n".join(parts))
