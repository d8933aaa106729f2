"""What `jitbench env` shows: the environment a measurement would see, as a rich table
(versions, devices, threads, the machine's state). Printing is the CLI's job."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table

from jitbench.measure.threads import core_ranges, recorded_summary
from jitbench.results.analysis import machine


def environment_table(env: Mapping[str, Any]) -> Table:
    table = Table(title="environment", title_justify="left", show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value")

    def add(key: str, value: Any) -> None:
        table.add_row(key, "—" if value in (None, "", {}, []) else str(value))

    for key in (
        "host",
        "os",
        "cpu",
        "cpu_count",
        "cpu_affinity_count",
        "python",
        "backend",
        "x64",
        "matmul_precision",
    ):
        add(key, env.get(key))
    for name, version in (env.get("versions") or {}).items():
        add(name, version)
    for d in env.get("devices") or []:
        add(f"device {d.get('label')}", d.get("kind"))
    git = env.get("git") or {}
    dirty = " (dirty)" if git.get("dirty") else ""
    add("git", f"{git['commit']}{dirty}" if git.get("commit") else None)
    for k, v in (env.get("env") or {}).items():
        add(f"${k}", v)
    add("threads", recorded_summary(env))
    settings = env.get("thread_settings")
    if isinstance(settings, Mapping):
        cores = tuple(c for c in settings.get("allowed_cores") or () if isinstance(c, int))
        add("allowed cores", f"{len(cores)} ({core_ranges(cores)})" if cores else None)
        for pool in settings.get("blas") or ():
            add(
                f"{pool.get('user_api')} pool",
                f"{pool.get('internal_api')} {pool.get('version')} "
                f"({pool.get('threading_layer')}): {pool.get('num_threads')} threads",
            )
        add("XLA thread flags", " ".join(settings.get("xla_thread_flags") or ()) or "none set")
        for k, v in (settings.get("env") or {}).items():
            if k not in (env.get("env") or {}):
                add(f"${k}", v)
    for key in ("machine", "machine_before", "machine_after"):
        state = machine.from_environment(env, key)
        if state is not None:
            add(key.replace("_", " "), f"{state.summary} ({state.verdict().label})")
    return table
