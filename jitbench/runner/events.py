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
class RunStarted:
    run_id: str
    total_cases: int
    done_cases: int = 0  # cases already in the file when resuming


@dataclass(frozen=True)
class CaseStarted:
    case: Case
    index: int
    total: int


@dataclass(frozen=True)
class CaseFinished:
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
    (`--processes`); the first process is this one, reported by the other events."""

    index: int
    total: int


RunEvent = SuiteSkipped | RunStarted | CaseStarted | CaseFinished | RoundStarted | ProcessStarted


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
