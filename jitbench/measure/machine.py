"""What the machine is doing while jitbench measures: load, steal, other processes, noise.

A run takes `capture` once before its first case and once after its last (stored in the
run's environment as `machine_before` / `machine_after`), so a figure measured on a busy
or noisy machine says so. The figures come from /proc and /sys where they are readable
and are None where they are not (another OS, a container that hides them), as pyperf's
`system show` and `pyperf check` read them. The short noise probe times a fixed pure-Python
loop on the cores jitbench measures on: its spread is the noise floor no measurement of
this run can beat. Nothing here prints.
"""

from __future__ import annotations

import gc
import math
import os
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jitbench import formatting as fmt
from jitbench import stats

if TYPE_CHECKING:
    from jitbench.results.analysis import ProcessSpread

# ---------------------------------------------------------------------------------------
# Thresholds of the verdict. Each names what it guards against.

#: More than 5 % of CPU time taken by the hypervisor for other guests: the VM's vCPUs are
#: not running when jitbench's thread is runnable, so per-call times stretch at random.
BUSY_STEAL = 0.05
#: Other processes may use this much more than the cores jitbench leaves free before the
#: machine counts as busy: background daemons take a few % of a core, a fifth of a core is
#: a real competitor for the cores being measured.
BUSY_OTHERS_MARGIN_CORES = 0.2
#: The noise probe's robust CV (1.4826·MAD/median) above which the machine is noisy: at
#: 3 % single samples are disturbed by three times the ±1 % a default run asks of a
#: median, well above what the calmest snapshots read.
NOISY_CV = 0.03

#: A run whose processes measured the same code this far apart (`ProcessSpread.times`:
#: the median over its measurements of two processes' distance, the mean over pairs) is
#: unstable, as pyperf calls a benchmark whose standard deviation is 10 % of its mean or
#: more. The probe's few milliseconds miss what moves a machine over minutes, so it does
#: not foretell this (docs: validation, "Threads and the machine probe").
UNSTABLE_SPREAD = 0.10

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
    *, window_s: float = CORE_WINDOW_S, proc: Path = Path("/proc")
) -> dict[int, int] | None:
    """Busy clock ticks of each CPU over a short window (for choosing idle cores); None when
    /proc/stat cannot be read."""
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


def _spin(n: int = PROBE_LOOP) -> int:
    acc = 0
    for i in range(n):
        acc += i * i
    return acc


@dataclass(frozen=True, kw_only=True)
class NoiseProbe:
    """Seconds per sample of one fixed loop, timed back to back."""

    samples_s: tuple[float, ...]

    @property
    def median_s(self) -> float | None:
        return statistics.median(self.samples_s) if self.samples_s else None

    @property
    def robust_cv(self) -> float | None:
        """1.4826·MAD / median: the standard deviation's robust twin, relative."""
        med = self.median_s
        if not med or med <= 0:
            return None
        return stats.robust_sd(self.samples_s) / med

    @property
    def max_over_min(self) -> float | None:
        low = min(self.samples_s, default=0.0)
        return max(self.samples_s) / low if low > 0 else None


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


# ---------------------------------------------------------------------------------------
# The snapshot and its verdict


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """Whether the machine was busy or noisy, and the figures that say so (for people)."""

    busy: bool
    noisy: bool
    reasons: tuple[str, ...]

    @property
    def quiet(self) -> bool:
        return not (self.busy or self.noisy)

    @property
    def label(self) -> str:
        """'busy and noisy', 'busy', 'noisy' or 'quiet'."""
        words = [w for w, on in (("busy", self.busy), ("noisy", self.noisy)) if on]
        return " and ".join(words) or "quiet"


