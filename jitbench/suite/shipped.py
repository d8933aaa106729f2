"""Workloads defined in a notebook or a script, shipped to worker processes by value.

A worker process finds a suite file's workloads by importing the file again; a function
defined in a notebook cell or in `__main__` has no file to import. `ship` writes such
workloads with cloudpickle (which pickles interactively defined functions by value) to a
file, and names it as the workloads' origin (`shipped:PATH`), so a worker process loads
them from there (`load`) as it would import a suite file.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from jitbench.errors import SuiteError
from jitbench.suite.workload import Workload

SCHEME = "shipped"


def ship(workloads: Sequence[Workload], folder: str | Path | None = None) -> list[Workload]:
    """The workloads with their origin set to a file that holds them, pickled by value.

    Raises:
        SuiteError: a workload cannot be pickled (what it holds, and why), or cloudpickle
            is not installed.
    """
    try:
        import cloudpickle
    except ImportError as exc:  # pragma: no cover - a dependency of jitbench
        raise SuiteError("shipping a workload to worker processes needs cloudpickle") from exc
    where = Path(folder or tempfile.mkdtemp(prefix="jitbench-shipped-"))
    path = where / "workloads.pkl"
    shipped = []
    for wl in workloads:
        shipped.append(replace(wl, origin=f"{SCHEME}:{path}"))
    try:
        data = cloudpickle.dumps([replace(wl, origin=None) for wl in shipped])
    except Exception as exc:  # whatever the workload's closure holds
        raise SuiteError(
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        ) from exc
    path.write_bytes(data)
    return shipped


def load(path: str | Path) -> list[Workload]:
    """The workloads `ship` wrote to `path`, with their origin set back to it.

    Raises:
        SuiteError: the file is missing or holds no workloads.
    """
    import pickle

    try:
        loaded = pickle.loads(Path(path).read_bytes())
    except OSError as exc:
        raise SuiteError(f"shipped workloads at {path}: {exc.strerror or exc}") from exc
    if not (isinstance(loaded, list) and all(isinstance(w, Workload) for w in loaded)):
        raise SuiteError(f"{path} holds no shipped workloads")
    return [replace(wl, origin=f"{SCHEME}:{path}") for wl in loaded]
