"""`bench(fn, *args)`: one function measured in NumPy, eager and jit, in one call.

The function becomes a workload (`@workload`) whose inputs are the arguments given, and
`run_workloads` measures it under the protocol every `jitbench run` follows (staging,
warm-up, cold compile apart, interleaved rounds, validation against NumPy, diagnostics,
worker processes). Functions defined in a notebook or `__main__` reach the worker
processes pickled by value (`suite.shipped`); where that fails the run stays in one
process and the result says why. The result formats the analysis layer's figures.

Example (a test runs it; a short budget in this process, for speed):

    >>> import numpy as np, jitbench
    >>> def double(xp, x):
    ...     return 2 * x
    >>> r = jitbench.bench(double, np.ones(1000, np.float32), budget=0.05, processes=1)
    >>> [m.mode.value for m in r.run.measurements]
    ['numpy', 'eager', 'jit']
    >>> jit = r.time("jit")  # seconds per call, with its 95 % interval
    >>> jit.low <= jit.value <= jit.high
    True
    >>> case = r.run.cases()[0]  # the run takes the Case, or its key, and a mode name
    >>> r.run.get(case, "jit") is r.run.get(case.key, jitbench.Mode.JIT)
    True
    >>> print(r)  # doctest: +ELLIPSIS
    double: jitbench, 1 process, 95 % intervals
      numpy ...
"""

from __future__ import annotations

import inspect
import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from jitbench.config import JAX_MODES, Mode, RunConfig, SamplingPlan, parse_mode
from jitbench.errors import ConfigError, SuiteError
from jitbench.results import Run, dump_run
from jitbench.results.analysis import CaseAnalysis, Estimate, RunAnalysis, analyse
from jitbench.suite import shipped
from jitbench.suite.workload import XP_FORM, Arguments, on_host, takes_xp, workload

#: The size label of a call measured with the arguments given (no `sizes=` or `sweep=`).
GIVEN = "given"

ArgumentFactory = Callable[[], Any]


def _given(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: Mapping[str, Any], *, xp: bool
) -> Arguments:
    """The call's arguments as given, positional ones positional and keyword ones by
    keyword (as `jax.grad`, `jax.vmap` and positional statics need them), with JAX arrays
    copied to the host leaf by leaf (the protocol stages inputs from the host; typed PRNG
    keys stay as they are).

    Raises:
        ConfigError: the arguments do not fit `fn`'s signature (where it has one).
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or a C function: nothing to check
        sig = None
    if sig is not None:
        params = list(sig.parameters.values())
        if xp and params:
            params = params[1:]
        try:
            sig.replace(parameters=params).bind(*args, **kwargs)
        except TypeError as exc:
            shown = _name_of(fn)
            raise ConfigError(f"bench(): the arguments do not fit {shown}{sig}: {exc}") from exc
    given = Arguments(*args, **kwargs)
    return on_host(given)


@dataclass(frozen=True)
class BenchResult:
    """What `bench` measured: the run, and the figures every jitbench reader shows.

    Print it (or leave it last in a notebook cell) for a summary like `%timeit`'s; the
    accessors give the figures themselves. A case is a size: `"given"` for the arguments
    given, else the label of a `sizes=` preset or a `sweep=` point.
    """

    run: Run
    name: str
    notes: tuple[str, ...] = ()
    sizes: tuple[str, ...] = field(default=(GIVEN,))

    @property
    def analysis(self) -> RunAnalysis:
        return analyse(self.run)

    def case(self, size: str | None = None) -> CaseAnalysis:
        """The figures of one size (default: the first, or the only one)."""
        label = size if size is not None else self.sizes[0]
        for c in self.analysis:
            if c.case.size == label:
                return c
        raise KeyError(f"no size {label!r}; this result has {', '.join(self.sizes)}")

    def time(self, mode: Mode | str = Mode.JIT, size: str | None = None) -> Estimate | None:
        """Seconds per call of `mode`, with its 95 % interval (None where not measured)."""
        f = self.case(size).get(mode)
        return f.time if f is not None else None

    def speedup(
        self,
        mode: Mode | str = Mode.JIT,
        *,
        over: Mode | str | None = None,
        size: str | None = None,
    ) -> Estimate | None:
        """How many times faster `mode` is than `over`, with its 95 % interval where the
        analysis took the ratio round by round (`CaseAnalysis.speedup`): the quotient of
        the two times shown. `over` defaults to the case's baseline: NumPy, or eager
        where there is no NumPy side."""
        return self.case(size).speedup(mode, over=over)

    def compile_s(self, size: str | None = None) -> float | None:
        """jit's cold compile (trace + lower + XLA compile), seconds: the median of the
        cold compiles, the figure the summary and a run's table show."""
        f = self.case(size).get(Mode.JIT)
        return f.compile_s if f is not None else None

    def break_even_calls(self, size: str | None = None) -> float | None:
        """Calls after which jit's compile is paid back versus NumPy (inf: never)."""
        return self.case(size).break_even_calls

    @property
    def diagnostics(self) -> list[tuple[str, str, str, str]]:
        """(mode, code, message, hint) of every diagnostic and error, in mode order."""
        out = []
        for m in self.run.measurements:
            if m.error is not None:
                out.append((m.mode.value, m.error.type, m.error.message, m.error.hint))
            out += [(m.mode.value, d.code, d.message, d.hint) for d in m.diagnostics]
        return out

    def to_json(self) -> str:
        """The run as the JSON text `jitbench run` writes (`report` and `compare` read it)."""
        return dump_run(self.run)

    def save(self, path: str | Path) -> Path:
        """Write the run JSON to `path` (a file, or a folder that gets `<run id>.json`)."""
        from jitbench.results import save_run

        target = Path(path)
        if target.is_dir():
            target = target / f"{self.run.run_id}.json"
        save_run(self.run, target)
        return target

    def __str__(self) -> str:
        from jitbench.render.bench_summary import summary_text

        return summary_text(self)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        from jitbench.render.bench_summary import summary_html

        return summary_html(self)

    def __rich__(self) -> Any:
        from jitbench.render.bench_summary import summary_renderable

        return summary_renderable(self)


