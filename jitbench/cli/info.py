"""`jitbench list` and `jitbench env`: what would be measured, and on what."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from jitbench.cli.common import app, err, escape, handles_errors, out, print_fitted
from jitbench.cli.options import KeywordOpt, SuiteOpt


@app.command("list", short_help="List workloads with their sizes, tags and descriptions.")
@handles_errors
def list_cmd(
    names: Annotated[
        list[str] | None, typer.Argument(metavar="NAMES", help="Workload names.")
    ] = None,
    suite: SuiteOpt = None,
    keyword: KeywordOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """List workloads with their sizes, tags and descriptions.

    Examples:

    \b
    # the default suite
      jitbench list
    # the JAX pitfalls demonstrated in suites/pitfalls.py
      jitbench list --suite suites/pitfalls.py
    # the linear-algebra workloads, as JSON
      jitbench list -k linalg --json
    """
    from jitbench.render.workloads import workload_dict, workloads_table
    from jitbench.suite.discovery import discover

    registry = discover(suite or ())
    for e in registry.errors:
        err.print(f"[yellow]suite error:[/] {escape(str(e))}")
    for _spec, left_out in registry.left_out.items():
        for name, why in left_out:
            err.print(f"[yellow]left out:[/] {escape(name)} ({escape(why)})", highlight=False)
    hint = "drop -k to list every workload" if keyword else "give --suite a file of workloads"
    chosen = registry.select_some(names or (), keyword, purpose="to list", hint=hint)
    if as_json:
        out.print_json(json.dumps([workload_dict(w) for w in chosen]))
    else:
        print_fitted(lambda _width: workloads_table(chosen))


@app.command("env", short_help="What a measurement would see: devices, versions, threads.")
@handles_errors
def env_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show what a measurement would see: devices, versions, flags, threads (BLAS pools,
    allowed cores, XLA's thread flags) and how busy and noisy the machine is now.

    Where JAX cannot start a backend (JAX_PLATFORMS naming a platform this machine lacks),
    it shows the rest, then says why in one line and exits 2, as `jitbench run` does.

    Examples:

    \b
      jitbench env
      jitbench env --json > env.json
    """
    from jitbench.errors import ConfigError
    from jitbench.measure import environment, machine
    from jitbench.measure.devices import check_xla_flags, resolve_devices
    from jitbench.render.environment import environment_table

    check_xla_flags()  # before capture starts a backend: XLA would abort on bad flags
    env = {
        **environment.capture(),
        "thread_settings": environment.thread_settings(),
        "machine": machine.capture().to_dict(),
    }
    # The check `run` makes before measuring (and its message): JAX must start a backend.
    backend_error: str | None = None
    try:
        resolve_devices(())
    except ConfigError as exc:
        backend_error = str(exc)
    if as_json:
        out.print_json(json.dumps({**env, "backend_error": backend_error}))
    else:
        print_fitted(lambda _width: environment_table(env))
        out.print(
            "[dim]`jitbench run` measures with --threads 1 by default (one pinned core, one "
            "BLAS thread); --threads all keeps the pools shown here.[/]"
        )
    if backend_error is not None:
        raise ConfigError(backend_error)
