"""asv benchmark classes generated from the jitbench registry: asv adapts, never re-implements.

One class per workload, parameterised by size preset × mode. `setup` builds the inputs,
stages them, compiles and validates once per process (cached here, because asv re-runs
`setup` before every sample and in every round) through the one-case protocol
(`opening.open_case`, the steps `jitbench run` takes); `time_call` times exactly the call
`jitbench run` times (blocking on the output, under the same transfer guard), in samples of
the same calibrated number of calls, reported per call;
`track_compile_s` and `track_first_call_s` report the cold compile seconds that
`jitbench run` records (`compile.cold_aot_breakdown` / `compile.cold_first_call`), and the
`PROGRAM_TRACKS` the jit program's metrics (HLO instructions, fusions, bytes accessed,
temporary memory), so asv's history shows a program's changes over commits.
A case that cannot run (an error, a NumPy/JAX mismatch, an unknown size) raises
`NotImplementedError` in `setup`, which asv records as skipped instead of failed.
The first `setup` of a process pins it as `jitbench run --threads 1` does (`THREADS`).

It does not import asv, and importing it does not start a JAX backend (asv's fork server imports
the benchmark modules before it forks; a JAX runtime must not be forked).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import keyword
import re
import time
import types
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass, replace
from itertools import repeat
from pathlib import Path
from typing import Any, ClassVar

import jax
import numpy as np

from jitbench.config import ALL_MODES, SamplingPlan
from jitbench.errors import WorkloadError
from jitbench.measure import modes
from jitbench.measure.devices import device_label, pick_device, warm_up_process
from jitbench.measure.opening import PlannedCase, open_case
from jitbench.measure.threads import ThreadState, limited_threads
from jitbench.results import CompileInfo, Mode
from jitbench.results.analysis.estimates import compile_figure
from jitbench.suite.discovery import Registry, SuiteLoadError
from jitbench.suite.jitted import code_objects
from jitbench.suite.workload import Workload

PARAM_NAMES = ["size", "mode"]
#: asv's per-benchmark timeout in seconds: setup compiles, and L presets take a while.
TIMEOUT_S = 300.0
#: asv's `repeat` for time_call: (min, max, max seconds) samples per round.
REPEAT = (10, 50, 10.0)
#: The sampling rules `jitbench run` uses by default: warm-up and calls per sample.
PLAN = SamplingPlan()
SEED = 0
#: Cold jit compiles `track_compile_s` takes the median of (one process; asv's rounds add
#: processes). One cold compile is not a sample: on a shared machine two of them of
#: identical code differ by more than a change worth reporting (docs: validation,
#: "Figures behind the code").
COMPILE_REPEATS = 3
#: Cores and BLAS threads, as `jitbench run --threads` (its default); None keeps the
#: libraries' own thread pools.
THREADS: int | None = 1


class CaseSkipped(NotImplementedError):
    """A case that cannot be timed. asv treats NotImplementedError from setup as "skipped"."""


@dataclass(frozen=True, kw_only=True)
class PreparedCase:
    """One workload × size × mode, ready to time in this process.

    Attributes:
        call: zero-argument call that returns when the output is ready (the timed call).
        first_call_s: cold first call (trace + compile + run, caches cleared) for eager
            and jit; None for numpy.
        compile_s: cold trace + lower + XLA compile seconds for jit, the median of
            `compile_repeats_s` (`estimates.compile_figure`: the figure `jitbench run`'s
            "jit compile" shows, `ModeFigure.compile_s`); None otherwise.
        compile_repeats_s: every cold compile measured (`COMPILE_REPEATS` of them).
        compile_count: XLA compiles the cold first call triggered; None for numpy.
        calls_per_sample: calls in one timed sample, from jitbench's calibration (one
            sample lasts at least `SamplingPlan.min_sample_s`, as in `jitbench run`).
        device: device label, e.g. "cpu:0"; dtype: input dtype, "float32" unless x64 is on.
        region: what the timed calls run under, as in `jitbench run` (the transfer guard
            and the case's device as JAX's default: a call made without it hits another
            compile-cache entry and compiles again).
    """

    workload: str
    size: str
    mode: Mode
    device: str
    dtype: str
    call: Callable[[], Any]
    region: Callable[[], AbstractContextManager[object]] = nullcontext
    calls_per_sample: int = 1
    first_call_s: float | None = None
    compile_s: float | None = None
    compile_repeats_s: tuple[float, ...] = ()
    compile_count: int | None = None
    #: The jit program's metrics (`CompileInfo`: opcodes, bytes, flops, memory); None
    #: for the other modes.
    program: CompileInfo | None = None


_prepared: dict[tuple[object, ...], PreparedCase | CaseSkipped] = {}
_warm_devices: set[str] = set()
_threads = ExitStack()  # holds the process's `limited_threads` once the first setup entered it
_thread_state: list[ThreadState] = []


def limit_threads() -> ThreadState:
    """Pin this process to `THREADS` cores with as many BLAS threads, once per process (the
    same setting `jitbench run` measures with by default), and return what is in force.

    asv calls `setup` before every sample; pinning once and keeping it for the process
    (asv runs each benchmark in a process of its own) keeps every sample on the same cores
    and spends the core choice once. `clear_cache` lets go of it.
    """
    if not _thread_state:
        _thread_state.append(_threads.enter_context(limited_threads(THREADS)))
    return _thread_state[0]


def default_dtype() -> str:
    """float32, or float64 when `jax_enable_x64` is on (e.g. `JAX_ENABLE_X64=1`), as `--x64`."""
    # canonicalize_dtype maps float64 to float32 unless x64 is on; it starts no backend.
    return str(jax.dtypes.canonicalize_dtype(np.float64))


def clear_cache() -> None:
    """Forget every prepared case and release the thread limit (tests; asv runs each case
    in a fresh process anyway)."""
    _prepared.clear()
    _thread_state.clear()
    _threads.close()


def prepare_case(
    wl: Workload, size: str, mode: Mode | str, *, device: jax.Device | None = None
) -> PreparedCase:
    """Build, stage, compile and validate one case once per process; later calls hit a cache.

    The steps are those of `jitbench run` (`opening.open_case`) for one mode: process
    warm-up, seeded inputs, NumPy reference, staging, cold AOT compile (jit), cold first
    call, validation against the reference, and the single-array fast path for jit.

    Raises:
        CaseSkipped: the case cannot be timed (unknown size, an exception in any step, or
            a JAX output that does not match the NumPy reference). Failures are cached too,
            so a broken case is not rebuilt for every asv sample.
    """
    mode = Mode(mode)
    device = device or pick_device()
    dtype = wl.case_dtype(default_dtype())
    key = (id(wl), wl.name, size, mode.value, device_label(device), dtype)
    hit = _prepared.get(key)
    if isinstance(hit, PreparedCase):
        return hit
    if isinstance(hit, CaseSkipped):
        raise CaseSkipped(str(hit))
    try:
        prepared = _build(wl, size, mode, device=device, dtype=dtype)
    except CaseSkipped as exc:
        _prepared[key] = exc
        raise
    except Exception as exc:
        first_line = (str(exc).strip().splitlines() or [""])[0][:300]
        skipped = CaseSkipped(
            f"{wl.name}[{size}] {mode.value}: {type(exc).__name__}: {first_line} "
            f"(`jitbench run {wl.name} -s {size} -m {mode.value}` shows the diagnosis)"
        )
        _prepared[key] = skipped
        raise skipped from exc
    _prepared[key] = prepared
    return prepared


def _build(wl: Workload, size: str, mode: Mode, *, device: jax.Device, dtype: str) -> PreparedCase:
    label = device_label(device)
    if label not in _warm_devices:
        # Backend start-up must not be charged to the first compile of the process.
        warm_up_process([device])
        _warm_devices.add(label)
    planned = PlannedCase(wl, size, dict(wl.size_params(size)), device, dtype)
    # `jitbench run`'s own steps 1-4 for this one mode: inputs, NumPy reference, staging,
    # cold compile and first call, validation, warm-up and calibration.
    session = open_case(planned, timed=(mode,), plan=PLAN, seed=SEED, quick=False)
    try:
        ready = session.ready(mode)
    except WorkloadError as exc:
        raise CaseSkipped(
            f"{exc} (`jitbench run {wl.name} -s {size} -m {mode.value}` shows the diagnosis)"
        ) from None
    info = ready.compile
    compile_s = info.total_compile_s if info else None
    compile_repeats_s: tuple[float, ...] = ()
    if mode is Mode.JIT and info is not None and compile_s is not None:
        repeats = [compile_s]
        for _ in range(COMPILE_REPEATS - 1):
            again = session.compile_once()
            if again is not None:
                repeats.append(again)
        compile_repeats_s = tuple(repeats)
        compile_s = compile_figure(replace(info, compile_repeats_s=compile_repeats_s))
    nojit = mode is Mode.EAGER and wl.eager == "nojit"
    region = functools.partial(modes.timed_region, mode, nojit=nojit, device=device)
    if compile_repeats_s:
        with region():  # the repeats cleared the caches: warm the call again
            session.ready(mode).call()
    return PreparedCase(
        workload=wl.name,
        size=size,
        mode=mode,
        device=label,
        dtype=dtype,
        call=ready.call,
        region=region,
        calls_per_sample=ready.calls_per_sample,
        first_call_s=info.first_call_s if info else None,
        compile_s=compile_s,
        compile_repeats_s=compile_repeats_s,
        compile_count=info.compile_count if info else None,
        program=info if mode is Mode.JIT else None,
    )


class _PerCallClock:
    """asv's `timer` for time_call: perf_counter divided by the calls in one sample.

    asv times one `time_call` per sample when a class has a `setup` (it re-runs setup
    between samples), and `time_call` makes `calls_per_sample` calls, like a `jitbench run`
    sample. Dividing the clock makes asv store seconds per call. asv reads `timer` again
    after every setup; the count comes from the case that setup prepared last.
    """

    calls = 1

    def __call__(self) -> float:
        return time.perf_counter() / self.calls


class WorkloadBenchmark:
    """Base of the generated classes (lives outside `suites/`, so asv never collects it).

    asv calls every method with the parameters `(size, mode)`.
    """

    jitbench_workload: ClassVar[Workload]
    params: ClassVar[list[list[str]]]
    param_names: ClassVar[list[str]] = PARAM_NAMES
    timeout: ClassVar[float] = TIMEOUT_S
    repeat: ClassVar[tuple[int, int, float]] = REPEAT
    timer: ClassVar[_PerCallClock]

    _case: PreparedCase
    _guard: AbstractContextManager[object] | None = None

    def setup(self, size: str, mode: str) -> None:
        """Prepare the case (cached) and enter the transfer guard `jitbench run` times under.

        Threads first: the process is pinned to `THREADS` cores with as many BLAS threads
        (`limited_threads`, as `jitbench run --threads 1`) before anything is compiled, so
        XLA's pool starts on those cores and asv times what `jitbench run` times.
        """
        limit_threads()
        self._case = prepare_case(self.jitbench_workload, size, mode)
        self.timer.calls = self._case.calls_per_sample
        guard = self._case.region()
        guard.__enter__()
        self._guard = guard

    def teardown(self, size: str, mode: str) -> None:
        guard, self._guard = self._guard, None
        if guard is not None:
            guard.__exit__(None, None, None)

    def time_call(self, size: str, mode: str) -> None:
        """One sample: `calls_per_sample` calls, each blocking on its output.

        The per-call clock (`timer`) turns the sample into seconds per call.
        """
        call = self._case.call
        for _ in repeat(None, self._case.calls_per_sample):
            call()

    def peakmem_call(self, size: str, mode: str) -> None:
        """Peak RSS of the process through one call (includes the JAX runtime and inputs)."""
        self._case.call()

    def track_compile_s(self, size: str, mode: str) -> float | None:
        """Cold jit compile seconds: trace + lower + XLA compile (caches cleared), the median
        of `COMPILE_REPEATS` cold compiles in this process."""
        return self._case.compile_s

    def track_first_call_s(self, size: str, mode: str) -> float | None:
        """Cold first-call seconds (trace + compile + run, caches cleared) of eager and jit."""
        return self._case.first_call_s

    def track_hlo_instructions(self, size: str, mode: str) -> int | None:
        """Instructions of the optimised jit program (every computation, fused ones too)."""
        ops = self._case.program.hlo_opcodes if self._case.program else None
        return None if ops is None else sum(ops.values())

    def track_fusions(self, size: str, mode: str) -> int | None:
        """Fusions in the optimised jit program (each a kernel on a GPU)."""
        return self._case.program.fusion_count if self._case.program else None

    def track_bytes_accessed(self, size: str, mode: str) -> float | None:
        """XLA's bytes accessed by one call of the jit program (a loop body counted once)."""
        return self._case.program.bytes_accessed if self._case.program else None

    def track_temp_bytes(self, size: str, mode: str) -> int | None:
        """Temporary memory XLA's memory analysis gives the jit program."""
        memory = self._case.program.memory if self._case.program else None
        return None if memory is None else memory.get("temp_bytes")


