"""Orchestrate a run: plan cases, measure each under the protocol, emit progress events.

The runner never prints and never writes files itself: progress goes to an `on_event`
callback and partial runs to a `checkpoint` callback, both supplied by the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax

from jitbench.config import RunConfig
from jitbench.errors import ConfigError, SuiteError
from jitbench.measure import environment
from jitbench.measure.devices import device_label, resolve_devices, warm_up_process, x64_enabled
from jitbench.measure.protocol import (
    CaseSession,
    PlannedCase,
    add_hint,
    error_info,
    measure_case,
    open_case,
    planned_case_record,
)
from jitbench.results import (
    Case,
    ErrorInfo,
    Measurement,
    Run,
    Status,
    measurement_from_dict,
)
from jitbench.results.model import new_run_id, utc_now
from jitbench.run import child as isolate
from jitbench.suite.discovery import import_suite_file, unknown_name_message
from jitbench.suite.workload import Workload


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


RunEvent = RunStarted | CaseStarted | CaseFinished | RoundStarted


class RunInterrupted(KeyboardInterrupt):
    """The run was interrupted (Ctrl-C, or a signal the caller turned into an interrupt).

    `partial` holds every case measured before (complete=False), so the caller can save
    it; `cause` is the original KeyboardInterrupt (or subclass).
    """

    def __init__(self, partial: Run, cause: BaseException) -> None:
        super().__init__("run interrupted")
        self.partial = partial
        self.cause = cause


def plan_cases(
    workloads: Sequence[Workload], config: RunConfig, devices: Sequence[jax.Device]
) -> list[PlannedCase]:
    """Every workload × size × device × dtype the config asks for.

    Raises ConfigError when a requested size exists in none of the workloads.
    """
    dtype = "float64" if config.x64 else "float32"
    if not config.sweep and workloads:
        known = {s for w in workloads for s in w.sizes}
        for size in config.sizes:
            if size not in known:
                raise ConfigError(unknown_name_message("size", size, sorted(known)))
    planned = []
    for wl in workloads:
        if config.sweep and wl.sweep:
            sizes = [(label, dict(p)) for label, p in zip(wl.sweep_labels, wl.sweep, strict=True)]
        else:
            sizes = [(s, dict(wl.sizes[s])) for s in config.sizes if s in wl.sizes]
        for size, params in sizes:
            for device in devices:
                planned.append(PlannedCase(wl, size, params, device, dtype))
    return planned


def failed_case(
    pc: PlannedCase, config: RunConfig, status: Status, error: ErrorInfo
) -> list[Measurement]:
    """One measurement per configured mode, all with `status` and `error` (no samples)."""
    case = planned_case_record(pc)
    return [Measurement(case=case, mode=m, status=status, error=error) for m in config.modes]


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


def _timeout_error(seconds: float | None) -> ErrorInfo:
    return ErrorInfo(
        type="Timeout",
        message=f"case exceeded --timeout {seconds:g} s and was stopped",
        hint="raise --timeout or choose a smaller --sizes preset; a single long native call "
        "(one huge compile or BLAS call) is only cut short with --isolate.",
    )


def spreads_rounds(config: RunConfig) -> bool:
    """Whether `run_workloads` spreads each case's sampling rounds over the run.

    With `isolate` each case lives in its own child process, so its rounds are taken
    back to back there.
    """
    return config.plan.rounds > 1 and not config.isolate


def measure_guarded(
    pc: PlannedCase, config: RunConfig, *, keep: Callable[[CaseSession], None] | None = None
) -> list[Measurement]:
    """`measure_case` that never raises an Exception: a timeout, a crash of the child
    (with `config.isolate`) or an error escaping the protocol is recorded on the case.

    With `keep` (in-process runs only), only the first sampling round is taken and the
    live session is handed to `keep` for the later rounds (`sample_guarded`).
    KeyboardInterrupt still propagates (the run is being stopped).
    """
    if config.isolate:
        suite = isolate.suite_file_of(pc.workload)
        if suite is None:
            return failed_case(
                pc,
                config,
                Status.ERROR,
                ErrorInfo(
                    type="IsolationError",
                    message=f"workload {pc.workload.name!r} is not defined in a suite file, "
                    "so a child process cannot find it",
                    hint="define it in a suite file (discovered with --suite), or run without "
                    "--isolate.",
                ),
            )
        outcome = isolate.run_in_child(child_spec(pc, config, suite), timeout_s=config.timeout_s)
        if isinstance(outcome, isolate.ChildFailure):
            return failed_case(pc, config, outcome.status, outcome.error)
        return [measurement_from_dict(d) for d in outcome]

    def first_round() -> list[Measurement]:
        session = open_case(
            pc, timed=config.modes, plan=config.plan, seed=config.seed, quick=config.quick
        )
        session.sample(config.plan.for_round())
        result = session.measurements()
        if keep is not None:
            keep(session)
        return result

    return _guarded(
        pc, config, first_round if keep is not None else lambda: measure_case(pc, config)
    )


def sample_guarded(pc: PlannedCase, session: CaseSession, config: RunConfig) -> list[Measurement]:
    """One more sampling round of a live case, guarded like `measure_guarded`."""

    def next_round() -> list[Measurement]:
        session.sample(config.plan.for_round())
        return session.measurements()

    return _guarded(pc, config, next_round)


def compile_guarded(pc: PlannedCase, session: CaseSession, config: RunConfig) -> list[Measurement]:
    """One more cold compile measurement of a live case, guarded like `measure_guarded`.
    Done after the last sampling round: clearing JAX's caches then costs no re-warm."""

    def again() -> list[Measurement]:
        session.repeat_compile()
        return session.measurements()

    return _guarded(pc, config, again)


