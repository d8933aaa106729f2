"""The second process of a run measuring beside the first, on cores of its own: the one
module that knows measuring side by side.

The second process starts with the first, pinned to other cores, and the two measure
every case at the same time, each on its own (inputs, compiles, output checks); the
first measures nothing until the second has started (`Peer.meet`: a fresh interpreter
importing JAX beside a measuring process slowed its cold compiles twice over). A run
overlaps (`plan_overlap`) on CPU devices only (a GPU would be shared), with pinned
threads (`--threads N`) and twice those cores free, fresh (not a resume) and not
`--isolate`. A third process runs after them, alone; extra processes run two at a time,
a core each, starting once both have started and ending together. The processes say so
on their channels to the parent (which passes on a pair's: `pair_up`), never in files.
The rest of the runner sees a `Placement`, the parent a `SideBySide`. What it costs the
figures: docs, validation, "Overlapping the processes".
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from jitbench.config import RunConfig
from jitbench.errors import ConfigError
from jitbench.measure import machine
from jitbench.measure.devices import resolve_devices
from jitbench.measure.threads import allowed_cores, choose_cores, limited_threads
from jitbench.results import Run
from jitbench.runner.channel import Channel
from jitbench.runner.worker import OnCase, Worker, WorkerTarget, start_worker

#: The messages of processes side by side (`runner.channel`): started, started together
#: (a pair), finished measuring, both finished (a pair).
READY, START, DONE, END = "ready", "start", "done", "end"
#: How long a process waits for the others it starts with before it measures anyway (one
#: of them died: the run reports it when it asks for that one's result).
READY_LIMIT_S = 120.0
#: How long a process that has finished waits for the others it started with before it
#: takes its last snapshot anyway (one of them died mid-run).
END_LIMIT_S = 30.0


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


@dataclass
class Placement:
    """Where one process of the run measures and beside whom: all that the scheduler is
    told of measuring side by side. Made here: `SideBySide.first` for the parent's own
    process, `for_worker` in a worker.

    `cores` are the cores to pin to, `cores_used` those of every process side by side;
    `begin` is called once the process's cases are planned, before its first snapshot
    (the first process starts the second there: its start-up would disturb both); `peer`
    is met before the first case (`Peer.meet`: the second, or one of a pair; the first
    met its second when it started it); `pids` are the others'; `announces_second` says
    whether the run's second process measures at the same time (`RunStarted.beside`)."""

    cores: frozenset[int]
    cores_used: int
    begin: Callable[[], None] = lambda: None
    peer: Peer | None = None
    pids: list[int] = field(default_factory=list)
    announces_second: bool = False

    def snapshot_options(self) -> dict[str, Any]:
        """What the machine's snapshots are told (`machine.capture`): the cores all the
        processes side by side use (none of them is "another process", and no core is
        left free), and their pids (an extra process of a pair learns the other's only as
        both start: its first snapshot, which the pooled run does not keep, counts it)."""
        return {"cores_used": self.cores_used, "exclude_pids": (os.getpid(), *self.pids)}

    def met(self, pids: Sequence[int]) -> None:
        """The pids of the processes this one met (`Peer.meet`)."""
        self.pids.extend(pids)

    def finish(self) -> None:
        """After the last case, before the last snapshot: one of a pair waits for the
        other (`Peer.end_together`)."""
        if self.peer is not None:
            self.peer.end_together()


def for_worker(spec: dict[str, Any] | None, channel: Channel) -> Placement | None:
    """A worker's placement from what its order says (`SideBySide`'s `spec`), over its
    `channel` to the parent; None for a worker that measures alone."""
    if spec is None:
        return None
    cores = frozenset(spec["cores"])
    together = bool(spec.get("together"))
    pids = [] if together else [spec["first_pid"]]
    return Placement(cores, 2 * len(cores), peer=Peer(channel, together=together), pids=pids)