def bench(
    fn: Callable[..., Any],
    *args: Any,
    numpy: Callable[..., Any] | None = None,
    static_argnames: str | Sequence[str] = (),
    static_argnums: int | Sequence[int] = (),
    donate_argnums: int | Sequence[int] = (),
    eager: str = "auto",
    sizes: Mapping[str, ArgumentFactory] | None = None,
    sweep: Mapping[float, ArgumentFactory] | None = None,
    modes: Sequence[Mode | str] | None = None,
    budget: float | None = None,
    processes: int | None = None,
    x64: bool = False,
    devices: Sequence[str] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    name: str | None = None,
    config: RunConfig | None = None,
    **kwargs: Any,
) -> BenchResult:
    """Measure `fn` in NumPy, JAX eager and JAX jit under jitbench's protocol.

    ``bench(f, x)`` times ``f(x)``, arguments as given (positional stays positional),
    eagerly and under ``jax.jit`` on JAX, and on NumPy where there is a NumPy side:
    `numpy=`, or `fn` itself when its first parameter is ``xp``. Without one, jit is
    checked against eager and compared with it. Outputs are checked against NumPy's; the
    run keeps every sample and diagnostic, as `jitbench run` does. The example is the
    module's (a doctest); each setting in full: docs/reference/settings.md.

    Args:
        fn: the function to measure (the JAX side, or both sides when it takes `xp`).
        *args: the call's positional arguments: arrays, pytrees, PRNG keys, Python values.
        numpy: the NumPy implementation, same arguments.
        static_argnums: static positions, as in `jax.jit` (a jitted `fn`'s own are read).
        static_argnames: static names, likewise.
        donate_argnums: donated arguments, as in `jax.jit`: fresh device copies, untimed.
        eager: "call", "nojit" or "auto" (`suite.workload.EAGER_CHOICES`).
        sizes: size label -> a function of no arguments returning the call's arguments:
            each is a case, instead of `args`.
        sweep: x value -> such a function: a size sweep, for the crossover chart.
        modes: the modes to measure (default: numpy, eager, jit; eager, jit without NumPy).
        budget: sampling seconds per case, as `jitbench run --budget`.
        processes: processes to measure in (default 2, so the intervals hold).
        x64: float64 on both sides.
        devices: devices to measure on, as `jitbench run --devices`.
        rtol: relative validation tolerance (default: dtype-aware).
        atol: absolute validation tolerance (default: dtype-aware).
        name: the workload's name in the run (default: the function's).
        config: a whole `RunConfig` instead of the settings above.
        **kwargs: the call's keyword arguments.

    Returns:
        A `BenchResult`: print it for a summary; `.time("jit")`, `.speedup("jit")`,
        `.compile_s()`, `.break_even_calls()`, `.run`, `.save(path)`.

    Raises:
        ConfigError: arguments that do not fit `fn`, or settings out of range.
        WorkloadError: what `@workload` refuses (e.g. a static name `fn` lacks).
    """
    xp = numpy is None and takes_xp(fn)
    has_numpy = numpy is not None or xp
    cases: dict[str, Callable[[], Any]]
    params: dict[str, dict[str, Any]]
    sweep_params: list[dict[str, Any]] = []
    if sizes is not None or sweep is not None:
        if args or kwargs:
            raise ConfigError("bench(): give the arguments, or sizes=/sweep= factories, not both")
        cases = dict(sizes or {})
        params = {label: {"case": label} for label in cases}
        for x, factory in (sweep or {}).items():
            if not (isinstance(x, (int, float)) and math.isfinite(x)):
                raise ConfigError(f"bench(): sweep keys are numbers (the x axis), got {x!r}")
            cases[f"n={x:g}"] = factory
            sweep_params.append({"n": x})
    else:
        given = (args, kwargs)
        cases = {GIVEN: lambda: given}
        params = {GIVEN: {}}

    def call_args(made: Any) -> Arguments:
        if isinstance(made, Arguments):
            a, k = made.args, made.kwargs
        elif isinstance(made, tuple) and len(made) == 2 and isinstance(made[1], dict):
            a, k = made
        elif isinstance(made, tuple):
            a, k = made, {}
        else:
            a, k = (made,), {}
        return _given(fn, tuple(a), k, xp=xp)

    if GIVEN in cases:
        call_args(cases[GIVEN]())  # arguments that do not fit are refused now, not measured

    def inputs(rng: Any, *, dtype: Any, case: str | None = None, n: float | None = None) -> Any:
        label = case if case is not None else (GIVEN if n is None else f"n={n:g}")
        return call_args(cases[label]())

    # A sweep measures its points, not presets; @workload still wants one preset.
    presets = params or {f"n={sweep_params[0]['n']:g}": dict(sweep_params[0])}
    wl = workload(
        fn,
        inputs=inputs,
        sizes=presets,
        sweep=sweep_params,
        numpy=numpy if numpy is not None else (XP_FORM if xp else None),
        static_argnames=static_argnames,
        static_argnums=static_argnums,
        donate_argnums=donate_argnums,
        eager=eager,
        rtol=rtol,
        atol=atol,
        name=name or _name_of(fn),
    )
    if config is None:
        chosen = tuple(parse_mode(m) for m in modes) if modes else None
        if chosen is None:
            chosen = (Mode.NUMPY, *JAX_MODES) if has_numpy else JAX_MODES
        settings: dict[str, Any] = {
            "modes": chosen,
            "x64": x64,
            "sizes": tuple(presets),
            "sweep": bool(sweep_params),
        }
        if devices is not None:
            settings["devices"] = tuple(devices)
        if processes is not None:
            settings["processes"] = processes
        if budget is not None:
            settings["plan"] = SamplingPlan(budget_s=budget)
        config = RunConfig(**settings)
    notes: list[str] = []
    from jitbench.runner.scheduler import run_workloads

    # The pickled workload the worker processes load lives as long as the run, no longer.
    with tempfile.TemporaryDirectory(prefix="jitbench-shipped-") as folder:
        if config.processes > 1:
            try:
                [wl] = shipped.ship([wl], folder)
            except SuiteError as exc:
                notes.append(
                    f"measured in one process: {wl.name} could not be shipped to worker "
                    f"processes ({exc}), so its intervals describe this process only"
                )
                config = replace(config, processes=1)
        run = run_workloads([wl], config)
    labels = tuple(dict.fromkeys(c.size for c in run.cases())) or (GIVEN,)
    return BenchResult(run=run, name=wl.name, notes=tuple(notes), sizes=labels)


def _name_of(fn: Callable[..., Any]) -> str:
    name = str(getattr(fn, "__name__", "") or "function")
    return name if name.isidentifier() else "function"


__all__ = ["GIVEN", "BenchResult", "bench"]