@dataclass(frozen=True, kw_only=True)
class MachineState:
    """What the system was doing over a short window (None: not readable here).

    Attributes:
        cores_total: CPUs of the machine (`os.cpu_count()`).
        cores_used: cores jitbench measures on (those it is pinned to).
        load_avg: 1, 5 and 15 minute load averages (runnable tasks, jitbench included).
        interval_s: length of the window the shares below are measured over.
        steal: share of all CPU time the hypervisor gave to other guests in the window.
        iowait: share of all CPU time idle waiting for I/O in the window.
        others_cores: CPU time of every other process in the window, in cores (1.0 = one
            core kept busy).
        governors: the CPU frequency governors in use.
        probe: the noise probe, timed on the cores jitbench measures on.
    """

    cores_total: int | None = None
    cores_used: int | None = None
    load_avg: tuple[float, float, float] | None = None
    interval_s: float | None = None
    steal: float | None = None
    iowait: float | None = None
    others_cores: float | None = None
    governors: tuple[str, ...] | None = None
    probe: NoiseProbe | None = None

    @property
    def spare_cores(self) -> int | None:
        """Cores jitbench leaves to everything else."""
        if self.cores_total is None:
            return None
        return max(self.cores_total - (self.cores_used or self.cores_total), 0)

    @property
    def noise_floor(self) -> float | None:
        """The probe's robust CV (0.02 = ±2 %)."""
        return self.probe.robust_cv if self.probe is not None else None

    def verdict(self) -> Verdict:
        """Busy: more runnable tasks than cores over the last minute, other processes using
        more than the cores jitbench leaves free (plus `BUSY_OTHERS_MARGIN_CORES`), or steal
        above `BUSY_STEAL`. Noisy: the probe's robust CV above `NOISY_CV`."""
        busy: list[str] = []
        if self.load_avg is not None and self.cores_total and self.load_avg[0] > self.cores_total:
            busy.append(f"load {self.load_avg[0]:.2f} on {self.cores_total} cores")
        spare = self.spare_cores
        if (
            self.others_cores is not None
            and spare is not None
            and self.others_cores > spare + BUSY_OTHERS_MARGIN_CORES
        ):
            busy.append(
                f"other processes used {self.others_cores:.2f} cores "
                f"({spare} left free by jitbench)"
            )
        if self.steal is not None and self.steal > BUSY_STEAL:
            busy.append(f"CPU steal {fmt.percent(self.steal)}")
        floor = self.noise_floor
        noisy = floor is not None and floor > NOISY_CV
        reasons = list(busy)
        if noisy:
            reasons.append(f"noise probe ±{fmt.percent(floor)} (over ±{fmt.percent(NOISY_CV)})")
        return Verdict(busy=bool(busy), noisy=noisy, reasons=tuple(reasons))

    @property
    def summary(self) -> str:
        """One line: 'load 0.41/0.38/0.30 on 2 cores · others 0.05 cores · steal 0 % ·
        noise floor ±0.6 % (probe 4.1 ms, max/min 1.04)'."""
        parts = []
        if self.load_avg is not None:
            cores = f" on {self.cores_total} cores" if self.cores_total else ""
            parts.append("load " + "/".join(f"{v:.2f}" for v in self.load_avg) + cores)
        if self.others_cores is not None:
            parts.append(f"others {self.others_cores:.2f} cores")
        if self.steal is not None:
            parts.append(f"steal {fmt.percent(self.steal)}")
        if self.iowait is not None and self.iowait >= 0.01:
            parts.append(f"iowait {fmt.percent(self.iowait)}")
        if self.governors:
            parts.append(f"governor {', '.join(self.governors)}")
        if self.probe is not None and self.noise_floor is not None:
            ratio = self.probe.max_over_min
            spread = f", max/min {ratio:.2f}" if ratio is not None else ""
            parts.append(
                f"noise floor ±{fmt.percent(self.noise_floor)} "
                f"(probe {fmt.seconds(self.probe.median_s)}{spread})"
            )
        return " · ".join(parts) or "not readable on this system"

    def to_dict(self) -> dict[str, Any]:
        return {
            "cores_total": self.cores_total,
            "cores_used": self.cores_used,
            "load_avg": list(self.load_avg) if self.load_avg is not None else None,
            "interval_s": self.interval_s,
            "steal": self.steal,
            "iowait": self.iowait,
            "others_cores": self.others_cores,
            "governors": list(self.governors) if self.governors is not None else None,
            "probe_samples_s": list(self.probe.samples_s) if self.probe is not None else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MachineState:
        """Read `to_dict` output; a missing or malformed field is None (never raises)."""

        def number(key: str) -> float | None:
            v = data.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                return None
            return float(v)

        def count(key: str) -> int | None:
            v = data.get(key)
            return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None

        def numbers(key: str) -> tuple[float, ...] | None:
            v = data.get(key)
            if not isinstance(v, list) or not all(
                isinstance(x, (int, float)) and not isinstance(x, bool) for x in v
            ):
                return None
            return tuple(float(x) for x in v)

        load = numbers("load_avg")
        probe = numbers("probe_samples_s")
        governors = data.get("governors")
        return cls(
            cores_total=count("cores_total"),
            cores_used=count("cores_used"),
            load_avg=(load[0], load[1], load[2]) if load is not None and len(load) == 3 else None,
            interval_s=number("interval_s"),
            steal=number("steal"),
            iowait=number("iowait"),
            others_cores=number("others_cores"),
            governors=tuple(str(g) for g in governors) if isinstance(governors, list) else None,
            probe=NoiseProbe(samples_s=probe) if probe else None,
        )


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


def from_environment(env: Mapping[str, Any], key: str) -> MachineState | None:
    """The snapshot a run recorded under `key` ('machine_before' / 'machine_after');
    None for runs written before jitbench took them."""
    value = env.get(key)
    return MachineState.from_dict(value) if isinstance(value, Mapping) else None


def _snapshots(env: Mapping[str, Any]) -> dict[str, MachineState]:
    """The run's snapshots by when they were taken ('before', 'after'), those it has."""
    return {
        when: s
        for when, key in (("before", "machine_before"), ("after", "machine_after"))
        if (s := from_environment(env, key)) is not None
    }


def _overall(verdicts: Iterable[Verdict]) -> Verdict:
    """Busy if any snapshot was, noisy if any was (no reasons: each snapshot has its own)."""
    verdicts = list(verdicts)
    return Verdict(
        busy=any(v.busy for v in verdicts), noisy=any(v.noisy for v in verdicts), reasons=()
    )


def banner(env: Mapping[str, Any]) -> str | None:
    """One line when the run's machine was busy or noisy before or after it, else None, e.g.
    'busy and noisy machine (before and after the run): load 4.56 on 2 cores · noise floor
    ±3.8 % before, ±5.1 % after'. Runs written before jitbench took snapshots give None."""
    states = _snapshots(env)
    verdicts = {when: s.verdict() for when, s in states.items()}
    bad = [when for when, v in verdicts.items() if not v.quiet]
    if not bad:
        return None
    label = _overall(verdicts.values()).label
    # The busy reasons of the snapshot with more of them (the later one on a tie).
    worst = max(bad, key=lambda w: (len(verdicts[w].reasons), w == "after"))
    reasons = [r for r in verdicts[worst].reasons if not r.startswith("noise probe")]
    floors = [
        f"±{fmt.percent(f)} {w}" for w, s in states.items() if (f := s.noise_floor) is not None
    ]
    if floors:
        reasons.append(f"noise floor {', '.join(floors)}")
    return f"{label} machine ({' and '.join(bad)} the run): {' · '.join(reasons)}"


def apart_percent(value: float) -> str:
    """A process spread as shown, to one decimal ('8.6 %', '125.0 %'), so that the verdict
    (`unstable`) is made on the figure the reader sees."""
    return f"{value * 100:.1f} %"


def spread_text(spread: ProcessSpread) -> str:
    """'measured the same code a median 8.6 % apart (speedups 6.8 %)', said of a run's
    processes."""
    text = f"measured the same code a median {apart_percent(spread.times)} apart"
    if spread.speedups is not None:
        text += f" (speedups {apart_percent(spread.speedups)})"
    return text


def unstable(spread: ProcessSpread | None) -> str | None:
    """Why the run is unstable (its processes `UNSTABLE_SPREAD` or more apart, as shown to
    one decimal), or None."""
    if spread is None or round(spread.times * 100, 1) < UNSTABLE_SPREAD * 100:
        return None
    return (
        f"its {spread.processes} processes {spread_text(spread)}: a repeat run may differ as much"
    )


def run_flags(env: Mapping[str, Any], spread: ProcessSpread | None) -> list[str]:
    """The words of `run_banner` as tags for a list of runs: 'busy' and 'noisy' (either
    snapshot), 'unstable' (its processes far apart)."""
    overall = _overall(s.verdict() for s in _snapshots(env).values())
    return [
        word
        for word, on in (
            ("busy", overall.busy),
            ("noisy", overall.noisy),
            ("unstable", unstable(spread) is not None),
        )
        if on
    ]


def run_banner(env: Mapping[str, Any], spread: ProcessSpread | None) -> str | None:
    """`banner` of the run's snapshots, then why the run is unstable (`unstable`), in one
    line; None when neither has anything to say."""
    warning = banner(env)
    reason = unstable(spread)
    if reason is None:
        return warning
    return f"{warning} · unstable: {reason}" if warning else f"unstable run: {reason}"
