"""Where and how a planned case is measured: in this process, or in a child process.

Both executors answer the scheduler's one question, "measure this planned case", and
never raise an Exception for a case: an error, a timeout or a crashed child is recorded on
the case's measurements and the run goes on (KeyboardInterrupt still propagates: the run is
being stopped). An executor that spreads sampling rounds over the run (`spreads_rounds`)
returns a `LiveCase` with the first round, which the scheduler asks for the next rounds and
the repeated cold compiles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import jax

from jitbench.config import Mode, RunConfig
from jitbench.errors import ConfigError
from jitbench.measure.devices import device_label
from jitbench.measure.protocol import (
    CaseSession,
    PlannedCase,
    add_hint,
    error_info,
    measure_case,
    open_case,
    planned_case_record,
)
from jitbench.results import ErrorInfo, Measurement, Status, measurement_from_dict
from jitbench.runner import child
from jitbench.runner.deadline import CaseTimeout, deadline
from jitbench.runner.warmup import warm_up
from jitbench.suite.discovery import suite_file_of


class LiveCase(Protocol):
    """A case whose first sampling round is taken and whose session is still open."""

    @property
    def sampling(self) -> bool:
        """Whether any mode can still be sampled."""
        ...

    def next_round(self) -> list[Measurement]:
        """Take one more sampling round; the case's measurements so far."""
        ...

    def repeat_compile(self) -> list[Measurement]:
        """Measure the cold jit compile once more; the case's measurements so far."""
        ...


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

    def measure(self, pc: PlannedCase) -> tuple[list[Measurement], LiveCase | None]:
        """The case's measurements (one per configured mode), and its LiveCase when the
        executor spreads rounds and the case's first round finished."""
        ...


def executor_for(config: RunConfig, devices: Sequence[jax.Device]) -> Executor:
    """A child process per case with `config.isolate`, else this process."""
    if config.isolate:
        return ChildProcessExecutor(config)
    return InProcessExecutor(config, devices)


def failed_case(
    pc: PlannedCase, modes: Sequence[Mode], status: Status, error: ErrorInfo
) -> list[Measurement]:
    """One measurement per mode, all with `status` and `error` (no samples)."""
    case = planned_case_record(pc)
    return [Measurement(case=case, mode=m, status=status, error=error) for m in modes]


def _timeout_error(seconds: float | None) -> ErrorInfo:
    return ErrorInfo(
        type="Timeout",
        message=f"case exceeded --timeout {seconds:g} s and was stopped",
        hint="raise --timeout or choose a smaller --sizes preset; a single long native call "
        "(one huge compile or BLAS call) is only cut short with --isolate.",
    )


class InProcessExecutor:
    """Measures cases in this process, each step under the case's deadline
    (`config.timeout_s`, see `run.deadline`)."""

    def __init__(self, config: RunConfig, devices: Sequence[jax.Device]) -> None:
        self.config = config
        self.devices = list(devices)

    @property
    def spreads_rounds(self) -> bool:
        return self.config.plan.rounds > 1

    def prepare(self) -> None:
        warm_up(self.devices)

    def measure(self, pc: PlannedCase) -> tuple[list[Measurement], LiveCase | None]:
        config = self.config
        if not self.spreads_rounds:
            result, _ = self.guarded(pc, lambda: measure_case(pc, config))
            return result, None
        opened: list[CaseSession] = []

        def first_round() -> list[Measurement]:
            session = open_case(
                pc, timed=config.modes, plan=config.plan, seed=config.seed, quick=config.quick
            )
            session.sample(config.plan.for_round())
            opened.append(session)
            return session.measurements()

        result, finished = self.guarded(pc, first_round)
        return result, _LiveSession(self, pc, opened[0]) if finished else None

    def guarded(
        self, pc: PlannedCase, work: Callable[[], list[Measurement]]
    ) -> tuple[list[Measurement], bool]:
        """Run one step of a case under its deadline: (its result, True), or the failure
        recorded on every mode and False."""
        config = self.config
        try:
            with deadline(config.timeout_s) as limit:
                result = work()
            if not limit.expired:
                return result, True
            # The alarm fired but native code swallowed the CaseTimeout.
        except CaseTimeout:
            pass
        except ConfigError:
            raise
        except (Exception, SystemExit) as exc:  # a fault the per-mode handlers did not catch
            if isinstance(exc, SystemExit):
                add_hint(exc, "the workload called sys.exit(); return a value instead.")
            return failed_case(pc, config.modes, Status.ERROR, error_info(exc)), False
        timeout = _timeout_error(config.timeout_s)
        return failed_case(pc, config.modes, Status.TIMEOUT, timeout), False


@dataclass
class _LiveSession:
    """An in-process case between rounds; each step is guarded like the first."""

    executor: InProcessExecutor
    pc: PlannedCase
    session: CaseSession

    @property
    def sampling(self) -> bool:
        return bool(self.session.runnable)

    def next_round(self) -> list[Measurement]:
        def sample() -> list[Measurement]:
            self.session.sample(self.executor.config.plan.for_round())
            return self.session.measurements()

        return self.executor.guarded(self.pc, sample)[0]

    def repeat_compile(self) -> list[Measurement]:
        # After the last round: clearing JAX's caches then costs no re-warm.
        def again() -> list[Measurement]:
            self.session.repeat_compile()
            return self.session.measurements()

        return self.executor.guarded(self.pc, again)[0]


class ChildProcessExecutor:
    """Measures each case in its own child process (`run.child`): a crash, hang or
    out-of-memory kill costs only that case. The child takes all rounds back to back."""

    spreads_rounds = False

    def __init__(self, config: RunConfig) -> None:
        self.config = config

    def prepare(self) -> None:
        """Nothing: each child readies itself before its case's clock starts."""

    def measure(self, pc: PlannedCase) -> tuple[list[Measurement], LiveCase | None]:
        config = self.config
        suite = suite_file_of(pc.workload)
        if suite is None:
            error = ErrorInfo(
                type="IsolationError",
                message=f"workload {pc.workload.name!r} is not defined in a suite file, "
                "so a child process cannot find it",
                hint="define it in a suite file (discovered with --suite), or run without "
                "--isolate.",
            )
            return failed_case(pc, config.modes, Status.ERROR, error), None
        outcome = child.run_in_child(child_spec(pc, config, suite), timeout_s=config.timeout_s)
        if isinstance(outcome, child.ChildFailure):
            return failed_case(pc, config.modes, outcome.status, outcome.error), None
        return [measurement_from_dict(d) for d in outcome], None


def child_spec(pc: PlannedCase, config: RunConfig, suite: str) -> dict[str, Any]:
    """What a child process needs to find and measure `pc` again (JSON-able)."""
    return {
        "suite": suite,
        "workload": pc.workload.name,
        "size": pc.size,
        "params": dict(pc.params),
        "device": device_label(pc.device),
        "dtype": pc.dtype,
        "config": config.to_dict(),
    }
