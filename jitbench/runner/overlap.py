"""The second process of a run measuring beside the first, on cores of its own.

A `--processes` run measures every case in one process, then again in fresh ones. On a
machine with cores to spare, the second process need not wait for the first to finish:
it starts with it, pinned to other cores (the first measures nothing until it has
started: `mark_ready`, `wait_ready`), and the two take turns to lead the groups (a
workload × size × dtype; `takes_turns`, `led_groups`, `turn_order`). The leader of a
group makes its inputs, compiles and times its cold calls, compares its outputs with
NumPy's and marks it opened (`mark_opened`, with the modes that ran past --timeout there,
which the other leaves out as a later worker would, and its measurements); the other
waits for the mark (`wait_opened`) and follows, loading the programs and inputs the
leader kept instead of compiling and making them again (`compilation.sharing_compiles`,
`shared_inputs`). The first process records the leader's measurements of the groups the
second led, so that the run's first part holds every group's compiles and checks; its
own measurements of those groups join the second's run (`second_part`). What measuring
side by side costs the figures is measured on the docs' validation pages ("Overlapping
the processes", "Taking turns to lead").

`plan_overlap` decides whether a run overlaps: CPU devices only (a GPU is one device the
two processes would share), pinned threads (`--threads N`, not `all`) and twice those
cores free to pin, a fresh run (not a resume), cases measured in this process (not
`--isolate`). A third process of `--processes 3` runs after them, alone; the extra
processes run two at a time, a core each (`runner.processes.run_in_processes`), each
measuring once both have started and taking its last snapshot once both have finished.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from jitbench.config import RunConfig
from jitbench.errors import ConfigError
from jitbench.measure import machine
from jitbench.measure.devices import resolve_devices
from jitbench.measure.protocol import Skips, skips_from_json, skips_to_json, timed_out_skips
from jitbench.measure.threads import allowed_cores, choose_cores, limited_threads
from jitbench.results import Measurement, Run
from jitbench.results.codec import measurement_from_dict, measurement_to_dict
from jitbench.runner.plan import PlannedCase
from jitbench.runner.signals import raise_if_stop_requested

#: A group of cases measured together: workload, size and dtype (`plan.group_cases`).
GroupKey = tuple[str, str, str]

#: The file, in a group's shared folder, that says the process leading it has opened it.
OPENED_FILE = "opened.json"
#: The files, in a folder of the run's, that say a process has started and waits (one
#: per process, named by its pid).
READY_PREFIX = "ready-"
#: How long a process waits for the others it starts with before it measures anyway (one
#: of them died: the run reports it when it asks for that one's result).
READY_LIMIT_S = 120.0
#: How long a process that has finished waits for the others it started with before it
#: takes its last snapshot anyway (one of them died mid-run).
END_LIMIT_S = 30.0
#: How often a follower looks for the mark of the group it waits for.
POLL_S = 0.01


@dataclass(frozen=True)
class OverlapPlan:
    """Where the two processes of an overlapping run measure: `first` for this process,
    `second` for the one beside it (disjoint sets of `--threads` cores each); the two
    extra processes that measure side by side take one each too."""

    first: frozenset[int]
    second: frozenset[int]

    @property
    def count(self) -> int:
        """The cores both processes measure on."""
        return len(self.first) + len(self.second)


@dataclass(frozen=True)
class Beside:
    """The run's other process measuring at the same time as this one: the cores both use
    together (`cores_used`: neither is "another process" in the machine's snapshots, and
    no core is left free), whether it `is_first` (the run's first process, so this one is
    the second, and the two take turns to lead the groups), and its `pid` (None where it
    is not known yet: the first process starts the second after, and two extra processes
    learn each other's as they start)."""

    cores_used: int
    is_first: bool
    pid: int | None = None


_waited_s = 0.0


def plan_overlap(config: RunConfig, *, resuming: bool) -> OverlapPlan | None:
    """The cores of an overlapping run, or None where the run measures its processes one
    after another (`config.overlap` False, or the run cannot overlap: see the module).

    Starts JAX's backend (to see the devices) pinned to the first process's cores, as the
    first process would.

    A resumed run never overlaps and is not refused: its recorded settings say what its
    first session did, not what the user asks of this one.

    Raises:
        ConfigError: `config.overlap` is True and the fresh run cannot overlap; says why.
    """
    if config.overlap is False or config.processes < 2 or resuming:
        return None
    why = _why_not(config)
    cores: list[int] = []
    n = config.threads or 1  # _why_not refuses --threads all (None)
    if why is None:
        cores = sorted(
            choose_cores(2 * n, allowed_cores(), machine.busy_by_core(), start=os.getpid())
        )
        with limited_threads(n, cores=set(cores[:n])):
            devices = resolve_devices(config.devices)
        if any(d.platform != "cpu" for d in devices):
            why = "its devices are not all CPUs (two processes would share a device)"
    if why is not None:
        if config.overlap:
            raise ConfigError(
                f"--overlap: this run cannot measure its processes side by side: {why}; "
                "leave out --overlap."
            )
        return None
    return OverlapPlan(first=frozenset(cores[:n]), second=frozenset(cores[n:]))


def may_overlap(config: RunConfig) -> bool:
    """Whether a fresh run of `config` may overlap, by its settings alone (its devices
    are not known yet): where it may, `api.run` starts the second process early."""
    return (
        config.processes >= 2
        and config.overlap is not False
        and all(name.startswith("cpu") for name in config.devices)
        and not _why_not(config)
    )


def _why_not(config: RunConfig) -> str | None:
    """Why a fresh run of `config` cannot overlap, by its settings; None where it can."""
    if config.isolate:
        return "--isolate measures each case in a child process of its own"
    if config.threads is None:
        return "--threads all leaves the threads unpinned"
    if config.plan.rounds > 1 and config.timeout_s is not None:
        # The first process marks a group after its first round; a mode that reaches
        # --timeout in a later round would be measured by the second all the same.
        return "with --rounds and --timeout a mode may time out after the second measured it"
    free = len(allowed_cores())
    if 2 * config.threads > free:
        need = 2 * config.threads
        return f"two processes of {config.threads} thread(s) need {need} cores, {free} allowed"
    return None


def takes_turns(config: RunConfig) -> bool:
    """Whether the two processes of an overlapping run take turns to lead the groups (see
    the module): with one round each. With --rounds a group's measurements grow round by
    round after its mark, so the first process leads every group."""
    return config.plan.rounds == 1


def led_groups(
    groups: Sequence[Sequence[PlannedCase]], *, second: bool, turns: bool
) -> frozenset[GroupKey]:
    """The groups (in plan order) a process of an overlapping run leads: with `turns`,
    the first process every other one from the first, the second the others; else the
    first process all of them."""
    return frozenset(
        group_key(group)
        for index, group in enumerate(groups)
        if (index % 2 == second if turns else not second)
    )


def turn_order(groups: Sequence[Sequence[PlannedCase]]) -> list[PlannedCase]:
    """The second process's order of the cases of `groups` (in plan order) when the two take
    turns: each pair of groups the other way round, so that each process first leads one
    group of the pair while the other leads the other, then follows it."""
    order: list[PlannedCase] = []
    for start in range(0, len(groups), 2):
        for group in reversed(groups[start : start + 2]):
            order.extend(group)
    return order


def group_key(group: Sequence[PlannedCase]) -> GroupKey:
    """A group's workload, size and dtype (`plan.group_cases`)."""
    first = group[0]
    return (first.workload.name, first.size, first.dtype)


def second_part(run: Run, followed: Sequence[Measurement]) -> Run:
    """The second process's run as the run's second part: its own measurements of the
    groups it followed, and the first process's (`followed`) of those it led, whose own
    measurements the first process recorded (`Opened.measurements`)."""
    if not followed:
        return run
    cases = {m.case.key for m in followed}
    return replace(
        run,
        measurements=(*(m for m in run.measurements if m.case.key not in cases), *followed),
    )


def mark_ready(folder: Path) -> None:
    """Say, in `folder`, that this process has started: its interpreter, JAX and the
    suites are loaded and its backend is up, so what is left of it is waiting and
    measuring."""
    (folder / f"{READY_PREFIX}{os.getpid()}").touch()


def wait_ready(
    folder: Path,
    alive: Callable[[], bool],
    *,
    count: int = 1,
    limit_s: float = READY_LIMIT_S,
    poll_s: float = POLL_S,
) -> tuple[int, ...]:
    """Wait until `count` processes have started (`mark_ready`), while `alive()`, for at
    most `limit_s`; the pids of those that have. Nothing is measured before: a spawned
    interpreter importing JAX beside a measuring process made the first workload's cold
    compiles twice as slow, and its noise probe read up to ±26 %."""
    end = time.monotonic() + limit_s
    while True:
        pids = tuple(
            int(p.name.removeprefix(READY_PREFIX)) for p in folder.glob(f"{READY_PREFIX}*")
        )
        if len(pids) >= count or not alive() or time.monotonic() >= end:
            return pids
        time.sleep(poll_s)


def end_together(folder: Path, count: int) -> None:
    """Wait until the `count` processes that started together in `folder` have all
    finished measuring (each says so here), so that none takes its last machine snapshot
    while another still measures beside it (the noise probe read ±3.3-4.5 % then)."""
    done = folder / "done"
    done.mkdir(exist_ok=True)
    mark_ready(done)
    wait_ready(done, lambda: True, count=count, limit_s=END_LIMIT_S)


def mark_opened(folder: Path, measurements: Sequence[Measurement]) -> None:
    """Say, in a group's shared folder, that the process leading the group has opened it:
    its programs and inputs are kept; with the modes that ran past --timeout, and the
    group's measurements (the first process records those of the groups the second led:
    `Opened.measurements`)."""
    body = json.dumps(
        {
            "skips": skips_to_json(timed_out_skips(measurements)),
            "measurements": [measurement_to_dict(m) for m in measurements],
        }
    )
    tmp = folder / f".{OPENED_FILE}.{os.getpid()}.tmp"
    tmp.write_text(body, encoding="utf-8")
    os.replace(tmp, folder / OPENED_FILE)


@dataclass(frozen=True)
class Opened:
    """A group as the process that led it opened it (`mark_opened`): the modes it left
    out, and its measurements of the group."""

    skips: Skips
    measurements: tuple[Measurement, ...]


def wait_opened(
    folder: Path, alive: Callable[[], bool] = lambda: True, *, poll_s: float = POLL_S
) -> Opened | None:
    """Wait until the process leading the group whose shared folder is `folder` has opened
    it (`mark_opened`), while `alive()`; None where it died first (the waiting process
    then leads the group itself). The parent stops a follower whose first process
    failed (`processes.run_in_processes`)."""
    global _waited_s
    path = folder / OPENED_FILE
    began = time.monotonic()
    try:
        while True:
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                if not alive() and not path.exists():  # it may have marked, then ended
                    return None
                raise_if_stop_requested()
                time.sleep(poll_s)
                continue
            body = json.loads(text)
            return Opened(
                skips=skips_from_json(body["skips"]),
                measurements=tuple(measurement_from_dict(d) for d in body["measurements"]),
            )
    finally:
        _waited_s += time.monotonic() - began


def waited_s() -> float:
    """Seconds this process has waited in `wait_opened`: its time beside the first process
    less the waits is what it took to measure."""
    return _waited_s
