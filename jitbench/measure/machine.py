"""What the machine is doing while jitbench measures: load, steal, other processes, noise.

A run takes `capture` once before its first case and once after its last (stored in the
run's environment as `machine_before` / `machine_after`), so a figure measured on a busy
or noisy machine says so. The figures come from /proc and /sys where they are readable
and are None where they are not (another OS, a container that hides them), as pyperf's
`system show` and `pyperf check` read them. The short noise probe times a fixed pure-Python
loop on the cores jitbench measures on: its spread is the noise floor no measurement of
this run can beat. What the snapshots say (busy, noisy, unstable) is judged in
`jitbench.results.analysis.machine`. Nothing here prints.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from jitbench.results.analysis.machine import MachineState, NoiseProbe

#: The noise probe: samples of one fixed loop of about 5 ms on a laptop-class core.
PROBE_SAMPLES = 20
#: A smoke run's (`--quick`): under cProfile, a three-case quick run measured its cases in
#: 0.30 s and took 0.17 s for each full probe, before and after.
QUICK_PROBE_SAMPLES = 8
PROBE_LOOP = 100_000  # iterations of the pure-Python loop in one sample (≈ 4–7 ms)

#: Short window for choosing the least busy cores (`busy_by_core`); /proc/stat counts in
#: 10 ms ticks, so 50 ms tells a busy core (5 ticks) from an idle one (0).
CORE_WINDOW_S = 0.05

Clock = Callable[[], float]


# ---------------------------------------------------------------------------------------
# Parsers of /proc text (pure; tested on constructed text)


@dataclass(frozen=True)
class CpuTimes:
    """One `cpu` line of /proc/stat, in clock ticks since boot."""

    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int

    @property
    def total(self) -> int:
        # guest and guest_nice are already counted in user and nice.
        return (
            self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
        )

    @property
    def busy(self) -> int:
        """Ticks spent running something (not idle, not waiting for I/O)."""
        return self.total - self.idle - self.iowait


def parse_proc_stat(text: str) -> dict[str, CpuTimes]:
    """The `cpu` lines of /proc/stat: "cpu" (all CPUs) and "cpu0", "cpu1", …

    Older kernels have fewer columns; the missing ones count as 0.
    """
    out: dict[str, CpuTimes] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts or not parts[0].startswith("cpu"):
            continue
        try:
            values = [int(v) for v in parts[1:9]]
        except ValueError:
            continue
        out[parts[0]] = CpuTimes(*(values + [0] * (8 - len(values))))
    return out


def parse_loadavg(text: str) -> tuple[float, float, float] | None:
    """The 1, 5 and 15 minute load averages from /proc/loadavg."""
    try:
        one, five, fifteen = (float(v) for v in text.split()[:3])
    except ValueError:
        return None
    return one, five, fifteen


def parse_pid_stat(text: str) -> int | None:
    """utime + stime (clock ticks) from one /proc/<pid>/stat line.

    The command name is in parentheses and may itself hold spaces and parentheses, so the
    fields are counted after the last ')'.
    """
    _, sep, rest = text.rpartition(")")
    fields = rest.split()
    if not sep or len(fields) < 13:
        return None
    try:
        # After the name: state(3) ppid … utime(14) stime(15), 1-based as in proc(5).
        return int(fields[11]) + int(fields[12])
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------
# Reading /proc and /sys


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def read_cpu_times(proc: Path = Path("/proc")) -> dict[str, CpuTimes] | None:
    text = _read(proc / "stat")
    return parse_proc_stat(text) if text is not None else None


def read_process_ticks(
    proc: Path = Path("/proc"), *, exclude: Iterable[int] = ()
) -> dict[int, int]:
    """utime + stime of every readable process but `exclude`, by pid (clock ticks)."""
    skip = set(exclude)
    out: dict[int, int] = {}
    try:
        names = os.listdir(proc)
    except OSError:
        return out
    for name in names:
        if not name.isdigit() or int(name) in skip:
            continue
        text = _read(proc / name / "stat")
        ticks = parse_pid_stat(text) if text is not None else None
        if ticks is not None:
            out[int(name)] = ticks
    return out


def read_governors(sys_root: Path = Path("/sys")) -> tuple[str, ...] | None:
    """The distinct CPU frequency governors (e.g. ('performance',)); None if unreadable."""
    found = set()
    for path in sorted((sys_root / "devices/system/cpu").glob("cpu*/cpufreq/scaling_governor")):
        text = _read(path)
        if text and text.strip():
            found.add(text.strip())
    return tuple(sorted(found)) or None


def busy_by_core(
    *, window_s: float | None = None, proc: Path = Path("/proc")
) -> dict[int, int] | None:
    """Busy clock ticks of each CPU over a short window (for choosing idle cores); None when
    /proc/stat cannot be read. The window is `CORE_WINDOW_S` unless given (read when
    called, so a test suite can shorten it)."""
    if window_s is None:
        window_s = CORE_WINDOW_S
    first = read_cpu_times(proc)
    if not first:
        return None
    time.sleep(window_s)
    second = read_cpu_times(proc) or {}
    return {
        int(name[3:]): second[name].busy - first[name].busy
        for name in first
        if name != "cpu" and name in second and name[3:].isdigit()
    }


# ---------------------------------------------------------------------------------------
# The noise probe


def _spin(n: int | None = None) -> int:
    """The probe's fixed loop: `PROBE_LOOP` iterations unless given (read when called, so
    a test suite can shorten it)."""
    acc = 0
    for i in range(PROBE_LOOP if n is None else n):
        acc += i * i
    return acc


def noise_probe(
    *,
    samples: int = PROBE_SAMPLES,
    clock: Clock = time.perf_counter,
    work: Callable[[], object] = _spin,
) -> NoiseProbe:
    """Time `work` `samples` times (garbage collection off): about 0.1 s by default."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        out = []
        for _ in range(samples):
            t0 = clock()
            work()
            out.append(clock() - t0)
    finally:
        if enabled:
            gc.enable()
    return NoiseProbe(samples_s=tuple(out))


