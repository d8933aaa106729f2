"""What every reader shows of a run, computed once: `analyse(run)` → `RunAnalysis`.

Per case and mode a `ModeFigure` (the time with its interval, the speedup over NumPy,
which is the quotient of the shown times, each process's own figures, and whether the
figure is trusted as a headline); per case a `CaseAnalysis` (break-even from the shown
times, eager over jit, sharded scaling, a broken workload); per run the geometric means
and the processes' spread. The terminal table, CSV, markdown, the HTML pages, `compare`,
`profile`, asv and the Python API all format these objects and never recompute them.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property

from jitbench import formatting as fmt
from jitbench import stats
from jitbench.config import JAX_MODES, Mode
from jitbench.results.analysis import estimates, machine
from jitbench.results.analysis.estimates import Estimate
from jitbench.results.analysis.machine import ProcessSpread
from jitbench.results.model import Case, Measurement, Run, Status, is_cpu_device, is_host_copy

CaseKey = tuple[str, str, str, str]

#: Processes whose figures of one case lie this far apart (slowest ÷ fastest: medians of
#: one mode, `processes-disagree`, or speedups, `ModeFigure.disagree`) measured the same
#: code at clearly different speeds: the default suite's cases move by 2-5 % (sd of log)
#: from process to process on a quiet machine, so 1.5× is many times that. `softmax` M's
#: jit executables ran at 1.2 or 6 ms, and a run whose processes split so reported a
#: speedup between two speeds neither process measured.
PROCESS_SPLIT_FACTOR = 1.5
#: A speedup interval wider than ×/÷ this (±50 %) is no figure to headline: drawn faded and
#: left out of the geometric means. Busy runs' intervals are often wider than ×/÷ 1.25,
#: so a tighter bound would empty a busy run's headline rather than mark its broken
#: figures (docs: validation, "A/A coverage of the intervals").
WIDE_FACTOR = 1.5
#: The diagnostic code that marks a figure as suspect (a stall: slower than a larger
#: input of the same workload), judged by `judgement.run_diagnostics`.
SIZE_ORDER = "size-order-inverted"
#: The diagnostic code of a JAX-only workload's NumPy mode (`measure.diagnose`).
NO_NUMPY_SIDE = "no-numpy-side"


@dataclass(frozen=True, kw_only=True)
class ModeFigure:
    """What every reader shows for one case × mode.

    Attributes:
        measurement: the recorded measurement.
        time: the time per call shown, with its 95 % interval (seconds); None when
            nothing was sampled. For a JAX mode beside NumPy, NumPy's time ÷ the speedup
            (so the row's figures agree), with the interval of its own time; sharded
            mode's likewise beside jit's. A mismatched measurement keeps its own time.
        own_time: the mode's own time (the geometric mean of its processes' medians, or
            its median), which `time` agrees with to a percent or two.
        process_times: each process's median (one for a one-process run).
        shown_process_times: each process's part of `time`, whose geometric mean is
            `time`: for a mode shown beside NumPy, NumPy's process median ÷ that process's
            speedup (sharded mode's likewise beside jit's); one value, `time`, for a
            one-process run; elsewhere the process medians, moved together onto `time`
            (`_agreeing`). What `compare` tests run by run, so that its times and ratios
            are the ones the runs show.
        speedup: NumPy time / this mode's time, taken round by round (the geometric mean
            over processes of each one's median per-round ratio) with the interval a
            repeat run lands in; the quotient of the two shown `time` values by
            construction. None unless both modes are ok (and for NumPy itself).
        process_speedups: each process's own speedup (empty for one process).
        time_disagree: the processes' medians lie `PROCESS_SPLIT_FACTOR` or more apart.
        disagree: the processes' speedups lie `PROCESS_SPLIT_FACTOR` or more apart.
        wide: the speedup's interval is wider than ×/÷ `WIDE_FACTOR`.
        suspect: this mode or NumPy ran slower than a larger size (`size-order-inverted`).
    """

    measurement: Measurement
    time: Estimate | None
    own_time: Estimate | None = None
    process_times: tuple[float, ...] = ()
    shown_process_times: tuple[float, ...] = ()
    speedup: Estimate | None = None
    process_speedups: tuple[float, ...] = ()
    time_disagree: bool = False
    disagree: bool = False
    wide: bool = False
    suspect: bool = False
    #: What `speedup` is over: NumPy, or eager for jit in a case with no NumPy side (a
    #: JAX-only workload), where jit's speedup is eager's shown time ÷ jit's.
    over: Mode = Mode.NUMPY

    @property
    def mode(self) -> Mode:
        return self.measurement.mode

    @property
    def status(self) -> Status:
        return self.measurement.status

    @property
    def ok(self) -> bool:
        return self.measurement.ok

    @property
    def uncertain(self) -> bool:
        """A speedup shown but not believed enough to headline: processes that disagree,
        an interval too wide, or a suspect figure."""
        return self.disagree or self.wide or self.suspect

    @property
    def headline(self) -> bool:
        """Whether the speedup goes into geometric means and is drawn at full strength."""
        return self.speedup is not None and not self.uncertain

    @property
    def marks(self) -> str:
        """The marks its speedup carries in every table ('⚠' suspect, '≠' processes that
        disagree: `formatting.marks`); '' without a speedup."""
        if self.speedup is None:
            return ""
        marks = fmt.marks(suspect=self.suspect, disagree=self.disagree)
        return marks + (fmt.OVER_EAGER_MARK if self.over is Mode.EAGER else "")

    @property
    def compile_s(self) -> float | None:
        """The mode's cold compile figure (trace + lower + XLA compile, seconds): the
        median of every cold compile measured (`estimates.compile_figure`: the processes',
        the repeats' and asv's), the one figure every table, chart, `compare`, asv's
        `track_compile_s`, break-even and the JSON quote. None without a compile
        breakdown (NumPy, eager)."""
        return estimates.compile_figure(self.measurement.compile)

    @property
    def achieved_flops_per_s(self) -> float | None:
        """XLA's flop count of the compiled program over the shown time per call. None
        without a cost analysis or a time, for a failed mode, and for a program with
        while loops (lax.fori_loop, scan), whose body XLA counts once: the rate would be
        too low."""
        c = self.measurement.compile
        return self._per_call(c.flops if c is not None and not c.has_loops else None)

    @property
    def achieved_bytes_per_s(self) -> float | None:
        """XLA's bytes-accessed estimate over the shown time per call (None as
        `achieved_flops_per_s`)."""
        c = self.measurement.compile
        return self._per_call(c.bytes_accessed if c is not None and not c.has_loops else None)

    def _per_call(self, amount: float | None) -> float | None:
        if amount is None or self.time is None or not self.ok or not self.time.value > 0:
            return None
        return amount / self.time.value


@dataclass(frozen=True)
class Scaling:
    """Sharded mode against jit mode on one device of the same platform: `speedup` (jit
    time / sharded time, with its interval) and `efficiency`, that speedup per device."""

    device_count: int
    speedup: Estimate

    @property
    def efficiency(self) -> Estimate:
        return self.speedup.scaled(1 / self.device_count)


@dataclass(frozen=True, kw_only=True)
class CaseAnalysis:
    """One case's figures: each mode's `ModeFigure` and what needs several modes."""

    case: Case
    figures: Mapping[Mode, ModeFigure]
    #: Calls after which jit's cold compile is paid back versus the baseline (NumPy, or
    #: eager with no NumPy side), from the shown times: jit's `ModeFigure.compile_s` /
    #: (baseline time − jit time); inf when jit is not faster.
    break_even_calls: float | None = None
    #: eager time / jit time (how far dispatch slows eager), from the shown times.
    eager_over_jit: Estimate | None = None
    scaling: Scaling | None = None
    #: What the speedups and break-even are over: NumPy, or eager for a JAX-only case.
    baseline: Mode = Mode.NUMPY

    @property
    def key(self) -> CaseKey:
        return self.case.key

    def get(self, mode: Mode | str) -> ModeFigure | None:
        return self.figures.get(Mode(mode))

    def speedup(self, mode: Mode | str, over: Mode | str | None = None) -> Estimate | None:
        """How many times faster `mode` is than `over` (default: the baseline), always the
        quotient of the two shown times: with its interval where the ratio is taken round
        by round (a mode's speedup over its baseline, eager over jit, sharded over jit),
        or that ratio inverted for the pair the other way round; the quotient alone for
        any other pair. None unless both times are shown."""
        mode = Mode(mode)
        base = self.baseline if over is None else Mode(over)
        a, b = self.get(base), self.get(mode)
        if a is None or b is None or a.time is None or b.time is None:
            return None
        if mode is base:
            return Estimate(1.0, 1.0, 1.0)
        paired = self._paired(base, mode)
        if paired is not None:
            return paired
        inverse = self._paired(mode, base)
        if inverse is not None:
            return _inverse(inverse)
        return Estimate(a.time.value / b.time.value, None, None)

    def _paired(self, base: Mode, mode: Mode) -> Estimate | None:
        """base time / mode time where the analysis took it round by round, else None."""
        f = self.get(mode)
        if f is not None and f.speedup is not None and f.over is base:
            return f.speedup
        if (base, mode) == (Mode.EAGER, Mode.JIT):
            return self.eager_over_jit
        if (base, mode) == (Mode.JIT, Mode.SHARDED) and self.scaling is not None:
            return self.scaling.speedup
        return None

    @property
    def arithmetic_intensity(self) -> float | None:
        """XLA's flops ÷ bytes accessed of the jit program (FLOP/byte): the roofline's x.
        None where jit has no `achieved_flops_per_s` or either count is not positive."""
        jit = self.get(Mode.JIT)
        c = jit.measurement.compile if jit is not None else None
        if jit is None or c is None or jit.achieved_flops_per_s is None:
            return None
        if not (c.flops and c.flops > 0 and c.bytes_accessed and c.bytes_accessed > 0):
            return None
        return c.flops / c.bytes_accessed

    def achieved_flops_per_s(self, mode: Mode | str) -> float | None:
        """The jit program's flop count over `mode`'s shown time: the rate each mode does
        the same work at (the roofline's y). For jit, `ModeFigure.achieved_flops_per_s`
        itself, so the chart and the tables quote one figure; None where jit has none (a
        failed or mismatched jit: its program is not the work NumPy does), without an
        `arithmetic_intensity`, or where `mode` has no shown time."""
        jit, f = self.get(Mode.JIT), self.get(mode)
        if jit is None or f is None or self.arithmetic_intensity is None:
            return None
        c = jit.measurement.compile
        return f._per_call(c.flops if c is not None else None)

    @property
    def broken(self) -> bool:
        """Every mode measured raised an error, NumPy included: the workload is broken,
        which is no finding about JAX. Timeouts are left out (they depend on --timeout as
        much as on the workload)."""
        ms = [f.measurement for f in self.figures.values() if f.status is not Status.SKIPPED]
        return bool(ms) and Mode.NUMPY in self.figures and all(m.status is Status.ERROR for m in ms)


@dataclass(frozen=True)
class GeoMeanSpeedup:
    """Geometric-mean speedup of one mode on one device over `count` cases. Left out and
    counted apart: `failed` (failed or mismatched), `suspect` (a size-order inversion)
    and `uncertain` (processes that disagree or an interval too wide). `scope` says which
    cases were averaged (presets, or each sweep's largest size)."""

    mode: Mode
    value: float | None
    count: int
    failed: int
    suspect: int = 0
    uncertain: int = 0
    scope: str = "preset sizes"


def _apart(logs: Sequence[float]) -> float:
    """How far values lie apart, on average over their pairs, as a factor less 1."""
    return math.expm1(statistics.fmean(abs(a - b) for a, b in itertools.combinations(logs, 2)))


def _split(values: Sequence[float]) -> float:
    """Largest / smallest of positive values (1.0 for fewer than two)."""
    return max(values) / min(values) if len(values) > 1 and min(values) > 0 else 1.0


#: The fewest other cases a prior for a case's interval is taken from: the median of one
#: or two cases' variances (one degree of freedom each, at two processes) is as noisy as
#: the case's own, so it adds no degrees of freedom honestly (docs: methodology,
#: intervals).
PRIOR_PEERS = 3


def _prior(peers: dict[CaseKey, list[float]], excluding: CaseKey | None) -> float | None:
    """The typical variance of the per-process log figures of `peers` other than
    `excluding`, None with fewer than `PRIOR_PEERS` of them. A case is never its own
    prior: counted in, a run of one case (`bench`) shrank its interval toward itself, as
    if two processes' spread were known with three degrees of freedom (repeat calls:
    151 of 180 checks inside; docs: validation, "bench's intervals")."""
    logs = [x for k, x in peers.items() if k != excluding]
    return estimates.typical_variance(logs) if len(logs) >= PRIOR_PEERS else None


class RunAnalysis:
    """Every figure a reader shows of `run`. Build it with `analyse(run)` (cached)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._time_peers: dict[tuple[Mode, str], dict[CaseKey, list[float]]] = {}
        self._ratio_peers: dict[tuple[Mode, Mode, str], dict[CaseKey, list[float]]] = {}
        self._host_series = _host_series(run.measurements)
        self._cases: dict[CaseKey, CaseAnalysis] = {}
        for case in run.cases():
            self._cases[case.key] = self._analyse_case(case)

    # -- access -------------------------------------------------------------------------

    @property
    def cases(self) -> list[CaseAnalysis]:
        return list(self._cases.values())

    def __iter__(self) -> Iterator[CaseAnalysis]:
        return iter(self._cases.values())

    def case(self, case: Case | CaseKey) -> CaseAnalysis | None:
        """The figures of one case (a `Case` or its key); None when the run has none."""
        return self._cases.get(case.key if isinstance(case, Case) else tuple(case))  # type: ignore[arg-type]

    def figure(self, case: Case | CaseKey, mode: Mode | str) -> ModeFigure | None:
        c = self.case(case)
        return None if c is None else c.get(mode)

    def time(self, case: Case | CaseKey, mode: Mode | str) -> Estimate | None:
        """The time per call shown for one case and mode, with its interval."""
        f = self.figure(case, mode)
        return None if f is None else f.time

    def speedup(self, case: Case | CaseKey, mode: Mode | str) -> Estimate | None:
        """NumPy time / `mode` time for one case with its interval (None unless both ok)."""
        f = self.figure(case, mode)
        return None if f is None else f.speedup

    def break_even_calls(self, case: Case | CaseKey) -> float | None:
        c = self.case(case)
        return None if c is None else c.break_even_calls

    @property
    def broken(self) -> list[CaseAnalysis]:
        """Cases that failed in every mode, NumPy included."""
        return [c for c in self._cases.values() if c.broken]

    # -- per case -----------------------------------------------------------------------

    def _analyse_case(self, case: Case) -> CaseAnalysis:
        run = self.run
        measured = {mode: m for mode in Mode if (m := run.get(case.key, mode)) is not None}
        own = {mode: self._time(m) for mode, m in measured.items()}
        numpy_m = measured.get(Mode.NUMPY)
        # NumPy's row shows its host series, the same on every device; each speedup is
        # still taken over the device's own copy, whose rounds pair with the mode's.
        host = self._host_series.get(_host_key(case)) if numpy_m is not None else None
        if host is not None and numpy_m is not None and numpy_m.ok:
            own[Mode.NUMPY] = self._time(host)
        else:
            host = numpy_m
        baseline = Mode.EAGER if _jax_only(numpy_m, measured) else Mode.NUMPY
        over = {m: baseline for m in JAX_MODES if m is not baseline}
        # Each speedup is taken round by round; the time shown for its mode is the one
        # that agrees with it beside its baseline's (`_anchored`), and sharded mode's
        # agrees with its speedup over jit beside jit's.
        speedups = {m: self._ratio(measured.get(b), measured.get(m)) for m, b in over.items()}
        shown = dict(own)
        for mode, r in speedups.items():
            shown[mode] = _anchored(own.get(mode), shown.get(over[mode]), r)
        jit_m, sharded_m = measured.get(Mode.JIT), measured.get(Mode.SHARDED)
        scaling = None
        over_jit = self._ratio(jit_m, sharded_m)
        if over_jit is not None and sharded_m is not None and sharded_m.sharding is not None:
            shown[Mode.SHARDED] = _anchored(own.get(Mode.SHARDED), shown.get(Mode.JIT), over_jit)
            scaling = Scaling(sharded_m.sharding.device_count, over_jit)
        numpy_suspect = _suspect(numpy_m)
        per_process = {
            mode: self._process_ratios(measured.get(b), measured.get(mode), speedups[mode])
            for mode, b in over.items()
        }
        parts = {mode: estimates.process_medians(m) for mode, m in measured.items()}
        for mode, b in over.items():
            parts[mode] = _process_parts(parts, b, per_process[mode], mode)
        if scaling is not None:
            over_jit_parts = self._process_ratios(jit_m, sharded_m, over_jit)
            parts[Mode.SHARDED] = _process_parts(parts, Mode.JIT, over_jit_parts, Mode.SHARDED)
        figures: dict[Mode, ModeFigure] = {}
        parts[Mode.NUMPY] = estimates.process_medians(host) if host is not None else ()
        for mode, m in measured.items():
            speedup = speedups.get(mode)
            medians = estimates.process_medians(host if mode is Mode.NUMPY and host else m)
            shown_t = shown.get(mode)
            factor = speedup.factor if speedup is not None else None
            ratios = per_process.get(mode, ())
            figures[mode] = ModeFigure(
                measurement=m,
                time=shown_t,
                own_time=own.get(mode),
                process_times=medians,
                shown_process_times=_agreeing(parts[mode], shown_t),
                speedup=speedup,
                process_speedups=ratios,
                time_disagree=_split(medians) >= PROCESS_SPLIT_FACTOR,
                disagree=_split(ratios) >= PROCESS_SPLIT_FACTOR,
                wide=factor is not None and factor > WIDE_FACTOR,
                suspect=_suspect(m) or (mode is not Mode.NUMPY and numpy_suspect),
                over=over.get(mode, Mode.NUMPY),
            )
        eager_t, jit_t = shown.get(Mode.EAGER), shown.get(Mode.JIT)
        eager_over_jit = self._ratio(measured.get(Mode.EAGER), jit_m)
        if baseline is Mode.EAGER and Mode.JIT in figures:
            eager_over_jit = figures[Mode.JIT].speedup  # jit's headline is this very ratio
        elif eager_over_jit is not None and eager_t is not None and jit_t is not None:
            # The quotient of the two times shown, with the interval of its own ratio.
            eager_over_jit = eager_over_jit.scaled(
                eager_t.value / jit_t.value / eager_over_jit.value
            )
        return CaseAnalysis(
            case=case,
            figures=figures,
            break_even_calls=_break_even(jit_m, shown.get(baseline), jit_t),
            eager_over_jit=eager_over_jit,
            scaling=scaling,
            baseline=baseline,
        )

    def _time(self, m: Measurement) -> Estimate | None:
        if not m.samples_s or m.status not in (Status.OK, Status.MISMATCH):
            return None
        return estimates.time_estimate(
            m, self.time_prior(m.mode, m.case.device, excluding=m.case.key)
        )

    def _process_ratios(
        self, base: Measurement | None, other: Measurement | None, ratio: Estimate | None
    ) -> tuple[float, ...]:
        """Each process's own base / other ratio behind `ratio`; () for one process or
        where there is no ratio."""
        if ratio is None or base is None or other is None:
            return ()
        logs = estimates.process_log_ratios(base, other, paired=self.run.paired)
        return tuple(math.exp(x) for x in logs) if logs else ()

    def _ratio(self, base: Measurement | None, other: Measurement | None) -> Estimate | None:
        """base time / other time, round by round, with its interval; None unless both
        are ok."""
        if base is None or other is None or not (base.ok and other.ok):
            return None
        return estimates.ratio_estimate(
            base,
            other,
            paired=self.run.paired,
            prior_variance=lambda: self.ratio_prior(
                base.mode, other.mode, base.case.device, excluding=base.case.key
            ),
        )

    # -- what the whole run says of its cases -------------------------------------------

    def time_prior(
        self, mode: Mode, device: str, *, excluding: CaseKey | None = None
    ) -> float | None:
        """The run's typical between-process variance of log times of `mode` on `device`,
        over its cases other than `excluding` (`_prior`)."""
        key = (mode, device)
        if key not in self._time_peers:
            self._time_peers[key] = {
                m.case.key: logs
                for m in self.run.measurements
                if m.mode is mode and m.case.device == device and m.ok
                if (logs := estimates.process_log_times(m))
            }
        return _prior(self._time_peers[key], excluding)

    def ratio_prior(
        self, base: Mode, other: Mode, device: str, *, excluding: CaseKey | None = None
    ) -> float | None:
        """The run's typical between-process variance of the log ratio `base` / `other`
        on `device`, over its cases other than `excluding` (`_prior`). Each pair of modes
        and each device has its own: eager's dispatch-bound ratios move more between
        processes than jit's, and a GPU's more than its host CPU's."""
        key = (base, other, device)
        if key not in self._ratio_peers:
            found = {}
            for case in self.run.cases():
                if case.device != device:
                    continue
                a, b = self.run.get(case.key, base), self.run.get(case.key, other)
                if a is None or b is None or not (a.ok and b.ok):
                    continue
                if logs := estimates.process_log_ratios(a, b, paired=self.run.paired):
                    found[case.key] = logs
            self._ratio_peers[key] = found
        return _prior(self._ratio_peers[key], excluding)

    def geomeans(self, cases: Iterable[Case], scope: str = "preset sizes") -> list[GeoMeanSpeedup]:
        """Geometric mean of the speedup over NumPy per JAX mode the run measured, over
        `cases` whose speedup is a headline; the failed, suspect and uncertain ones are
        counted apart, never averaged in."""
        chosen = [c for case in cases if (c := self.case(case)) is not None]
        measured = {m.mode for m in self.run.measurements}
        out = []
        for mode in JAX_MODES:
            if mode not in measured:
                continue
            values, failed, suspect, uncertain = [], 0, 0, 0
            for c in chosen:
                f = c.get(mode)
                if f is None or c.baseline is not Mode.NUMPY:  # JAX-only: no NumPy speedup
                    continue
                failed += f.measurement.failed
                if f.speedup is None:
                    continue
                if f.suspect:
                    suspect += 1
                elif f.uncertain:
                    uncertain += 1
                else:
                    values.append(f.speedup.value)
            out.append(
                GeoMeanSpeedup(
                    mode,
                    stats.geometric_mean(values),
                    len(values),
                    failed,
                    suspect,
                    uncertain,
                    scope=scope,
                )
            )
        return out

    @property
    def machine_banner(self) -> str | None:
        """One line when the machine was busy or noisy around the run, or its processes
        measured the same code far apart (`machine.run_banner`), with what `--clock cpu`
        would do where other processes kept the cores busy; None otherwise."""
        text = machine.run_banner(self.run.environment, self.process_spread)
        settings = self.run.config.settings
        wall = settings is None or settings.plan.clock == "wall"
        on_cpu = all(is_cpu_device(c.device) for c in self.run.cases())
        if text is not None and "busy" in self.machine_flags and wall and on_cpu:
            text += " · --clock cpu leaves other processes' time out"
        return text

    @property
    def machine_flags(self) -> list[str]:
        """'busy', 'noisy', 'unstable': the run's machine verdict as tags."""
        return machine.run_flags(self.run.environment, self.process_spread)

    @cached_property
    def process_spread(self) -> ProcessSpread | None:
        """How far this run's processes measured the same code apart; None for a run of
        one process or with no measurement in several."""
        counted: list[Measurement] = []
        host: dict[tuple[str, str, str], list[Measurement]] = {}
        for m in self.run.measurements:
            if not (m.ok and estimates.process_log_times(m)):
                continue
            if m.mode is Mode.NUMPY:
                seen = host.setdefault((m.case.workload, m.case.size, m.case.dtype), [])
                if any(is_host_copy(m, s) for s in seen):
                    continue
                seen.append(m)
            counted.append(m)
        if not counted:
            return None
        speedups = [
            _apart([math.log(x) for x in f.process_speedups])
            for c in self
            for mode in JAX_MODES
            if (f := c.get(mode)) is not None and f.process_speedups
        ]
        return ProcessSpread(
            processes=self.run.processes,
            measurements=len(counted),
            times=statistics.median(
                _apart(estimates.process_log_times(m) or [0.0]) for m in counted
            ),
            speedups=statistics.median(speedups) if speedups else None,
        )


def _inverse(e: Estimate) -> Estimate:
    """1 / e, its interval's ends swapped."""
    return Estimate(
        1 / e.value,
        None if e.high is None else 1 / e.high,
        None if e.low is None else 1 / e.low,
    )


def _host_key(case: Case) -> tuple[str, str, str]:
    return (case.workload, case.size, case.dtype)


def _host_series(measurements: Sequence[Measurement]) -> dict[tuple[str, str, str], Measurement]:
    """NumPy's one series of each workload × size × dtype filed under several devices:
    every distinct process part of its ok copies (a run files one series under each
    device, and an extra process that measured one device's case again adds a part to
    that copy alone), in the order first seen, with the first copy's other fields."""
    copies: dict[tuple[str, str, str], list[Measurement]] = {}
    for m in measurements:
        if m.mode is Mode.NUMPY and m.ok and m.samples_s:
            copies.setdefault(_host_key(m.case), []).append(m)
    out = {}
    for key, ms in copies.items():
        if len(ms) < 2:
            continue
        parts: list[tuple[float, ...]] = []
        for m in ms:
            parts += [part for part in m.run_parts if part not in parts]
        out[key] = replace(
            ms[0],
            samples_s=tuple(x for part in parts for x in part),
            run_sample_counts=tuple(len(part) for part in parts) if len(parts) > 1 else (),
        )
    return out


def _anchored(
    own: Estimate | None, anchor: Estimate | None, ratio: Estimate | None
) -> Estimate | None:
    """The time that agrees with `ratio` beside `anchor`'s shown time (anchor / ratio),
    with the relative interval of the mode's `own` time; `own` where there is no ratio.

    The ratio is taken round by round, the times are each mode's own medians: the two
    differ by how the rounds' disturbances fell (a percent or two on a quiet machine).
    Showing the time that agrees makes every row's figures agree by construction; the
    mode's own median stays in `ModeFigure.own_time` (the HTML's tooltip, the JSON)."""
    if own is None or anchor is None or ratio is None or not ratio.value > 0:
        return own
    return own.scaled(anchor.value / ratio.value / own.value)


def _process_parts(
    parts: Mapping[Mode, tuple[float, ...]],
    anchor: Mode,
    ratios: tuple[float, ...],
    mode: Mode,
) -> tuple[float, ...]:
    """`mode`'s process parts of its shown time, as `_anchored` shows it: each process's
    anchor part ÷ its own ratio (the geometric mean of these is the anchor's time ÷ the
    ratio); the mode's own medians where the processes do not pair up."""
    own = parts.get(mode, ())
    base = parts.get(anchor, ())
    if not ratios or len(base) != len(ratios) or len(own) != len(ratios):
        return own
    return tuple(b / r for b, r in zip(base, ratios, strict=True))


def _agreeing(parts: tuple[float, ...], time: Estimate | None) -> tuple[float, ...]:
    """`parts` scaled so that their geometric mean is the shown `time`: exact already
    where they are the anchor's parts ÷ the process ratios; otherwise (one process, or
    a mode and NumPy measured in different numbers of processes, whose speedup is then
    taken over all samples) each process's own median moved by the same factor. `time`
    alone for one process or parts that are not all positive."""
    if time is None:
        return parts
    if len(parts) < 2 or not all(p > 0 and math.isfinite(p) for p in parts):
        return (time.value,)
    factor = time.value / math.exp(statistics.fmean(math.log(p) for p in parts))
    return parts if math.isclose(factor, 1.0, rel_tol=1e-12) else tuple(p * factor for p in parts)


def _jax_only(numpy_m: Measurement | None, measured: Mapping[Mode, Measurement]) -> bool:
    """A case whose workload has no NumPy side (its NumPy mode skipped as such, or not
    measured at all) and whose eager and jit were: jit is then compared with eager."""
    if Mode.EAGER not in measured or Mode.JIT not in measured:
        return False
    if numpy_m is None:
        return True
    return numpy_m.status is Status.SKIPPED and any(
        d.code == NO_NUMPY_SIDE for d in numpy_m.diagnostics
    )


def _suspect(m: Measurement | None) -> bool:
    return m is not None and any(d.code == SIZE_ORDER for d in m.diagnostics)


def _break_even(
    jit: Measurement | None, numpy_t: Estimate | None, jit_t: Estimate | None
) -> float | None:
    if jit is None or numpy_t is None or jit_t is None or not jit.ok or jit.compile is None:
        return None
    compile_s = estimates.compile_figure(jit.compile)  # `ModeFigure.compile_s`
    if compile_s is None:
        return None
    saved = numpy_t.value - jit_t.value
    return compile_s / saved if saved > 0 else math.inf


def analyse_case(measurements: Sequence[Measurement]) -> CaseAnalysis | None:
    """The figures of one case's measurements before there is a run (the observations
    made while a case is measured), as `analyse` will give them for a one-process run."""
    if not measurements:
        return None
    run = Run(
        run_id="",
        started_at="",
        finished_at=None,
        complete=False,
        environment={},
        measurements=tuple(measurements),
    )
    return RunAnalysis(run).case(measurements[0].case)


def analyse(run: Run) -> RunAnalysis:
    """The figures of `run`, computed once per run object (runs are frozen)."""
    memo = run.derived
    found = memo.get("analysis")
    if not isinstance(found, RunAnalysis):
        found = memo["analysis"] = RunAnalysis(run)
    return found
