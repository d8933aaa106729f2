"""NPBench kernels as workloads, with no per-kernel code: `--suite npbench:PATH`.

PATH is a clone of NPBench (https://github.com/spcl/npbench). Each `bench_info/<name>.json`
describes a kernel: where its files are (`relative_path`, `module_name`, `func_name`), its
presets (`parameters`: S, M, L, paper), its initialiser (`init`: `func_name`, `input_args`,
`output_args`), the kernel's arguments (`input_args`; `array_args` the arrays among them,
`output_args` those it writes its result into) and optional tolerances (`rtol`, `atol`,
`norm_error`). The implementations are `npbench/benchmarks/<relative_path>/<module>.py`
(the initialiser), `<module>_numpy.py` and `<module>_jax.py` (and a `<module>_jax_lib.py`
variant for some). A kernel becomes a workload as NPBench's own harness runs it:

- name: the bench_info file's name (`<name>.lib` for the `_jax_lib` variant); tags
  "npbench" and the kernel's kind, domain and dwarf; sizes: its presets as they are.
- inputs: the initialiser called with the preset's parameters; where it takes a float
  `datatype`, the case's dtype: float64, as NPBench runs, unless the run asks for
  `--no-x64` (float32); NumPy float scalars among the kernel's other arguments are made
  that dtype too.
- a jitted JAX kernel keeps its own `jax.jit` and static arguments: jit mode calls it as it
  is, its static arguments are passed as the Python values NPBench passes, and its other
  scalar arguments (coefficients) are staged to the device like the arrays. A kernel that
  is a plain function gets every scalar as a Python value (static under jitbench's jit).
  Eager mode runs every kernel under `jax.disable_jit()`: op by op, its lax loops as
  Python loops.
- every NumPy call gets fresh copies of the array arguments, untimed (NPBench's setup);
  when the NumPy side returns None, its output is `output_args` after the call.
- `rtol`, `atol` and `norm_error` of bench_info where given, else jitbench's dtype-aware
  defaults; an initialiser whose `datatype` defaults to an integer type pins that dtype.

Nothing is imported from NPBench's own package (its JAX framework turns x64 on globally
when imported); the kernel files are imported by path, and a kernel file that switches
x64 on has the setting put back.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from jitbench.errors import SuiteError
from jitbench.suite.jitted import is_jitted
from jitbench.suite.workload import Workload, workload

SCHEME = "npbench"
#: NPBench runs its kernels in float64 (its initialisers' default `datatype`, its JAX
#: framework's x64): a run that leaves --x64 unset does too (`Workload.float_width`).
FLOAT_WIDTH = "float64"
_MODULE_PREFIX = "jitbench_npbench_"


@dataclass(frozen=True)
class Problem:
    """A kernel of the clone that is not a workload, and why (`error`: it failed to load;
    otherwise it has no JAX version)."""

    kernel: str
    reason: str
    path: str = ""
    line: int | None = None
    error: bool = False


@dataclass
class NPBenchSuite:
    """The workloads of one NPBench clone, and the kernels that did not become one."""

    root: Path
    workloads: list[Workload] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


_loaded: dict[Path, NPBenchSuite] = {}


def spec_of(root: Path) -> str:
    """The suite spec that finds this clone again (`npbench:/absolute/path`)."""
    return f"{SCHEME}:{root.resolve()}"


def load(path: str | Path) -> NPBenchSuite:
    """The NPBench kernels of the clone at `path` that have a JAX version, as workloads
    (loaded once per process and clone).

    Raises:
        SuiteError: `path` is not an NPBench clone (no bench_info/ or npbench/benchmarks/).
    """
    root = Path(path).expanduser().resolve()
    if root in _loaded:
        return _loaded[root]
    if not (root / "bench_info").is_dir() or not (root / "npbench" / "benchmarks").is_dir():
        raise SuiteError(
            f"{str(path)!r} is not an NPBench clone (it needs bench_info/ and "
            "npbench/benchmarks/); pass the clone's top folder: --suite npbench:PATH."
        )
    suite = NPBenchSuite(root=root)
    described: set[Path] = set()
    for info_file in sorted((root / "bench_info").glob("*.json")):
        described |= _add_kernel(suite, info_file)
    # A JAX file no bench_info describes has no presets nor initialiser: said, not run.
    benchmarks = root / "npbench" / "benchmarks"
    for jax_file in sorted({*benchmarks.rglob("*_jax.py"), *benchmarks.rglob("*_jax_lib.py")}):
        if jax_file.resolve() not in described:
            where = jax_file.relative_to(root)
            suite.problems.append(
                Problem(jax_file.stem, f"{where}: no bench_info/*.json describes it", str(where))
            )
    _loaded[root] = suite
    return suite


def _add_kernel(suite: NPBenchSuite, info_file: Path) -> set[Path]:
    """Add the kernel `info_file` describes (or its problem); the JAX files it names."""
    kernel = info_file.stem
    try:
        info = json.loads(info_file.read_text(encoding="utf-8"))["benchmark"]
        folder = suite.root / "npbench" / "benchmarks" / info["relative_path"]
        module = info["module_name"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        suite.problems.append(
            Problem(
                kernel,
                f"unreadable bench_info: {type(exc).__name__}: {exc}",
                str(info_file),
                error=True,
            )
        )
        return set()
    variants = [("", folder / f"{module}_jax.py"), (".lib", folder / f"{module}_jax_lib.py")]
    if not variants[0][1].is_file():
        where = variants[0][1].relative_to(suite.root)
        suite.problems.append(
            Problem(kernel, f"no JAX version: {where} is missing", str(variants[0][1]))
        )
        return set()
    for suffix, jax_file in variants:
        if not jax_file.is_file():
            continue
        try:
            suite.workloads.append(_workload(kernel + suffix, info, folder, jax_file, suite))
        except Exception as exc:  # one broken kernel must not stop the others
            where, line = _where(exc, folder)
            suite.problems.append(
                Problem(kernel + suffix, f"{type(exc).__name__}: {exc}", where, line, error=True)
            )
    return {f.resolve() for _, f in variants if f.is_file()}


def _where(exc: BaseException, folder: Path) -> tuple[str, int | None]:
    """The last frame of `exc` inside the kernel's folder: (file, line)."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return exc.filename, exc.lineno
    found: tuple[str, int | None] = (str(folder), None)
    tb = exc.__traceback__
    while tb is not None:
        file = tb.tb_frame.f_code.co_filename
        if Path(file).parent == folder:
            found = (file, tb.tb_lineno)
        tb = tb.tb_next
    return found


