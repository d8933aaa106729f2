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
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from jitbench.config import RunConfig
from jitbench.errors import ConfigError
from jitbench.measure import machine
from jitbench.measure.devices import resolve_devices
from jitbench.measure.protocol import Skips, skips_from_json, skips_to_json, timed_out_skips
from jitbench.measure.threads import allowed_cores, choose_cores, limited_threads
from jitbench.results import Measurement, Run
from jitbench.results.codec import measurement_from_dict, measurement_to_dict
from jitbench.runner.channel import Channel
from jitbench.runner.plan import PlannedCase

#: A group of cases measured together: workload, size and dtype (`plan.group_cases`).
GroupKey = tuple[str, str, str]

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
