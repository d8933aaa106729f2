"""How far a run has got and how long it has left, from its events.

`ProgressEstimate` reads the runner's events (`runner.events`) and answers what a progress
display asks: cases done of the planned total, the step the current case is at, and the
seconds left. The estimate starts from the plan (cases × sampling budget, plus a prior for
what each case costs besides sampling: inputs, cold compiles, warm-up) and learns that cost
from the cases that finish, size preset by size preset (a case left is priced at what the
finished cases of its size cost, first calls and timeouts included, else at the mean of
all); inside a case it follows the steps, and the share of the budget spent while
sampling. A mode that ran past `--timeout` is not measured again by the later worker
processes, so their time is the first process's less those timeouts. The clock is
injected, so the arithmetic is tested exactly. Nothing here prints.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from jitbench.measure.diagnose import MODE_CAPPED
from jitbench.results import Measurement, Mode, Status
from jitbench.runner.events import (
    CaseFinished,
    CaseProgress,
    CaseStarted,
    ProcessStarted,
    RoundStarted,
    RunEvent,
    RunStarted,
    WorkerProgress,
)

#: Seconds a case is assumed to cost besides its sampling budget before any case has
#: finished (inputs, the cold jit compile and eager first call, warm-up and calibration):
#: about what the default suite's S and M cases take (docs: validation, "Figures behind the code").
OVERHEAD_PRIOR_S = 1.0
#: What the cold jit compile repeated after the last round costs, as a share of a case's
#: first-pass overhead (the compile is most of that overhead; inputs and warm-up are not
#: repeated).
REPEAT_COMPILE_SHARE = 0.5


@dataclass
class ProgressEstimate:
    """The state of a run for a progress display; feed it every event (`update`).

    A run goes through phases: the first pass (each case opened and given its first
    round), then, with `rounds` > 1, the later rounds over the cases still sampling and
    the repeated cold compiles; with `processes` > 1, the worker processes, each taken to
    last as long as the first process did less the modes it stopped at --timeout (in a
    resumed run, whose first process measures only the cases the file lacks, as long as it
    would have taken for every case), until a worker reports its own pace
    (`WorkerProgress`).
    """

    clock: Callable[[], float] = time.monotonic
    total_cases: int = 0
    done_cases: int = 0
    budget_s: float = 0.0
    rounds: int = 1
    processes: int = 1
    process: int = 1
    beside: bool = False  # the second process measures at the same time as the first
    step: str = ""
    label: str = ""
    round: int = 1
    phase: str = "first"  # "first", "rounds", "compiles"
    _started_at: float | None = None
    _process_started_at: float | None = None
    _held_cases: int = 0  # cases a resumed run's file held: this process measures the rest
    _first_process_s: float | None = None
    _process_cases: int | None = None  # cases an extra process measures (None: all)
    _case_key: object = None
    _case_started_at: float | None = None
    _case_count: int = 1
    _fraction: float | None = None
    _overheads: list[float] = field(default_factory=list)  # seconds beyond the budget
    _by_size: dict[str, list[float]] = field(default_factory=dict)  # the same, per size
    _sizes: tuple[str, ...] = ()  # the sizes of the cases to measure, in order
    _started: int = 0  # cases of `_sizes` started
    _case_size: str = ""
    _timeout_s: float | None = None
    _timed_out_s: float = 0.0  # seconds the first process spent on modes a worker skips
    _worker_done: int = 0  # cases the current worker process has finished
    _worker_total: int = 0
    _live: int = 0  # cases sampled in the later rounds
    _visited: int = 0  # cases visited in this later round, or compiles repeated

    def update(self, event: RunEvent) -> None:
        now = self.clock()
        if isinstance(event, RunStarted):
            self.total_cases = event.total_cases
            self.done_cases = event.done_cases
            self.budget_s = event.budget_s
            self.rounds = max(1, event.rounds)
            self.processes = max(1, event.processes)
            self.beside = event.beside
            self._held_cases = event.done_cases
            self._started_at = self._process_started_at = now
            self._live = event.total_cases - event.done_cases
            self._sizes = event.sizes
            self._timeout_s = event.timeout_s
        elif isinstance(event, CaseStarted):
            if self.process == 1 and self.phase == "first":
                self._started += 1
                self._case_size = event.case.size
            if self._case_started_at is None:
                self._start_case(now, (event.case.key, 1), event.case.label, 1)
                self.step = "starting"
            else:  # another device of the same group
                self._case_count += 1
        elif isinstance(event, CaseProgress):
            again = event.step.endswith("compile again")  # jit's or sharded mode's
            if again and self.phase not in ("first", "compiles"):
                self.phase, self._visited = "compiles", 0
                self._case_key = None
            identity = (event.case.key, event.round)
            if identity != self._case_key or self._case_started_at is None:
                self._start_case(now, identity, event.case.label, event.count)
                if self.phase != "first":
                    self._visited += 1
            self.step = event.step
            self._fraction = event.fraction
            self.round = event.round
        elif isinstance(event, CaseFinished):
            self.done_cases += 1
            if self._case_started_at is not None and self._case_count > 0:
                took = (now - self._case_started_at) / self._case_count
                overhead = max(0.0, took - self._per_round)
                self._overheads.append(overhead)
                self._by_size.setdefault(event.case.size, []).append(overhead)
            if self.process == 1:
                self._timed_out_s += self._skipped_later_s(event.measurements)
            self._case_count -= 1
            if self._case_count <= 0:
                self._case_started_at = None
                self._case_key = None
                self._fraction = None
        elif isinstance(event, RoundStarted):
            self.phase = "rounds"
            self.round = event.index
            self._live = event.cases
            self._visited = 0
            self._case_started_at = None
            self._case_key = None
            self.step = f"sampling round {event.index}/{event.total}"
            self.label = ""
        elif isinstance(event, WorkerProgress):
            self._worker_done, self._worker_total = event.done, event.total
        elif isinstance(event, ProcessStarted):
            self._worker_done = 0
            if self._process_started_at is not None and self._first_process_s is None:
                self._first_process_s = self._worker_s(now - self._process_started_at)
            self.process = event.index
            self._process_cases = event.cases
            self._process_started_at = now
            self._case_started_at = None
            self.step = (
                f"worker process {event.index}/{event.total}: every case again"
                if event.cases is None
                else f"extra process{'es' if event.together > 1 else ''} "
                f"{_numbers(event.index, event.together)}: {event.cases} case(s) whose "
                "intervals are widest, again"
            )
            self.label = ""

    def _start_case(self, now: float, key: object, label: str, count: int) -> None:
        self._case_key = key
        self._case_started_at = now
        self._case_count = max(1, count)
        self._fraction = None
        self.label = label

    @property
    def _per_round(self) -> float:
        """Sampling seconds of one case in one round."""
        return self.budget_s / self.rounds

    @property
    def overhead_s(self) -> float:
        """Seconds a case costs besides its sampling budget: the mean over the cases
        finished so far, or `OVERHEAD_PRIOR_S` before any."""
        if not self._overheads:
            return OVERHEAD_PRIOR_S
        return sum(self._overheads) / len(self._overheads)

    def _size_overhead_s(self, size: str) -> float:
        """What a case of `size` costs besides its sampling budget: the mean of the finished
        cases of that size, else `overhead_s`."""
        seen = self._by_size.get(size)
        return sum(seen) / len(seen) if seen else self.overhead_s

    def _skipped_later_s(self, measurements: tuple[Measurement, ...]) -> float:
        """Seconds of a finished case that the later worker processes do not spend: its JAX
        modes that ran past --timeout (each about the timeout)."""
        if self._timeout_s is None:
            return 0.0
        stopped = sum(
            m.mode is not Mode.NUMPY
            and (m.status is Status.TIMEOUT or any(d.code == MODE_CAPPED for d in m.diagnostics))
            for m in measurements
        )
        return stopped * self._timeout_s

    def _waiting_s(self, waiting: int) -> float:
        """The first pass of the `waiting` cases after the current one, priced by size."""
        left = self._sizes[self._started :] if self._sizes else ()
        if len(left) != waiting:  # no sizes told (or a count that differs): by the mean
            return waiting * (self.overhead_s + self._per_round)
        return sum(self._size_overhead_s(size) + self._per_round for size in left)

    @property
    def _repeat_compile_s(self) -> float:
        return self.overhead_s * REPEAT_COMPILE_SHARE

    def elapsed_s(self) -> float:
        return 0.0 if self._started_at is None else max(0.0, self.clock() - self._started_at)

    def _current_case_left(self, now: float) -> float:
        if self._case_started_at is None:
            return 0.0
        count = self._case_count
        elapsed = now - self._case_started_at
        if self.phase == "compiles":
            return max(0.0, count * self._repeat_compile_s - elapsed)
        if self._fraction is not None:  # sampling: the rest of this round's budget
            return count * self._per_round * (1.0 - min(1.0, self._fraction))
        if self.phase == "first":  # the overhead not yet spent (at least a tenth), then sampling
            overhead = self._size_overhead_s(self._case_size)
            before = max(0.1 * overhead, overhead - elapsed / count)
            return count * (before + self._per_round)
        return count * self._per_round

    def _this_process_left(self, now: float) -> float:
        """Seconds left in this process's measurement (not the later worker processes)."""
        left = self._current_case_left(now)
        current = self._case_count if self._case_started_at is not None else 0
        repeats = 2 * self._live if self.rounds > 1 else 0  # the two extra cold compiles
        if self.phase == "first":
            waiting = max(0, self.total_cases - self.done_cases - current)
            left += self._waiting_s(waiting)
            left += (self.rounds - 1) * self._live * self._per_round
            return left + repeats * self._repeat_compile_s
        if self.phase == "rounds":
            left += max(0, self._live - self._visited) * self._per_round
            left += (self.rounds - self.round) * self._live * self._per_round
            return left + repeats * self._repeat_compile_s
        return left + max(0, repeats - self._visited) * self._repeat_compile_s

    def _worker_s(self, first_process_s: float) -> float:
        """Seconds a worker process takes, from the first's: the same, unless the first
        measured only the cases a resumed run lacked (a worker measures every case)."""
        if not self._held_cases:
            return max(0.0, first_process_s - self._timed_out_s)
        fresh = self.total_cases - self._held_cases
        per_case = first_process_s / fresh if fresh else self.overhead_s + self.budget_s
        return per_case * self.total_cases

    def eta_s(self) -> float | None:
        """Seconds the run has left (None before it started)."""
        if self._started_at is None:
            return None
        now = self.clock()
        if self.process == 1:
            left = self._this_process_left(now)
            this_process = (now - (self._process_started_at or now)) + left
            after = self.processes - (2 if self.beside else 1)  # processes still to come
            return left + max(0, after) * self._worker_s(this_process)
        per_process = self._first_process_s or 0.0
        into = now - (self._process_started_at or now)
        if self._worker_done and self._worker_total and self.beside and self.process == 2:
            # It started with the first: what is left of its cases, at the first's pace.
            this_left = per_process * (1 - self._worker_done / self._worker_total)
        elif self._worker_done and self._worker_total:  # the worker's own pace so far
            this_left = max(0.0, into / self._worker_done * self._worker_total - into)
        elif self._process_cases is not None:  # an extra process: its share of the cases
            share = self._process_cases / max(1, self.total_cases)
            this_left = max(0.0, per_process * share - into)
        else:
            this_left = max(0.0, per_process - into)
        if self._process_cases is not None:  # extra processes: none planned after this one
            return this_left
        return this_left + (self.processes - self.process) * per_process

    def fraction(self) -> float:
        """The share of the run's time spent, by the estimate (0 to 1)."""
        eta = self.eta_s()
        elapsed = self.elapsed_s()
        if eta is None or elapsed + eta <= 0:
            return 0.0
        return min(1.0, elapsed / (elapsed + eta))

    def description(self) -> str:
        """'selu[S] cpu:0 float32 · jit compile' (the case and its step), or the step."""
        if self.label and self.step:
            return f"{self.label} · {self.step}"
        return self.label or self.step


def _numbers(last: int, together: int) -> str:
    """'3' or, for processes side by side, '3 and 4'."""
    if together <= 1:
        return str(last)
    return " and ".join(str(i) for i in range(last - together + 1, last + 1))