def _import(file: Path) -> ModuleType:
    """Import a kernel file by path under a unique module name, keeping x64 as it was."""
    digest = hashlib.sha1(str(file).encode()).hexdigest()[:8]
    name = f"{_MODULE_PREFIX}{re.sub(r'[^0-9A-Za-z_]', '_', file.stem)}_{digest}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:  # pragma: no cover - not a .py file
        raise ImportError(f"cannot import {file}")
    import jax

    x64 = bool(jax.config.read("jax_enable_x64"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    finally:
        jax.config.update("jax_enable_x64", x64)
    return module


def _function(file: Path, name: str) -> Callable[..., Any]:
    if not file.is_file():
        raise FileNotFoundError(f"{file.name} is missing")
    fn = getattr(_import(file), name, None)
    if not callable(fn):
        raise AttributeError(f"{file.name} defines no function {name!r}")
    return fn


def _workload(
    name: str, info: Mapping[str, Any], folder: Path, jax_file: Path, suite: NPBenchSuite
) -> Workload:
    module, func = info["module_name"], info["func_name"]
    jax_fn = _function(jax_file, func)
    numpy_fn = _function(folder / f"{module}_numpy.py", func)
    init = info.get("init") or None
    init_fn = _function(folder / f"{module}.py", init["func_name"]) if init else None
    input_args: list[str] = list(info["input_args"])
    array_args = set(info.get("array_args", ()))
    unknown = [a for a in info.get("output_args", ()) if a not in input_args]
    if unknown:
        raise ValueError(f"output_args {unknown} are not among input_args {input_args}")
    pinned = _integer_datatype(init_fn)
    return workload(
        jax_fn,
        numpy=numpy_fn,
        inputs=_inputs(init, init_fn, input_args, array_args),
        sizes={str(k): dict(v) for k, v in info["parameters"].items()},
        # A jitted kernel's own static arguments are static (the decorator reads them); the
        # other scalars are staged like arrays. A plain function gets every scalar as the
        # Python value NPBench passes it, so under jit they are compile-time constants.
        static_argnums=()
        if is_jitted(jax_fn)
        else [i for i, a in enumerate(input_args) if a not in array_args],
        setup=_fresh_copies([i for i, a in enumerate(input_args) if a in array_args]),
        outputs=[input_args.index(a) for a in info.get("output_args", ())],
        rtol=info.get("rtol"),
        atol=info.get("atol"),
        norm_tol=info.get("norm_error"),
        dtype=pinned,
        eager="nojit",
        tags=("npbench", *(t for k in ("kind", "domain", "dwarf") if (t := _tag(info, k)))),
        description=str(info.get("name", "")),
        name=name,
        origin=spec_of(suite.root),
        float_width=FLOAT_WIDTH,
    )


def _tag(info: Mapping[str, Any], key: str) -> str:
    return str(info.get(key) or "").lower()


def _datatype_default(init_fn: Callable[..., Any] | None) -> Any:
    """The default of the initialiser's `datatype` parameter, or None."""
    if init_fn is None:
        return None
    param = inspect.signature(init_fn).parameters.get("datatype")
    return None if param is None or param.default is param.empty else param.default


def _integer_datatype(init_fn: Callable[..., Any] | None) -> str | None:
    """The dtype an initialiser pins by an integer `datatype` default (np.int32), or None."""
    default = _datatype_default(init_fn)
    try:
        dt = np.dtype(default) if default is not None else None
    except TypeError:
        return None
    return dt.name if dt is not None and dt.kind in "iub" else None


def _inputs(
    init: Mapping[str, Any] | None,
    init_fn: Callable[..., Any] | None,
    input_args: Sequence[str],
    array_args: set[str],
) -> Callable[..., tuple[Any, ...]]:
    """NPBench's `Benchmark.get_data` as a jitbench input function: the preset's parameters,
    plus what the initialiser makes, picked out in the kernel's argument order."""
    default = _datatype_default(init_fn)
    float_datatype = default is not None and np.dtype(default).kind == "f"

    def inputs(rng: np.random.Generator, *, dtype: np.dtype[Any], **params: Any) -> tuple[Any, ...]:
        del rng  # NPBench's initialisers are deterministic (they seed their own generators)
        data: dict[str, Any] = dict(params)
        if init is not None and init_fn is not None:
            extra = {"datatype": dtype.type} if float_datatype and dtype.kind == "f" else {}
            made = init_fn(*(data[a] for a in init["input_args"]), **extra)
            names = list(init["output_args"])
            data.update(zip(names, made if len(names) > 1 else (made,), strict=True))
        missing = [a for a in input_args if a not in data]
        if missing:
            raise KeyError(f"the preset and the initialiser give no value for {missing}")
        return tuple(data[a] if a in array_args else _scalar_as(data[a], dtype) for a in input_args)

    return inputs


def _scalar_as(value: Any, dtype: np.dtype[Any]) -> Any:
    """A NumPy float scalar in the case's float dtype (NPBench passes float64 ones)."""
    if dtype.kind == "f" and isinstance(value, np.floating) and value.dtype != dtype:
        return dtype.type(value)
    return value


def _fresh_copies(positions: Sequence[int]) -> Callable[..., tuple[Any, ...]]:
    """NPBench's per-call setup: a copy of every array argument."""
    wanted = frozenset(positions)

    def setup(*args: Any) -> tuple[Any, ...]:
        return tuple(np.copy(a) if i in wanted else a for i, a in enumerate(args))

    return setup
