"""What a run reports while it goes: progress events, and the interrupt that carries the
partial run. The library never prints; a caller renders these (the CLI's progress bar)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from jitbench.results import Case, Measurement, Run


@dataclass(frozen=True)
class SuiteSkipped:
    """A suite file failed to import; its workloads are left out and the others run.
    `error` says where and why ("suites/x.py:3: SyntaxError: …")."""

    error: str


@dataclass(frozen=True)
class WorkloadsLeftOut:
    """Workloads selected for the run that define none of the sizes it measures
    (`--sizes`), so the run leaves them out: `(name, the sizes it defines)` each."""

    workloads: tuple[tuple[str, tuple[str, ...]], ...]
    sizes: tuple[str, ...]


@dataclass(frozen=True)
class WorkerProgress:
    """The `--processes` worker now measuring has finished `done` of its `total` cases (the
    progress estimate learns the worker's own pace from it)."""

    done: int
    total: int


@dataclass(frozen=True)
class KernelsLeftOut:
    """What a scheme suite (`npbench:PATH`) leaves out, and why: `(name, why)` each, such
    as ("covariance2", "no JAX version: …/covariance2_jax.py is missing"). Said once, before
    the run; they are not failures (a kernel that failed to load is a SuiteSkipped)."""

    suite: str
    kernels: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class FloatWidthChosen:
    """The run left --x64 unset and follows its suites' own float width (`dtype`):
    `suites` declare it (`Workload.float_width`: an NPBench clone, float64), for `declared`
    of the run's `total` workloads. Said once, before the run starts."""

    dtype: str
    suites: tuple[str, ...]
    declared: int
    total: int


@dataclass(frozen=True)
class RunStarted:
    """The run's plan, for progress and its time estimate: `total_cases` cases (this
    process), `done_cases` of them already in the file when resuming, and `redone_cases`
    more that the file holds only some sampling rounds of, measured again; each case
    samples for `budget_s` seconds (all modes, all rounds), in `rounds` rounds spread over
    the run; the run is measured `processes` times (`--processes`). `sizes` are the size
    presets of the cases left to measure, in order (what the time estimate learns by),
    `timeout_s` is `--timeout` (each mode's limit), and `beside` says the second process
    measures at the same time as this one (`runner.overlap`)."""

    run_id: str
    total_cases: int
    done_cases: int = 0
    budget_s: float = 0.0
    rounds: int = 1
    processes: int = 1
    redone_cases: int = 0
    sizes: tuple[str, ...] = ()
    timeout_s: float | None = None
    beside: bool = False


@dataclass(frozen=True)
class CaseStarted:
    case: Case
    index: int
    total: int


@dataclass(frozen=True)
class CaseProgress:
    """Cases `index` … `index + count - 1` (one workload × size × dtype, on `count`
    devices) are at `step` ("inputs", "jit compile", "sampling", …); while sampling,
    `fraction` is the share of the step's budget spent (else None). Sent between samples,
    never from inside a timed region; `round` is the sampling round (1 for the first)."""

    case: Case
    index: int
    count: int
    total: int
    step: str
    fraction: float | None = None
    round: int = 1


@dataclass(frozen=True)
class CaseFinished:
    case: Case
    index: int
    total: int
    measurements: tuple[Measurement, ...]


@dataclass(frozen=True)
class CasePooled:
    """Another process of a `--processes` run has measured the case (`index` of `total`
    in the run's order): `measurements` are the shares so far pooled, as the run's table
    shows them once every process's are in (more processes' than the run's where extra
    processes measured it again)."""

    case: Case
    index: int
    total: int
    measurements: tuple[Measurement, ...]


@dataclass(frozen=True)
class RoundStarted:
    """Sampling round `index` of `total` begins over `cases` live cases (`index` >= 2:
    round 1 of each case is taken with its CaseStarted/CaseFinished)."""

    index: int
    total: int
    cases: int


@dataclass(frozen=True)
class ProcessStarted:
    """Worker process `index` of `total` (`index` >= 2) starts measuring every case again
    (`--processes`); the first process is this one, reported by the other events. An
    extra process (`index` > the run's `--processes`, `total` = `index`) measures only
    `cases` of them, those whose intervals are widest (`runner.allocation`). The second
    process of a run that overlaps them (`RunStarted.beside`) is announced when the first
    has finished: it has measured most of its cases by then."""

    index: int
    total: int
    cases: int | None = None
    together: int = 1  # processes starting at once, side by side: `index` is the last


RunEvent = (
    SuiteSkipped
    | WorkloadsLeftOut
    | KernelsLeftOut
    | FloatWidthChosen
    | WorkerProgress
    | RunStarted
    | CaseStarted
    | CaseProgress
    | CaseFinished
    | CasePooled
    | RoundStarted
    | ProcessStarted
)


class RunInterrupted(KeyboardInterrupt):
    """The run was interrupted (Ctrl-C, or a signal turned into an interrupt).

    `partial` holds every case measured before (complete=False), so the caller can save
    it; `cause` is the original KeyboardInterrupt (or subclass, such as
    `signals.Terminated`); `saved_to` is the file the partial run was written to, when the
    run was writing one (`jitbench.run(out=...)` or `resume=`).
    """

    def __init__(self, partial: Run, cause: BaseException, saved_to: Path | None = None) -> None:
        super().__init__("run interrupted")
        self.partial = partial
        self.cause = cause
        self.saved_to = saved_to
