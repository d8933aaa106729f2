"""MkDocs hook: pages whose content comes from the code, so they cannot drift from it.

A page asks for generated content with a marker line:

- `<!-- generated: cli -->`: every command's `--help`, from the typer app itself
  (`typer.main.get_command(jitbench.cli.app)`), root first, in the app's order;
- `<!-- generated: schema-changelog -->`: the results schema's version and changelog, from
  `jitbench.results.codec` (its docstring and `SCHEMA_VERSION`);
- `<!-- generated: schema -->`: `jitbench/results/schema/run.schema.json` as it ships.

The typer app vendors its own click, so mkdocs-click (which wants a `click.Command`) cannot
read it; `--help` text is what a user sees, so the reference shows exactly that.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # document this checkout, not another install

MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)
HELP_WIDTH = 100


def cli_reference() -> str:
    """Every command's help text, as `jitbench COMMAND --help` prints it at 100 columns."""
    import typer

    from jitbench.cli import app

    root = typer.main.get_command(app)
    settings = {"terminal_width": HELP_WIDTH, "max_content_width": HELP_WIDTH}
    ctx = root.make_context("jitbench", [], resilient_parsing=True, **settings)
    parts = ["## `jitbench`", "", "```text", root.get_help(ctx).rstrip(), "```", ""]
    for name in root.list_commands(ctx):  # type: ignore[attr-defined]
        command = root.get_command(ctx, name)  # type: ignore[attr-defined]
        sub = command.make_context(name, [], parent=ctx, resilient_parsing=True, **settings)
        parts += [f"## `jitbench {name}`", "", "```text", command.get_help(sub).rstrip(), "```", ""]
    return "\n".join(parts)


def schema_changelog() -> str:
    """The codec's schema version and its changelog, from the module's docstring."""
    codec = importlib.import_module("jitbench.results.codec")
    doc = codec.__doc__ or ""
    body = "Schema changelog" + doc.partition("Schema changelog")[2]
    version = getattr(codec, "SCHEMA_VERSION", None)
    lines = [f"Current version: **{version}** (`jitbench.results.codec.SCHEMA_VERSION`).", ""]
    return "\n".join([*lines, *body.splitlines()]).strip() + "\n"


def schema() -> str:
    """The JSON Schema file, pretty-printed, in a collapsible block."""
    path = ROOT / "jitbench" / "results" / "schema" / "run.schema.json"
    text = json.dumps(json.loads(path.read_text(encoding="utf-8")), indent=2)
    return f'??? note "run.schema.json"\n\n    ```json\n{_indent(text)}\n    ```\n'


def _indent(text: str) -> str:
    return "\n".join("    " + line if line else "" for line in text.splitlines())


GENERATORS = {"cli": cli_reference, "schema-changelog": schema_changelog, "schema": schema}


def on_page_markdown(markdown: str, **_: Any) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in GENERATORS:
            raise ValueError(f"unknown generated block {name!r}; known: {sorted(GENERATORS)}")
        return GENERATORS[name]()

    return MARKER.sub(replace, markdown)