class SideBySide:
    """The parent's side of an overlapping run (`plan`'s cores): the first process's
    placement, the second process started beside it (from `standby` where that one is
    still alive), and the extra processes two at a time."""

    def __init__(self, plan: OverlapPlan, standby: Worker | None) -> None:
        self.plan = plan
        self.standby = standby
        self.started: Worker | None = None

    def first(self, target: WorkerTarget, args: Sequence[Any]) -> Placement:
        """The first process's placement: it starts the second (`target`, `args`: what a
        worker measures, alone: it compiles and checks its own) once its cases are
        planned, and waits until it has started."""

        def begin() -> None:
            spec = {"cores": sorted(self.plan.second), "first_pid": os.getpid()}
            usable = self.standby is not None and self.standby.alive()
            fresh = self.standby if self.standby is not None and usable else start_worker()
            self.started = fresh.order(functools.partial(target, placement=spec), *args)
            wait_started(self.started.channel)
            placement.met((self.started.pid,))

        placement = Placement(self.plan.first, self.plan.count, begin=begin, announces_second=True)
        return placement

    def second(self) -> Worker | None:
        """The second process, where the first started it."""
        return self.started

    def pair(self, target: WorkerTarget, args: Sequence[Any], on_case: OnCase) -> list[Run]:
        """Two extra processes at once, a core each, both measuring once both started
        (`pair_up`); their runs (each case as it comes to `on_case`).

        Raises:
            WorkerError: one of them failed or died.
        """
        workers = [
            start_worker().order(
                functools.partial(target, placement={"cores": sorted(own), "together": True}),
                *args,
            )
            for own in (self.plan.first, self.plan.second)
        ]
        try:
            # One that dies starting would leave the other waiting for it: its error now
            # (the other stopped), not after the other's wait.
            got: dict[int, Run] = {}
            if not pair_up([w.channel for w in workers]):
                for i, w in enumerate(workers):
                    if not w.alive():  # its WorkerError, saying how it ended
                        got[i] = w.result()
            return [got[i] if i in got else w.result(on_case) for i, w in enumerate(workers)]
        finally:
            for w in workers:
                w.stop()


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
    free = len(allowed_cores())
    if 2 * config.threads > free:
        need = 2 * config.threads
        return f"two processes of {config.threads} thread(s) need {need} cores, {free} allowed"
    return None


class Peer:
    """The run's other process measuring at the same time as this one, over the channel
    they share (`runner.channel`: the first process and the second beside it; or a worker
    of a pair and the parent, which passes on what the pair says to each other:
    `pair_up`)."""

    def __init__(self, channel: Channel, *, together: bool = False) -> None:
        self.channel = channel.listen()
        #: One of two extra processes side by side (each measures once both started and
        #: takes its last snapshot once both finished), not the second beside the first.
        self.together = together

    def meet(self, *, limit_s: float = READY_LIMIT_S) -> tuple[int, ...]:
        """Say this process has started (its interpreter, JAX and the suites loaded, its
        backend up: what is left is waiting and measuring); one of a pair also waits for
        the other, at most `limit_s` (one that died: the run reports it when it asks for
        that one's result). The pids of the others met. Nothing is measured before: a
        fresh interpreter importing JAX beside a measuring process made the first
        workload's cold compiles twice as slow, and its noise probe read up to ±26 %."""
        self.channel.send(READY, os.getpid())
        if not self.together:
            return ()
        with contextlib.suppress(EOFError):
            if (started := self.channel.receive({START}, limit_s=limit_s)) is not None:
                return tuple(started[1])
        return ()

    def end_together(self, *, limit_s: float = END_LIMIT_S) -> None:
        """One of a pair: wait until both have finished measuring, at most `limit_s`, so
        that neither takes its last machine snapshot while the other still measures beside
        it (the noise probe read ±3.3-4.5 % then)."""
        if not self.together:
            return
        self.channel.send(DONE)
        with contextlib.suppress(EOFError):
            self.channel.receive({END}, limit_s=limit_s)


def wait_started(channel: Channel, *, limit_s: float = READY_LIMIT_S) -> int | None:
    """Wait until the process at the other end of `channel` has started (`Peer.meet`), at
    most `limit_s`; its pid, or None where it ended or the limit passed first."""
    with contextlib.suppress(EOFError):
        if (message := channel.receive({READY}, limit_s=limit_s)) is not None:
            return int(message[1])
    return None


def pair_up(channels: Sequence[Channel]) -> bool:
    """Pass on what two extra processes side by side say to each other (`Peer.meet`,
    `Peer.end_together`): once both have started, each hears the other's pid and starts;
    once both are done, both hear so. False, at once, where one ended before it started
    (the caller reports its error and stops the other)."""
    pids = [wait_started(channel) for channel in channels]
    if None in pids:
        return False
    for index, channel in enumerate(channels):
        channel.send(START, [pid for other, pid in enumerate(pids) if other != index])
    for channel in channels:
        with contextlib.suppress(EOFError):
            channel.receive({DONE})
    for channel in channels:
        channel.send(END)
    return True
