"""The second process of a run measuring beside the first, on cores of its own.

A `--processes` run measures every case in one process, then again in fresh ones. On a
machine with cores to spare, the second process need not wait for the first to finish:
it starts with it, pinned to other cores (the first measures nothing until it has
started: `Peer.meet`), and the two take turns to lead the groups (a
workload × size × dtype; `takes_turns`, `led_groups`, `turn_order`). The leader of a
group makes its inputs, compiles and times its cold calls, compares its outputs with
NumPy's and tells the other it has opened it (`Peer.opened`, with the modes that ran
past --timeout there, which the other leaves out as a later worker would, and its
measurements); the other waits for that message (`Peer.wait_opened`) and follows,
loading the programs and inputs the leader kept instead of compiling and making them
again (`compilation.sharing_compiles`, `shared_inputs`). The first process records the
leader's measurements of the groups the second led, so that the run's first part holds
every group's compiles and checks; its own measurements of those groups join the
second's run (`second_part`). What measuring
side by side costs the figures is measured on the docs' validation pages ("Overlapping
the processes", "Taking turns to lead").

`plan_overlap` decides whether a run overlaps: CPU devices only (a GPU is one device the
two processes would share), pinned threads (`--threads N`, not `all`) and twice those
cores free to pin, a fresh run (not a resume), cases measured in this process (not
`--isolate`). A third process of `--processes 3` runs after them, alone; the extra
processes run two at a time, a core each (`runner.processes.run_in_processes`), each
measuring once both have started and taking its last snapshot once both have finished.
The processes say all this to each other as messages on the channel each shares with
the parent (`runner.channel`, the parent passing on a pair's: `pair_up`), never as files.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from jitbench.config import RunConfig
from jitbench.errors import ConfigError
from jitbench.measure import machine
from jitbench.measure.devices import resolve_devices
from jitbench.measure.faults import Skips, skips_from_json, skips_to_json, timed_out_skips
from jitbench.measure.threads import allowed_cores, choose_cores, limited_threads
from jitbench.results import Measurement, Run
from jitbench.results.codec import measurement_from_dict, measurement_to_dict
from jitbench.runner.channel import Channel
from jitbench.runner.plan import GroupKey, PlannedCase, group_cases, group_key
from jitbench.runner.processes import WorkerTarget
from jitbench.runner.worker import Worker, start_worker

#: The messages of two processes side by side (`runner.channel`): started, started
#: together (a pair), a group opened, finished measuring, both finished (a pair).
READY, START, OPENED, DONE, END = "ready", "start", "opened", "done", "end"
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


class Placement:
    """Where one process of the run measures and beside whom: all that the scheduler is
    told of measuring side by side (`scheduler.measure_here` asks it at four points). Made
    here: `SideBySide.first` for the parent's own process, `for_worker` in a worker.

    `cores` are the cores to pin to; `peer` is met before the first case (`Peer.meet`:
    the second, or one of a pair; the first met its second when it started it);
    `compares_outputs` says whether a worker checks the outputs of groups it leads;
    `announces_second` whether the run's second process measures at the same time as
    this one (`RunStarted.beside`)."""

    def __init__(
        self,
        cores: frozenset[int],
        cores_used: int,
        *,
        arrange: Callable[[list[PlannedCase]], tuple[list[PlannedCase], Turns | None]],
        peer: Peer | None = None,
        pids: Sequence[int] = (),
        compares_outputs: bool = True,
        announces_second: bool = False,
    ) -> None:
        self.cores = cores
        self.peer = peer
        self.compares_outputs = compares_outputs
        self.announces_second = announces_second
        self._cores_used = cores_used
        self._pids = list(pids)
        self._arrange = arrange

    def snapshot_options(self) -> dict[str, Any]:
        """What the machine's snapshots are told (`machine.capture`): the cores all the
        processes side by side use (none of them is "another process", and no core is
        left free), and their pids (an extra process of a pair learns the other's only as
        both start: its first snapshot, which the pooled run does not keep, counts it)."""
        return {"cores_used": self._cores_used, "exclude_pids": (os.getpid(), *self._pids)}

    def arrange(self, cases: list[PlannedCase]) -> tuple[list[PlannedCase], Turns | None]:
        """This process's order of its planned `cases` and the groups it follows, before
        its first snapshot (the first process starts the second here: its start-up would
        disturb both)."""
        return self._arrange(cases)

    def met(self, pids: Sequence[int]) -> None:
        """The pids of the processes this one met (`Peer.meet`)."""
        self._pids.extend(pids)

    def finish(self) -> None:
        """After the last case, before the last snapshot: one of a pair waits for the
        other (`Peer.end_together`); the second tells the parent how long it waited for
        the first's messages (`Worker.waited_s`)."""
        if self.peer is None:
            return
        self.peer.end_together()
        if not self.peer.together:
            self.peer.channel.send("waited", self.peer.waited_s)