#: The program metrics asv tracks per jit case, over commits: benchmark name → its unit.
PROGRAM_TRACKS = {
    "track_hlo_instructions": "instructions",
    "track_fusions": "fusions",
    "track_bytes_accessed": "bytes",
    "track_temp_bytes": "bytes",
}


_TRACK_UNIT = "seconds"


def _own_copy(fn: Callable[..., Any], **attrs: Any) -> Callable[..., Any]:
    """A new function object with the same code, so asv attributes can differ per class."""
    assert isinstance(fn, types.FunctionType)
    copy = types.FunctionType(
        fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__
    )
    copy.__doc__, copy.__qualname__ = fn.__doc__, fn.__qualname__
    copy.__dict__.update(attrs)
    return copy


def class_name(workload_name: str) -> str:
    """The asv class name of a workload: its name as an identifier (`-b selu` selects it)."""
    ident = re.sub(r"\W", "_", workload_name)
    if ident[:1].isdigit() or ident.startswith("_") or keyword.iskeyword(ident):
        ident = f"wl_{ident}"
    return ident


def workload_version(wl: Workload) -> str:
    """asv's `version` of a workload's benchmarks: a digest of what decides what they time
    (the workload's functions and input function as source, its presets, static arguments
    and tolerances) and of the benchmark code itself. asv hashes a benchmark's own source by
    default, and every generated class shares `WorkloadBenchmark`'s, so without this an
    edited workload would continue the old history as if nothing had changed."""
    reached = _reached((wl.numpy_fn, wl.jax_fn, wl.inputs))
    parts = [_source(f) for f in reached]
    parts += _module_values(reached)
    parts += [
        repr(sorted((k, sorted(v.items())) for k, v in wl.sizes.items())),
        repr(wl.static_argnames),
        repr((wl.rtol, wl.atol)),
        _source(WorkloadBenchmark),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def _unwrapped(obj: Any) -> Any:
    """The function under `functools.partial` (as `@workload` binds `xp`) and under
    `jax.jit` or any other wrapper that keeps it as `__wrapped__`."""
    while True:
        if isinstance(obj, functools.partial):
            obj = obj.func
            continue
        try:
            inner = inspect.unwrap(obj)
        except ValueError:  # a cycle of __wrapped__
            return obj
        if inner is obj:
            return obj
        obj = inner


def _names_used(fn: types.FunctionType) -> set[str]:
    """Global names `fn`'s code reads, nested functions and comprehensions included."""
    return {name for code in code_objects(fn.__code__) for name in code.co_names}


def _reached(roots: Sequence[Any]) -> list[Any]:
    """`roots` and the functions of their own module that they use, and those use, in a
    stable order: a loop body or helper the docs tell users to keep at module level
    decides what the workload times as much as the decorated function does."""
    found: list[Any] = []
    todo = [_unwrapped(r) for r in roots]
    while todo:
        fn = todo.pop(0)
        if fn in found:
            continue
        found.append(fn)
        if not isinstance(fn, types.FunctionType):
            continue
        for name in sorted(_names_used(fn)):
            value = _unwrapped(fn.__globals__.get(name))
            if (
                isinstance(value, types.FunctionType)
                and value.__module__ == fn.__module__
                and value not in found
            ):
                todo.append(value)
    return found


#: Module-level values whose repr stands for them in a workload's version: plain data.
_PLAIN = (bool, int, float, complex, str, bytes, tuple, frozenset)


def _module_values(reached: Sequence[Any]) -> list[str]:
    """'NAME=repr' of the plain module-level constants (`DIFFUSION = 0.25`) that the
    workload's functions and the helpers they reach (`_reached`) read."""
    out = []
    for fn in reached:
        if not isinstance(fn, types.FunctionType):
            continue
        for name in sorted(_names_used(fn)):
            if name in fn.__globals__ and isinstance(value := fn.__globals__[name], _PLAIN):
                out.append(f"{name}={value!r}")
    return sorted(set(out))


def _source(obj: Any) -> str:
    """Source text of a function (through `functools.partial` and `jax.jit`)."""
    obj = _unwrapped(obj)
    try:
        return inspect.getsource(obj)
    except (OSError, TypeError):  # no source (a builtin, a C function): its name says it
        return (
            f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', type(obj).__name__)}"
        )


def benchmark_class(
    wl: Workload,
    *,
    name: str | None = None,
    module: str | None = None,
    sizes: Sequence[str] | None = None,
    modes_: Sequence[Mode] = ALL_MODES,
) -> type[WorkloadBenchmark]:
    """The asv benchmark class of one workload.

    Benchmarks and their parameters:
        time_call: size × mode (seconds per call).
        track_compile_s: size × jit (cold compile seconds).
        track_hlo_instructions, track_fusions, track_bytes_accessed, track_temp_bytes:
            size × jit (the program's metrics, `PROGRAM_TRACKS`: a program change shows
            as a step in asv's graphs over commits).
        track_first_call_s: size × (eager, jit) (cold first-call seconds).
        peakmem_call: the largest preset × mode (process peak RSS, bytes).
    """
    size_list = list(sizes) if sizes is not None else list(wl.sizes)
    mode_values = [Mode(m).value for m in modes_]
    jax_modes = [m for m in mode_values if m != Mode.NUMPY.value]
    attrs: dict[str, Any] = {
        "jitbench_workload": wl,
        "params": [size_list, mode_values],
        "param_names": list(PARAM_NAMES),
        "timer": _PerCallClock(),
        "version": workload_version(wl),
        "__doc__": wl.description or f"jitbench workload {wl.name!r}.",
    }
    jit_tracks = {"track_compile_s": _TRACK_UNIT, **PROGRAM_TRACKS}
    for track, unit in jit_tracks.items():
        attrs[track] = (
            _own_copy(
                getattr(WorkloadBenchmark, track),
                params=[size_list, [Mode.JIT.value]],
                param_names=list(PARAM_NAMES),
                unit=unit,
            )
            if Mode.JIT.value in mode_values
            else None
        )
    if jax_modes:
        attrs["track_first_call_s"] = _own_copy(
            WorkloadBenchmark.track_first_call_s,
            params=[size_list, jax_modes],
            param_names=list(PARAM_NAMES),
            unit=_TRACK_UNIT,
        )
    else:
        attrs["track_first_call_s"] = None
    attrs["peakmem_call"] = _own_copy(
        WorkloadBenchmark.peakmem_call,
        params=[size_list[-1:], mode_values],
        param_names=list(PARAM_NAMES),
    )
    cls_name = name or class_name(wl.name)
    cls = type(cls_name, (WorkloadBenchmark,), attrs)
    if module is not None:
        cls.__module__ = module
    return cls


def benchmark_classes(
    registry: Registry | Mapping[str, Workload], *, module: str | None = None
) -> dict[str, type[WorkloadBenchmark]]:
    """One asv class per workload, keyed by class name (unique even when names clash).

    Args:
        registry: a `jitbench.discover(...)` result or a name -> Workload mapping.
        module: the `__module__` to give the classes (the asv module that exposes them).
    """
    workloads = registry.workloads if isinstance(registry, Registry) else registry
    out: dict[str, type[Any]] = {}
    for wl in workloads.values():
        name = _free_name(class_name(wl.name), out)
        out[name] = benchmark_class(wl, name=name, module=module)
    for error in registry.errors if isinstance(registry, Registry) else ():
        name = _free_name("suite_error_" + class_name(Path(error.path).stem), out)
        out[name] = suite_error_class(error, name=name, module=module)
    return out


def _free_name(base: str, taken: Mapping[str, object]) -> str:
    """`base`, or `base_2`, `base_3`, … : the first that `taken` lacks."""
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


def suite_error_class(error: SuiteLoadError, *, name: str, module: str | None) -> type[Any]:
    """An asv benchmark that fails with `error`: a suite file that does not import must not
    just drop its workloads from asv's results, where their history would stop without a
    word. asv reports the benchmark as failed, with the file, line and cause."""

    def setup(self: Any) -> None:
        raise RuntimeError(f"suite file failed to import: {error}")

    def time_suite_imports(self: Any) -> None:
        """Never timed: `setup` fails."""

    return type(
        name,
        (),
        {
            "setup": setup,
            "time_suite_imports": time_suite_imports,
            "__module__": module or __name__,
        },
    )
