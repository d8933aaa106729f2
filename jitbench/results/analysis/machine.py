"""The machine's verdict: was a run's machine busy, noisy or unstable, and what to say.

`jitbench.measure.machine` records snapshots of the machine before and after a run (load,
steal, other processes, a noise probe); this module judges them (`MachineState.verdict`),
and judges the run by its own processes' spread (`unstable`), for the banners and tags
every reader shows. Nothing here reads the machine.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from jitbench import formatting as fmt
from jitbench import stats
from jitbench.results.model import Run


@dataclass(frozen=True)
class ProcessSpread:
    """How far a run's processes measured the same code apart.

    `times`: the median, over the run's measurements with two or more processes, of how
    far two of its processes measured it apart (the mean over pairs of |log ratio| of
    their medians, as a factor less 1: 0.1 is 10 % apart), NumPy counted once per case
    however many devices it is filed under. `speedups`: the same of each eager and jit
    speedup over NumPy (None where the run holds none). A mean over pairs, so that more
    processes do not read as further apart."""

    processes: int
    measurements: int
    times: float
    speedups: float | None


# ---------------------------------------------------------------------------------------
# Thresholds of the verdict. Each names what it guards against.

#: More than 5 % of CPU time taken by the hypervisor for other guests: the guest's CPUs
#: are not running when jitbench's thread is runnable, so per-call times stretch at random.
BUSY_STEAL = 0.05
#: Other processes may use this much more than the cores jitbench leaves free before the
#: machine counts as busy: background daemons take a few % of a core, a fifth of a core is
#: a real competitor for the cores being measured.
BUSY_OTHERS_MARGIN_CORES = 0.2
#: The 1-minute load average may pass the cores by this much before the machine counts as
#: busy. The load counts jitbench's own processes, two at a time where they overlap
#: (`--overlap`), and its start-ups and pages beside them: back-to-back default runs with
#: nothing else running stayed within this margin, hogged ones did not (docs: validation,
#: "Figures behind the code").
BUSY_LOAD_MARGIN = 0.5
#: The noise probe's robust CV (1.4826·MAD/median) above which the machine is noisy. The
#: calmest snapshots read about 1 % (docs: validation, "Threads and the machine probe");
#: at 3 % single samples are disturbed by three times the ±1 % a default run asks of a median.
NOISY_CV = 0.03

#: A run whose processes measured the same code this far apart (`ProcessSpread.times`:
#: the median over its measurements of two processes' distance, the mean over pairs) is
#: unstable, as pyperf calls a benchmark whose standard deviation is 10 % of its mean or
#: more. The probe's few milliseconds miss what moves a machine over minutes: over default
#: runs on noisy days the probe's reading and the processes' distance were in no order, and
#: most runs were unstable by this measure (docs: validation, "Threads and the machine probe").
UNSTABLE_SPREAD = 0.10


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
        """Busy: more runnable tasks than cores over the last minute (plus
        `BUSY_LOAD_MARGIN`), other processes using more than the cores jitbench leaves
        free (plus `BUSY_OTHERS_MARGIN_CORES`), or steal above `BUSY_STEAL`. Noisy: the
        probe's robust CV above `NOISY_CV`."""
        busy: list[str] = []
        if (
            self.load_avg is not None
            and self.cores_total
            and self.load_avg[0] > self.cores_total + BUSY_LOAD_MARGIN
        ):
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


def clock_text(run: Run) -> str | None:
    """What the times count where it is not elapsed time ('--clock cpu'), else None."""
    settings = run.config.settings
    if settings is None or settings.plan.clock != "cpu":
        return None
    return (
        "times are the measuring process's CPU time (--clock cpu; GPU cases wall time): "
        "other processes on the core are left out, and so are waits"
    )


def processes_text(run: Run) -> str:
    """'2 processes', or '2 processes (3–4 for 41 of 80 measurements)' where extra
    processes measured the cases whose figures disagreed or were wide; ', two at a time,
    side by side' where they overlapped (`--overlap`; ', the first two side by side' for
    three processes or more, whose third ran alone)."""
    counts = [len(m.run_sample_counts) for m in run.measurements if m.run_sample_counts]
    if not counts:
        return "1 process"
    least, most = min(counts), max(counts)
    text = f"{least} process" + ("" if least == 1 else "es")
    settings = run.config.settings
    if settings is not None and settings.overlap and least >= 2:
        # The first two overlap, and the extra processes run in pairs: all of a default run.
        text += ", two at a time, side by side" if least == 2 else ", the first two side by side"
    if most > least:
        more = sum(1 for c in counts if c > least)
        extra = f"{least + 1}" if most == least + 1 else f"{least + 1}–{most}"
        text += f" ({extra} for {more} of {len(counts)} measurements)"
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
