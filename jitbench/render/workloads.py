"""What `jitbench list` shows of the workloads: a rich table, and each workload's JSON form
(`--json`). Builders return rich objects; printing is the CLI's job."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.table import Table

from jitbench.suite.workload import Workload


def workloads_table(workloads: Iterable[Workload]) -> Table:
    table = Table(title="workloads", title_justify="left")
    for col in ("name", "sizes", "sweep", "tags", "description"):
        table.add_column(col, no_wrap=col in ("name",))
    for wl in workloads:
        sizes = ", ".join(
            f"{k}({', '.join(f'{pk}={pv}' for pk, pv in v.items())})" for k, v in wl.sizes.items()
        )
        table.add_row(
            wl.name,
            sizes,
            str(len(wl.sweep)) if wl.sweep else "—",
            ", ".join(wl.tags),
            wl.description,
        )
    return table


def workload_dict(wl: Workload) -> dict[str, Any]:
    return {
        "name": wl.name,
        "description": wl.description,
        "tags": list(wl.tags),
        "sizes": {k: dict(v) for k, v in wl.sizes.items()},
        "sweep": [dict(p) for p in wl.sweep],
        "static_argnames": list(wl.static_argnames),
        "static_argnums": list(wl.static_argnums),
        "outputs": list(wl.outputs),
        "dtype": wl.dtype,
        "eager": wl.eager,
        "rtol": wl.rtol,
        "atol": wl.atol,
        "norm_tol": wl.norm_tol,
        "source": wl.source,
    }
