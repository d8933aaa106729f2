"""Workloads defined in a notebook or a script, shipped to worker processes by value.

A worker process finds a suite file's workloads by importing the file again; a function
defined in a notebook cell or in `__main__` has no file to import. `ship` writes such
workloads with cloudpickle (which pickles interactively defined functions by value) to a
file, and names it as the workloads' origin (`shipped:PATH`), so a worker process loads
them from there (`load`) as it would import a suite file.
"""

from __future__ import annotations

import io
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from jitbench.errors import SuiteError
from jitbench.suite.jitted import jit_options
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
        buffer = io.BytesIO()
        _pickler(cloudpickle, buffer).dump([replace(wl, origin=None) for wl in shipped])
        data = buffer.getvalue()
    except Exception as exc:  # whatever the workload's closure holds
        raise SuiteError(
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        ) from exc
    path.write_bytes(data)
    return shipped


def _pickler(cloudpickle: Any, buffer: io.BytesIO) -> Any:
    """cloudpickle's pickler, with `jax.jit`-wrapped functions written as the function they
    wrap and their `jax.jit` options: JAX's jitted object does not survive pickling (the
    copy lost `trace`, `lower` and the wrapped function), so the worker jits it again,
    alike (`rejit`)."""

    class Pickler(cloudpickle.CloudPickler):  # type: ignore[misc]
        def reducer_override(self, obj: Any) -> Any:
            options = jit_options(obj)
            if options is not None:
                return rejit, (obj._fun, options)
            if (found := _module_global(obj)) is not None:
                return _from_module, found
            return super().reducer_override(obj)

    return Pickler(buffer)


def _module_global(obj: Any) -> tuple[str, str] | None:
    """(module, name) of a function that an importable module holds under another name
    than its own (`per_example = jax.vmap(jax.grad(loss))`, a `jax.checkpoint`'s lambda):
    pickled by reference, as cloudpickle pickles a module's functions it finds by name.
    By value, JAX's transforms drag their caches along, which do not pickle."""
    if not callable(obj) or isinstance(obj, type):
        return None
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str) or module == "__main__" or module.startswith("jax"):
        return None
    found = sys.modules.get(module)
    if found is None or getattr(found, getattr(obj, "__qualname__", ""), None) is obj:
        return None  # not imported, or cloudpickle finds it by its own name
    try:
        names = [name for name, value in vars(found).items() if value is obj]
    except TypeError:
        return None
    return (module, names[0]) if names else None


def _from_module(module: str, name: str) -> Any:
    import importlib

    return getattr(importlib.import_module(module), name)


def rejit(fun: Any, options: dict[str, Any]) -> Any:
    """`jax.jit(fun, **options)`: a shipped jitted function made again in the worker."""
    import jax

    return jax.jit(fun, **options)


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
