"""The Python entry points that mirror the CLI: `run`, `load_run`, `compare`, …"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from jitbench.config import RunConfig
from jitbench.errors import SuiteError
from jitbench.results import Run
from jitbench.run.scheduler import RunEvent, run_workloads
from jitbench.suite.discovery import Registry, discover


def select_workloads(
    registry: Registry, names: Sequence[str] = (), keyword: str | None = None
) -> list:
    """Workloads to run; raises SuiteError when nothing is left to run."""
    chosen = registry.select(names, keyword)
    if not chosen:
        failed = len(registry.errors)
        broken = f" ({failed} suite file(s) failed to import)" if failed else ""
        what = f" matching -k {keyword!r}" if keyword else ""
        raise SuiteError(
            f"no workloads{what} to run{broken}; `jitbench list` shows what was found."
        )
    return chosen


def run(
    names: Sequence[str] = (),
    *,
    suites: Sequence[str | Path] = (),
    keyword: str | None = None,
    config: RunConfig | None = None,
    on_event: Callable[[RunEvent], None] | None = None,
    checkpoint: Callable[[Run], None] | None = None,
) -> Run:
    """Discover suites, select workloads and measure them; the same path as `jitbench run`.

    Raises:
        SuiteError: a missing suite path, an unknown workload, or nothing to run.
        ConfigError: unknown sizes or devices.
    """
    registry = discover(suites)
    return run_workloads(
        select_workloads(registry, names, keyword), config, on_event=on_event, checkpoint=checkpoint
    )
