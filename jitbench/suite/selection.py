"""A run's workloads as it records them (`Selection`: name, suite file, its digest) and
found again from that record: by a resume, and by every worker process of the run.

`workload_list` checks what a caller hands `run_workloads`; `selection_of` is what the
run file keeps; `workloads_for_selection` imports the suite files again (refusing one
whose SHA-256 changed since the run started) and finds each workload by name.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from jitbench.errors import ConfigError, SuiteError, close_names
from jitbench.results import Run
from jitbench.results.model import Selection
from jitbench.suite.discovery import (
    SuiteLoadError,
    file_digest,
    load_suite_file,
    split_scheme,
    suite_digest_of,
    suite_of,
    workloads_from_suite,
    workloads_in,
)
from jitbench.suite.workload import Workload


def workload_list(workloads: object) -> list[Workload]:
    """`workloads` as the list of Workload objects a run measures, checked: what
    `run_workloads` is given goes through here first (`selection_of`, `plan_cases`).

    Raises:
        ConfigError: not a list of Workload objects (one workload alone, or names), with
            what to pass instead.
    """
    if isinstance(workloads, Workload):
        raise ConfigError(
            f"workloads takes a list of workloads, got the workload {workloads.name!r} "
            f"alone; pass [{workloads.name}]."
        )
    if isinstance(workloads, (str, bytes)) or not isinstance(workloads, Sequence):
        raise ConfigError(
            "workloads takes a list of workloads (made by @workload), got "
            f"{type(workloads).__name__}{_by_name_hint(workloads)}."
        )
    for wl in workloads:
        if not isinstance(wl, Workload):
            raise ConfigError(
                f"workloads takes a list of workloads (made by @workload), got {wl!r} in it"
                f"{_by_name_hint(wl)}."
            )
    return list(workloads)


def _by_name_hint(value: object) -> str:
    if isinstance(value, str):
        return f"; to run workloads by name, call jitbench.run([{value!r}], suites=...)"
    return ""


def selection_of(workloads: Sequence[Workload]) -> tuple[Selection, ...]:
    """What a run records of its workloads, so a resume can find them again.

    Raises:
        ConfigError: `workloads` is not a list of Workload objects (`workload_list`).
    """
    return tuple(
        Selection(workload=wl.name, suite=suite_of(wl), suite_sha256=suite_digest_of(wl))
        for wl in workload_list(workloads)
    )


def workloads_for_resume(run: Run, *, allow_changed_suites: bool = False) -> list[Workload]:
    """The workloads a partial run was started with, found again by suite file and name.

    This imports the suite files the run names, which runs their code: resume only runs
    you trust. A suite file whose SHA-256 differs from the one recorded when the run
    started is refused unless `allow_changed_suites`.

    Raises:
        SuiteError: the run does not record its workloads, a suite file is missing, has
            changed or fails to import, or a workload is no longer in its file.
    """
    selection = run.config.selection
    if not selection:
        raise SuiteError(
            f"run {run.run_id} does not record which workloads it ran (written by an older "
            "jitbench?); it cannot be resumed, start a new run."
        )
    return workloads_for_selection(
        selection, origin=f"run {run.run_id}", allow_changed_suites=allow_changed_suites
    )


def workloads_for_selection(
    selection: Sequence[Selection],
    *,
    origin: str = "this run",
    allow_changed_suites: bool = False,
) -> list[Workload]:
    """The selected workloads, found again by suite file and name (in a resumed run, or in
    a worker process of `--processes`). Every suite file is checked against its recorded
    SHA-256 (when the selection has one) before any is imported.

    Raises:
        SuiteError: a suite file is missing, has changed since it was recorded (unless
            `allow_changed_suites`) or fails to import, or a workload is no longer in its
            file; `origin` names the run in the message.
    """
    for entry in selection:
        name, suite = entry.workload, entry.suite
        if not suite:
            raise SuiteError(
                f"workload {name!r} of {origin} was not loaded from a suite file; "
                "it cannot be resumed, start a new run."
            )
        if split_scheme(suite) is None and not Path(suite).is_file():
            raise SuiteError(
                f"suite file {suite!r} of {origin} no longer exists; restore it or start a new run."
            )
        if (
            entry.suite_sha256 is not None
            and not allow_changed_suites
            and split_scheme(suite) is None
        ):
            try:
                digest = file_digest(suite)
            except OSError as exc:
                raise SuiteError(
                    f"cannot read suite file {suite!r} of {origin}: {exc.strerror or exc}."
                ) from None
            if digest != entry.suite_sha256:
                raise SuiteError(
                    f"suite file {suite!r} has changed since {origin} started, so its "
                    "measurements would mix two versions of the code (and resuming runs the "
                    "file's new code); start a new run, or pass --allow-changed-suites if "
                    "you trust the change."
                )
    found: list[Workload] = []
    for entry in selection:
        name, suite = entry.workload, entry.suite
        assert suite is not None  # checked above
        if split_scheme(suite) is not None:
            try:
                by_name = {w.name: w for w in workloads_from_suite(suite)}
            except Exception as exc:
                raise SuiteError(
                    f"suite {suite!r} fails to load ({type(exc).__name__}: {exc}); "
                    "fix it, then resume again."
                ) from None
        else:
            module = load_suite_file(Path(suite))
            if isinstance(module, SuiteLoadError):
                raise SuiteError(
                    f"suite file {module} (it fails to import); fix it, then resume again."
                )
            by_name = {w.name: w for w in workloads_in(module)}
        if name not in by_name:
            close = close_names(name, by_name)
            renamed = f" (renamed to {' or '.join(repr(c) for c in close)}?)" if close else ""
            raise SuiteError(
                f"workload {name!r} of {origin} is no longer in {suite}{renamed}; restore it "
                "or start a new run."
            )
        found.append(by_name[name])
    return found