def for_worker(
    spec: dict[str, Any] | None, channel: Channel, config: RunConfig
) -> Placement | None:
    """A worker's placement from what its order says (`SideBySide`'s `spec`), over its
    `channel` to the parent; None for a worker that measures alone."""
    if spec is None:
        return None
    cores = frozenset(spec["cores"])
    together = bool(spec.get("together"))
    peer = Peer(channel, together=together)
    if together:
        return Placement(
            cores, 2 * len(cores), arrange=lambda cases: (cases, None), peer=peer,
            compares_outputs=False,
        )  # fmt: skip

    def arrange(cases: list[PlannedCase]) -> tuple[list[PlannedCase], Turns | None]:
        turns = _turns(cases, config, second=True, peer=peer)
        return (turn_order(group_cases(cases)) if takes_turns(config) else cases), turns

    return Placement(
        cores, 2 * len(cores), arrange=arrange, peer=peer, pids=(spec["first_pid"],),
        compares_outputs=takes_turns(config),
    )  # fmt: skip


class SideBySide:
    """The parent's side of an overlapping run (`plan`'s cores): the first process's
    placement, the second process started beside it (from `standby` where that one is
    still alive), the run's second part, and the extra processes two at a time."""

    def __init__(self, plan: OverlapPlan, config: RunConfig, standby: Worker | None) -> None:
        self.plan = plan
        self.config = config
        self.standby = standby
        self.started: Worker | None = None
        #: The first process's own measurements of the groups the second led.
        self.followed: list[Measurement] = []

    def first(self, target: WorkerTarget, args: Sequence[Any]) -> Placement:
        """The first process's placement: it starts the second (`target`, `args`: what a
        worker measures) once its cases are planned, and waits until it has started."""

        def arrange(cases: list[PlannedCase]) -> tuple[list[PlannedCase], Turns | None]:
            spec = {"cores": sorted(self.plan.second), "first_pid": os.getpid()}
            usable = self.standby is not None and self.standby.alive()
            fresh = self.standby if self.standby is not None and usable else start_worker()
            self.started = fresh.order(functools.partial(target, placement=spec), *args)
            wait_started(self.started.channel)
            placement.met((self.started.pid,))
            peer = Peer(self.started.channel)
            followed = self.followed
            return cases, _turns(cases, self.config, second=False, peer=peer, followed=followed)

        placement = Placement(
            self.plan.first, self.plan.count, arrange=arrange, announces_second=True
        )
        return placement

    def second(self) -> Worker | None:
        """The second process, where the first started it."""
        return self.started

    def second_part(self, run: Run) -> Run:
        """The second process's run as the run's second part (`second_part`)."""
        return second_part(run, self.followed)

    def pair(self, target: WorkerTarget, args: Sequence[Any]) -> list[Run]:
        """Two extra processes at once, a core each, both measuring once both started
        (`pair_up`); their runs.

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
            return [got[i] if i in got else w.result() for i, w in enumerate(workers)]
        finally:
            for w in workers:
                w.stop()


@dataclass
class Turns:
    """A process of an overlapping run, its `peer` (the other process) and the groups it
    follows: it waits until the peer, leading such a group, has opened it (where the peer
    ended first, it leads the group itself: `taken_over`), loads its programs and inputs
    and compares no outputs; it tells the peer of each group it leads. With `followed`
    (the first process), it records the leader's measurements of those groups, which
    come with the message, and keeps its own here: the run's second part
    (`second_part`)."""

    follows: frozenset[GroupKey]
    peer: Peer
    followed: list[Measurement] | None = None
    #: Groups this process followed until their leader ended, then led itself (their
    #: cold calls compile in a folder of their own: `executors`).
    taken_over: set[GroupKey] = field(default_factory=set)

    def leader(self, pcs: Sequence[PlannedCase]) -> Opened | None:
        """Where this process follows the group: the leader's message, once it is there
        (None where this process leads the group, or the leader ended first)."""
        group = group_key(pcs)
        if group not in self.follows:
            return None
        opened = self.peer.wait_opened(group)
        if opened is None:
            self.taken_over.add(group)
        return opened

    def recorded(self, leader: Opened | None, measured: list[Measurement]) -> list[Measurement]:
        """What the run records of a group: this process's measurements, or, where the
        first process followed it, the leader's (its own kept in `followed`, the program
        texts, which the leader's message lacks, lent to the leader's)."""
        if leader is None or self.followed is None:
            return measured
        texts = {
            (m.case.key, m.mode): m.compile.program_text
            for m in measured
            if m.compile is not None and m.compile.program_text
        }
        # Its cold calls loaded the leader's programs: those are no compiles.
        self.followed.extend(replace(m, compile=None) for m in measured)
        return [_with_text(m, texts.get((m.case.key, m.mode))) for m in leader.measurements]


def _with_text(m: Measurement, text: str | None) -> Measurement:
    """`m` with its compiled program's text, where it has none and `text` is one."""
    if text is None or m.compile is None or m.compile.program_text:
        return m
    return replace(m, compile=replace(m.compile, program_text=text))