def _guarded(
    pc: PlannedCase, config: RunConfig, work: Callable[[], list[Measurement]]
) -> list[Measurement]:
    try:
        with isolate.deadline(config.timeout_s) as limit:
            result = work()
        if limit.expired:  # the alarm fired but native code swallowed the CaseTimeout
            return failed_case(pc, config, Status.TIMEOUT, _timeout_error(config.timeout_s))
        return result
    except isolate.CaseTimeout:
        return failed_case(pc, config, Status.TIMEOUT, _timeout_error(config.timeout_s))
    except ConfigError:
        raise
    except (Exception, SystemExit) as exc:  # a fault the per-mode handlers did not catch
        if isinstance(exc, SystemExit):
            add_hint(exc, "the workload called sys.exit(); return a value instead.")
        return failed_case(pc, config, Status.ERROR, error_info(exc))


def workloads_for_resume(run: Run) -> list[Workload]:
    """The workloads a partial run was started with, found again by suite file and name.

    Raises:
        SuiteError: the run does not record its workloads, a suite file is missing or
            fails to import, or a workload is no longer in its file.
    """
    selection = run.config.get("selection")
    if not isinstance(selection, list) or not selection:
        raise SuiteError(
            f"run {run.run_id} does not record which workloads it ran (written by an older "
            "jitbench?); it cannot be resumed, start a new run."
        )
    found: list[Workload] = []
    for entry in selection:
        name, suite = entry.get("workload"), entry.get("suite")
        if not suite:
            raise SuiteError(
                f"workload {name!r} of run {run.run_id} was not loaded from a suite file; "
                "it cannot be resumed, start a new run."
            )
        if not Path(suite).is_file():
            raise SuiteError(
                f"suite file {suite!r} of run {run.run_id} no longer exists; restore it "
                "or start a new run."
            )
        try:
            module = import_suite_file(Path(suite))
        except Exception as exc:
            raise SuiteError(
                f"suite file {suite!r} fails to import ({type(exc).__name__}: {exc}); "
                "fix it, then resume again."
            ) from None
        by_name = {v.name: v for v in vars(module).values() if isinstance(v, Workload)}
        if name not in by_name:
            raise SuiteError(
                unknown_name_message("workload", str(name), by_name).replace(
                    "`jitbench list` shows all.", f"(it is no longer in {suite})."
                )
            )
        found.append(by_name[name])
    return found