def interval_state(
    *,
    stat_before: Mapping[str, CpuTimes] | None,
    stat_after: Mapping[str, CpuTimes] | None,
    ticks_before: Mapping[int, int] | None,
    ticks_after: Mapping[int, int] | None,
    interval_s: float,
    ticks_per_s: float,
) -> dict[str, float | None]:
    """Steal and iowait shares and other processes' cores over one window (pure).

    A process that started during the window counts with all its time; one that ended
    cannot be counted.
    """
    steal = iowait = others = None
    if stat_before and stat_after and "cpu" in stat_before and "cpu" in stat_after:
        a, b = stat_before["cpu"], stat_after["cpu"]
        total = b.total - a.total
        if total > 0:
            steal = (b.steal - a.steal) / total
            iowait = (b.iowait - a.iowait) / total
    if ticks_before is not None and ticks_after and interval_s > 0 and ticks_per_s > 0:
        spent = sum(max(t - ticks_before.get(pid, 0), 0) for pid, t in ticks_after.items())
        others = spent / ticks_per_s / interval_s
    return {"steal": steal, "iowait": iowait, "others_cores": others}


def _ticks_per_s() -> float:
    try:
        return float(os.sysconf("SC_CLK_TCK"))
    except (AttributeError, ValueError, OSError):
        return 100.0


def capture(
    *,
    cores_used: int | None = None,
    probe_samples: int = PROBE_SAMPLES,
    proc: Path = Path("/proc"),
    sys_root: Path = Path("/sys"),
    clock: Clock = time.perf_counter,
    work: Callable[[], object] = _spin,
    exclude_pids: Sequence[int] | None = None,
) -> MachineState:
    """Snapshot the machine over the noise probe's window (about 0.1–0.2 s).

    /proc is read before and after the probe; the probe runs on the cores this process is
    allowed, so call it where the measurement runs (inside `limited_threads`).

    Args:
        cores_used: cores jitbench measures on; default all this process may use.
        exclude_pids: processes that are not "others" (default: this one).
    """
    if cores_used is None:
        try:
            cores_used = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores_used = os.cpu_count()
    own = list(exclude_pids) if exclude_pids is not None else [os.getpid()]
    stat0 = read_cpu_times(proc)
    ticks0 = read_process_ticks(proc, exclude=own) if stat0 is not None else None
    t0 = time.monotonic()
    probe = noise_probe(samples=probe_samples, clock=clock, work=work) if probe_samples else None
    interval = time.monotonic() - t0
    stat1 = read_cpu_times(proc) if stat0 is not None else None
    ticks1 = read_process_ticks(proc, exclude=own) if ticks0 is not None else None
    shares = interval_state(
        stat_before=stat0,
        stat_after=stat1,
        ticks_before=ticks0,
        ticks_after=ticks1,
        interval_s=interval,
        ticks_per_s=_ticks_per_s(),
    )
    load_text = _read(proc / "loadavg")
    load = parse_loadavg(load_text) if load_text is not None else None
    if load is None and hasattr(os, "getloadavg"):
        try:
            load = os.getloadavg()
        except OSError:
            load = None
    return MachineState(
        cores_total=os.cpu_count(),
        cores_used=cores_used,
        load_avg=load,
        interval_s=interval,
        steal=shares["steal"],
        iowait=shares["iowait"],
        others_cores=shares["others_cores"],
        governors=read_governors(sys_root),
        probe=probe,
    )