def _turns(
    cases: Sequence[PlannedCase],
    config: RunConfig,
    *,
    second: bool,
    peer: Peer,
    followed: list[Measurement] | None = None,
) -> Turns:
    """The groups the first or the `second` process of an overlapping run follows, led by
    its `peer` (the first keeping its own measurements of them in `followed`)."""
    groups = group_cases(cases)
    led = led_groups(groups, second=second, turns=takes_turns(config))
    follows = frozenset(group_key(g) for g in groups) - led
    return Turns(follows=follows, peer=peer, followed=followed)


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


class Peer:
    """The run's other process measuring at the same time as this one, over the channel
    they share (`runner.channel`: the first process and the second beside it, each the
    other's peer; or a worker of a pair and the parent, which passes on what the pair
    says to each other: `pair_up`). One instance per process: it counts the seconds
    this process waited for its peer's marks (`waited_s`)."""

    def __init__(self, channel: Channel, *, together: bool = False) -> None:
        self.channel = channel.listen()
        #: One of two extra processes side by side (each measures once both started and
        #: takes its last snapshot once both finished), not the second beside the first.
        self.together = together
        #: Seconds this process waited in `wait_opened`: its time beside the first
        #: process less the waits is what it took to measure.
        self.waited_s = 0.0

    def meet(self, *, limit_s: float = READY_LIMIT_S) -> tuple[int, ...]:
        """Say this process has started (its interpreter, JAX and the suites loaded, its
        backend up: what is left is waiting and measuring); one of a pair also waits for
        the other, at most `limit_s` (one that died: the run reports it when it asks for
        that one's result). The pids of the others met. Nothing is measured before: a
        spawned interpreter importing JAX beside a measuring process made the first
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

    def opened(self, group: GroupKey, measurements: Sequence[Measurement]) -> None:
        """Tell the peer that this process, leading the group, has opened it: its programs
        and inputs are kept; with the modes that ran past --timeout, and the group's
        measurements (the first process records those of the groups the second led:
        `Opened.measurements`)."""
        self.channel.send(
            OPENED,
            {
                "group": list(group),
                "skips": skips_to_json(timed_out_skips(measurements)),
                "measurements": [measurement_to_dict(m) for m in measurements],
            },
        )

    def wait_opened(self, group: GroupKey) -> Opened | None:
        """Wait until the peer leading `group` has opened it (`opened`); None where it
        ended first (the waiting process then leads the group itself). The parent stops a
        follower whose first process failed (`processes.run_in_processes`)."""
        began = time.monotonic()
        try:
            message = self.channel.receive({OPENED}, match=lambda b: tuple(b["group"]) == group)
        except EOFError:
            return None
        finally:
            self.waited_s += time.monotonic() - began
        assert message is not None  # no limit
        body = message[1]
        return Opened(
            skips=skips_from_json(body["skips"]),
            measurements=tuple(measurement_from_dict(d) for d in body["measurements"]),
        )


@dataclass(frozen=True)
class Opened:
    """A group as the process that led it opened it (`Peer.opened`): the modes it left
    out, and its measurements of the group."""

    skips: Skips
    measurements: tuple[Measurement, ...]


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
