"""`jitbench list` and `jitbench env`: what would be measured, and on what."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from jitbench.cli.common import app, err, handles_errors, out
from jitbench.cli.options import KeywordOpt, SuiteOpt
from jitbench.measure import environment, machine
from jitbench.render import run_table as console
from jitbench.suite.discovery import discover


@app.command("list")
@handles_errors
def list_cmd(
    names: Annotated[list[str] | None, typer.Argument(help="Workload names.")] = None,
    suite: SuiteOpt = None,
    keyword: KeywordOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List workloads with their sizes, tags and descriptions."""
    registry = discover(suite or ())
    for e in registry.errors:
        err.print(f"[yellow]suite error:[/] {e}")
    chosen = registry.select(names or (), keyword)
    if as_json:
        out.print_json(json.dumps([console.workload_dict(w) for w in chosen]))
    else:
        out.print(console.workloads_table(chosen))
    if registry.errors:
        raise typer.Exit(2 if not chosen else 0)


@app.command("env")
@handles_errors
def env_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show what a measurement would see: devices, versions, flags, threads (BLAS pools,
    allowed cores, XLA's thread flags) and how busy and noisy the machine is now."""
    env = {
        **environment.capture(),
        "thread_settings": environment.thread_settings(),
        "machine": machine.capture().to_dict(),
    }
    if as_json:
        out.print_json(json.dumps(env))
    else:
        out.print(console.environment_table(env))
        out.print(
            "[dim]`jitbench run` measures with --threads 1 by default (one pinned core, one "
            "BLAS thread); --threads all keeps the pools shown here.[/]"
        )