def run_workloads(
    workloads: Sequence[Workload],
    config: RunConfig | None = None,
    *,
    on_event: Callable[[RunEvent], None] | None = None,
    checkpoint: Callable[[Run], None] | None = None,
    run_id: str | None = None,
    resume: Run | None = None,
) -> Run:
    """Measure `workloads` under `config` and return the Run.

    Each case is measured by `measure_guarded`: an error, a timeout (`config.timeout_s`)
    or, with `config.isolate`, a crash of the child process is recorded on that case and
    the run goes on.

    Args:
        on_event: receives RunStarted, CaseStarted and CaseFinished events (progress).
        checkpoint: receives the partial Run (complete=False) after every case, so the
            caller can save it; a run interrupted later keeps what was measured.
        resume: a partial run to finish: its id, start time, environment and recorded
            configuration are kept, and cases it already holds are not measured again.

    Raises:
        ConfigError: unknown device or size names.
        RunInterrupted: on KeyboardInterrupt; it carries the partial run.
    """
    config = config or RunConfig()
    emit = on_event or (lambda _e: None)
    started = resume.started_at if resume else utc_now()
    rid = resume.run_id if resume else (run_id or new_run_id())
    with x64_enabled(config.x64):
        devices = resolve_devices(config.devices)
        cases = plan_cases(workloads, config, devices)
        if resume is not None:
            env = resume.environment
            config_record = dict(resume.config)
            config_record["resumed_at"] = [*config_record.get("resumed_at", ()), utc_now()]
            measured = list(resume.measurements)
        else:
            env = environment.capture()
            config_record = {
                **config.to_dict(),
                "selection": [
                    {"workload": wl.name, "suite": isolate.suite_file_of(wl)} for wl in workloads
                ],
            }
            measured = []
        done = {m.case.key for m in measured}
        todo = [pc for pc in cases if _key(pc) not in done]

        def snapshot(complete: bool) -> Run:
            return Run(
                run_id=rid,
                started_at=started,
                finished_at=utc_now() if complete else None,
                complete=complete,
                environment=env,
                config=config_record,
                measurements=tuple(measured),
            )

        try:
            if not config.isolate:
                warm_up_process(devices)
            emit(RunStarted(rid, len(cases), len(cases) - len(todo)))
            offset = len(cases) - len(todo)
            spread = spreads_rounds(config)
            # Live cases for rounds 2.. (in order); their measurements sit at `slots`.
            sessions: dict[tuple[str, str, str, str], tuple[PlannedCase, CaseSession]] = {}
            slots: dict[tuple[str, str, str, str], slice] = {}

            def keep_session(pc: PlannedCase) -> Callable[[CaseSession], None]:
                return lambda session: sessions.__setitem__(_key(pc), (pc, session))

            for i, pc in enumerate(todo, start=offset):
                case = planned_case_record(pc)
                emit(CaseStarted(case, i, len(cases)))
                result = measure_guarded(pc, config, keep=keep_session(pc) if spread else None)
                slots[_key(pc)] = slice(len(measured), len(measured) + len(result))
                measured.extend(result)
                emit(CaseFinished(result[0].case if result else case, i, len(cases), tuple(result)))
                if checkpoint is not None:
                    checkpoint(snapshot(False))
            later_rounds = range(2, config.plan.rounds + 1) if spread else range(0)
            for round_index in later_rounds:
                emit(RoundStarted(round_index, config.plan.rounds, len(sessions)))
                for key, (pc, session) in list(sessions.items()):
                    result = sample_guarded(pc, session, config)
                    if not session.runnable or all(m.failed for m in result):
                        del sessions[key]  # nothing left to sample, or it failed as a whole
                    measured[slots[key]] = result
                if checkpoint is not None:
                    checkpoint(snapshot(False))
            for _ in range(config.plan.compile_measurements - 1 if spread else 0):
                for key, (pc, session) in list(sessions.items()):
                    measured[slots[key]] = compile_guarded(pc, session, config)
            if spread and checkpoint is not None:
                checkpoint(snapshot(False))
        except RunInterrupted:
            raise
        except KeyboardInterrupt as exc:
            raise RunInterrupted(snapshot(False), exc) from exc
        return snapshot(True)


def _key(pc: PlannedCase) -> tuple[str, str, str, str]:
    return (pc.workload.name, pc.size, device_label(pc.device), pc.dtype)
