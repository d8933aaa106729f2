"""Where and how a planned case is measured: in this process, or in a child process.

Both executors answer the scheduler's one question, "measure this planned case", and
never raise an Exception for a case: an error, a timeout or a crashed child is recorded on
the case's measurements and the run goes on (KeyboardInterrupt still propagates: the run is
being stopped). The unit is one workload × size × dtype on one or more devices (the
cases of `plan.group_cases`): its NumPy side is measured once for all of them. An executor
that spreads sampling rounds over the run (`spreads_rounds`) returns a `LiveCase` with the
first round, which the scheduler asks for the next rounds and the repeated cold compiles.
In-process, the processes of one `--processes` run that measure after the first load
the programs its cold calls compiled (`compilation.sharing_compiles`, a folder per group
of cases).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn, Protocol

import jax

from jitbench.config import Mode, RunConfig
from jitbench.errors import ConfigError
from jitbench.measure import compilation, timeline
from jitbench.measure.devices import device_label
from jitbench.measure.faults import Skips, add_hint, error_info
from jitbench.measure.opening import (
    PlannedCase,
    measure_cases,
    open_configured,
    planned_case_record,
)
from jitbench.measure.session import CaseSession, StepReport
from jitbench.results import ErrorInfo, Measurement, Status
from jitbench.runner import child, overlap
from jitbench.runner.deadline import CaseTimeout, deadline
from jitbench.runner.forks import FORK_HINT, fork_error, forks_made, forks_refused
from jitbench.runner.plan import group_key
from jitbench.runner.signals import keep_stop_handlers, stop_handlers_kept
from jitbench.runner.warmup import warm_up
from jitbench.suite.discovery import suite_of


class Executor(Protocol):
    """Measures planned cases for the scheduler."""

    @property
    def spreads_rounds(self) -> bool:
        """Whether `measure` takes only the first sampling round and returns a LiveCase for
        the others (else every round is taken in `measure`, back to back)."""
        ...

    def prepare(self) -> None:
        """Ready the executor before the first case (not charged to any case)."""
        ...

    def measure(
        self, pcs: Sequence[PlannedCase], report: StepReport | None = None
    ) -> tuple[list[Measurement], LiveCase | None]:
        """The measurements of the cases `pcs` (one workload × size × dtype on one or more
        devices; one measurement per case and configured mode, case by case), and their
        LiveCase when the executor spreads rounds and the first round finished. `report`
        hears the steps as they go (as far as the executor can see them)."""
        ...


def executor_for(
    config: RunConfig,
    devices: Sequence[jax.Device],
    *,
    shared_compiles: Path | None = None,
    check_outputs: bool = True,
    skip: Skips | None = None,
    peer: overlap.Peer | None = None,
) -> Executor:
    """A child process per case with `config.isolate`, else this process (sharing cold
    calls' programs under `shared_compiles` with the run's other processes; comparing the
    outputs with NumPy's unless `check_outputs` is False, as in a `--processes` worker
    that loads the first process's programs). The modes of cases `skip` names are not
    measured (`opening.open_cases`). With `peer` (a process measuring at the same time),
    the process meets it before its first case (`overlap.Peer.meet`)."""
    if config.isolate:
        return ChildProcessExecutor(config, skip=skip)
    return InProcessExecutor(
        config,
        devices,
        shared_compiles=shared_compiles,
        check_outputs=check_outputs,
        skip=skip,
        peer=peer,
    )


def failed_case(
    pcs: Sequence[PlannedCase], modes: Sequence[Mode], status: Status, error: ErrorInfo
) -> list[Measurement]:
    """One measurement per case and mode, all with `status` and `error` (no samples)."""
    return [
        Measurement(case=planned_case_record(pc), mode=m, status=status, error=error)
        for pc in pcs
        for m in modes
    ]


def group_timeout(timeout_s: float | None, cases: int, modes: int = 1) -> float | None:
    """The time limit of `cases` measured together, as a whole: `--timeout` limits each
    mode of a case (`measure.limits`), so a case may take it once per mode and once more
    for what is no mode's (inputs, staging); past that, all its modes are stopped (a native
    call that never returns, or a child process that hangs)."""
    return None if timeout_s is None else timeout_s * cases * (modes + 1)


def _timeout_error(
    seconds: float | None, cases: int = 1, modes: int = 1, *, isolated: bool = False
) -> ErrorInfo:
    what = "case" if cases == 1 else f"{cases} cases measured together"
    whole = group_timeout(seconds, cases, modes)
    hint = "raise --timeout or choose a smaller --sizes preset"
    if not isolated:
        hint += "; a single long native call (one huge compile or BLAS call) is only cut "
        hint += "short with --isolate"
    return ErrorInfo(
        type="Timeout",
        message=f"{what} exceeded {whole:g} s as a whole (--timeout {seconds:g} s per mode, "
        f"{modes} mode(s), and as much again for inputs and staging) and "
        f"{'was' if cases == 1 else 'were'} stopped",
        hint=hint + ".",
    )


def _keeping_stop_handlers(report: StepReport | None) -> StepReport:
    """`report`, putting back the stop handlers first (`signals.keep_stop_handlers`): it
    is called between samples, so a workload that sets SIGINT to ignored loses Ctrl-C for
    one sample at most, not for the case."""

    def step(what: str, fraction: float | None) -> None:
        keep_stop_handlers()
        if report is not None:
            report(what, fraction)

    return step


class ProcessExitRefused(SystemExit):
    """A workload measured in jitbench's own process called `os._exit`, which would end the
    process at once, with its code (0 reads as success) and without the run file's last
    cases, the page or the table. Raised instead, it costs that case only."""


@contextlib.contextmanager
def exits_refused() -> Iterator[None]:
    """While the block runs, `os._exit` called from this process's main thread raises
    `ProcessExitRefused` instead of ending jitbench. A process forked meanwhile (a
    workload's own multiprocessing) or another thread still exits for real: the
    refusal is only for the process and thread that measure."""
    real_exit = os._exit
    pid, main = os.getpid(), threading.main_thread()

    def refused(status: int) -> NoReturn:
        if os.getpid() != pid or threading.current_thread() is not main:
            real_exit(status)
        exc = ProcessExitRefused(f"the workload called os._exit({status})")
        add_hint(
            exc,
            "os._exit ends the whole process at once, jitbench and the run with it; "
            "return a value instead (with --isolate it ends only that case's child).",
        )
        raise exc

    os._exit = refused
    try:
        yield
    finally:
        os._exit = real_exit


class InProcessExecutor:
    """Measures cases in this process, each step under the case's deadline
    (`config.timeout_s`, see `runner.deadline`)."""

    def __init__(
        self,
        config: RunConfig,
        devices: Sequence[jax.Device],
        *,
        shared_compiles: Path | None = None,
        check_outputs: bool = True,
        skip: Skips | None = None,
        peer: overlap.Peer | None = None,
    ) -> None:
        self.config = config
        self.devices = list(devices)
        self.shared_compiles = shared_compiles
        self.check_outputs = check_outputs
        self.skip = skip
        self.peer = peer
        #: The pids of the processes that started with this one (`peer`), once met.
        self.siblings: tuple[int, ...] = ()

    @contextlib.contextmanager
    def _sharing(self, pcs: Sequence[PlannedCase]) -> Iterator[None]:
        """The programs the cases' cold calls compile, shared with the run's other
        processes in a folder of their own (see `compilation.sharing_compiles`)."""
        if self.shared_compiles is None:
            yield
            return
        name = hashlib.sha256("|".join(group_key(pcs)).encode()).hexdigest()[:16]
        # Devices and modes get subfolders of their own (`opening._cold_first_calls`).
        with compilation.sharing_compiles(self.shared_compiles / name):
            yield

    @property
    def spreads_rounds(self) -> bool:
        return self.config.plan.rounds > 1

    def prepare(self) -> None:
        warm_up(self.devices)
        if self.peer is not None:  # the others may begin now (and this one once they can)
            self.siblings = self.peer.meet()

    def measure(
        self, pcs: Sequence[PlannedCase], report: StepReport | None = None
    ) -> tuple[list[Measurement], LiveCase | None]:
        config = self.config
        report = _keeping_stop_handlers(report)
        split_calls = timeline.SPLIT_CALLS if config.time_split else 0
        if not self.spreads_rounds:

            def whole() -> list[Measurement]:
                with self._sharing(pcs):
                    return measure_cases(
                        pcs,
                        config,
                        split_calls=split_calls,
                        report=report,
                        check_outputs=self.check_outputs,
                        skip=self.skip,
                    )

            return self.guarded(pcs, whole)[0], None
        opened: list[CaseSession] = []

        def first_round() -> list[Measurement]:
            with self._sharing(pcs):
                session = open_configured(
                    pcs, config, report=report, check_outputs=self.check_outputs, skip=self.skip
                )
            session.sample(config.plan.for_round(), report=report)
            if split_calls:  # traced once, after the first round: apart from the samples
                session.trace_splits(split_calls, report=report)
            opened.append(session)
            return session.measurements()

        result, finished = self.guarded(pcs, first_round)
        return result, LiveCase(self, pcs, opened[0]) if finished else None

    def guarded(
        self, pcs: Sequence[PlannedCase], work: Callable[[], list[Measurement]]
    ) -> tuple[list[Measurement], bool]:
        """Run one step of cases under their deadline (`--timeout` per case): (their
        result, True), or the failure recorded on every case and mode, and False."""
        config = self.config
        try:
            limit_s = group_timeout(config.timeout_s, len(pcs), len(config.modes))
            forks = forks_made()
            with (
                deadline(limit_s) as limit,
                exits_refused(),
                forks_refused(),  # a bare os.fork()'s child ends at once; failed below
                stop_handlers_kept(),  # a stop arriving during a call is never ignored
            ):
                try:
                    result = work()
                finally:
                    keep_stop_handlers()  # a workload may have set SIGINT to ignored
            if forks_made() != forks:
                exc = fork_error()
                add_hint(exc, FORK_HINT)
                return failed_case(pcs, config.modes, Status.ERROR, error_info(exc)), False
            if not limit.expired:
                return result, True
            # The alarm fired but native code swallowed the CaseTimeout.
        except CaseTimeout:
            pass
        except ConfigError:
            raise
        except (Exception, SystemExit) as exc:  # a fault the per-mode handlers did not catch
            if isinstance(exc, SystemExit) and not isinstance(exc, ProcessExitRefused):
                add_hint(exc, "the workload called sys.exit(); return a value instead.")
            return failed_case(pcs, config.modes, Status.ERROR, error_info(exc)), False
        timeout = _timeout_error(config.timeout_s, len(pcs), len(config.modes))
        return failed_case(pcs, config.modes, Status.TIMEOUT, timeout), False


@dataclass
class LiveCase:
    """Cases (one workload × size × dtype on one or more devices) whose first sampling
    round is taken in this process and whose session is still open: the scheduler asks
    it for the next rounds and the repeated cold compiles, each step guarded like the
    first."""

    executor: InProcessExecutor
    pcs: Sequence[PlannedCase]
    session: CaseSession

    @property
    def sampling(self) -> bool:
        """Whether any mode can still be sampled."""
        return bool(self.session.runnable)

    def next_round(self, report: StepReport | None = None) -> list[Measurement]:
        """Take one more sampling round; the cases' measurements so far."""

        def sample() -> list[Measurement]:
            with self.executor._sharing(self.pcs):  # its re-warm loads the kept programs
                self.session.sample(self.executor.config.plan.for_round(), report=report)
            return self.session.measurements()

        return self.executor.guarded(self.pcs, sample)[0]

    def repeat_compile(self, report: StepReport | None = None) -> list[Measurement]:
        """Measure the cold jit compile once more (after the last round: clearing JAX's
        caches then costs no re-warm); the cases' measurements so far."""

        def again() -> list[Measurement]:
            self.session.repeat_compile(report=report)
            return self.session.measurements()

        return self.executor.guarded(self.pcs, again)[0]


class ChildProcessExecutor:
    """Measures each workload × size × dtype (its cases on every device) in its own child
    process (`runner.child`): a crash, hang or out-of-memory kill costs only those cases. The
    child takes all rounds back to back."""

    spreads_rounds = False

    def __init__(self, config: RunConfig, *, skip: Skips | None = None) -> None:
        self.config = config
        self.skip = skip

    def prepare(self) -> None:
        """Nothing: each child readies itself before its case's clock starts."""

    def measure(
        self, pcs: Sequence[PlannedCase], report: StepReport | None = None
    ) -> tuple[list[Measurement], LiveCase | None]:
        config = self.config
        if report is not None:
            report("in a child process", None)
        pc = pcs[0]
        suite = suite_of(pc.workload)
        if suite is None:
            error = ErrorInfo(
                type="IsolationError",
                message=f"workload {pc.workload.name!r} is not defined in a suite file, "
                "so a child process cannot find it",
                hint="define it in a suite file (discovered with --suite), or run without "
                "--isolate.",
            )
            return failed_case(pcs, config.modes, Status.ERROR, error), None
        spec = {**child_spec(pcs, config, suite), "skip": self.skip}
        outcome = child.run_in_child(
            spec, timeout_s=group_timeout(config.timeout_s, len(pcs), len(config.modes))
        )
        if isinstance(outcome, child.ChildFailure):
            error = outcome.error
            if outcome.status is Status.TIMEOUT and error.message.startswith("case exceeded"):
                # Killed at the whole case's limit: say what that limit is made of.
                whole = _timeout_error(config.timeout_s, len(pcs), len(config.modes), isolated=True)
                error = replace(whole, message=whole.message + "; child process killed")
            return failed_case(pcs, config.modes, outcome.status, error), None
        return outcome, None


def child_spec(pcs: Sequence[PlannedCase], config: RunConfig, suite: str) -> dict[str, Any]:
    """What a child process needs to find and measure the cases `pcs` (one workload × size
    × dtype on one or more devices) again."""
    pc = pcs[0]
    return {
        "suite": suite,
        "workload": pc.workload.name,
        "size": pc.size,
        "params": dict(pc.params),
        "devices": [device_label(p.device) for p in pcs],
        "dtype": pc.dtype,
        "config": config,
    }
