"""Where a run's wall time went, from its run file alone.

Splits each run's wall time (finished_at - started_at, whole seconds) into:

- cold first calls: the cold eager and jit calls of the first process
  (trace, lower, compile, run; `compile.first_call_s`), what a fresh process pays before
  its first result;
- sampling, per process: the timed samples (samples x calls per sample x the sample's
  seconds per call) and the untimed re-warm calls before each (`timer.rewarm_calls` at
  the process's median call, the sampler's own rule; an estimate, since the sampler
  counts them from its first call);
  With `--clock cpu` the samples count CPU time, so on a busy machine this part is
  under its wall time and the rest over;
- the rest: start-ups of the worker processes, inputs, loading the first process's
  programs in the workers, warm-up and calibration, validation, checkpoints, the report.

Where the first two processes measured side by side (`--overlap`, the run's
`config.overlap`), the second's sampling ran during the first's, and the extra processes
ran in pairs: the second's sampling and the shorter of each pair's are left out of the
sum that the rest is the wall time less. The cold first calls counted are the first
process's (runs made from `115e5de` until the processes beside each other measured every
case on their own took turns to lead the groups, and read too long here).

    python tools/run_time_split.py reports/runs/*.json
"""

from __future__ import annotations

import argparse
import statistics
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from jitbench import load_run
from jitbench.config import SamplingPlan
from jitbench.measure.timer import rewarm_calls
from jitbench.results import Mode, Run


def _seconds(run: Run) -> float | None:
    if not run.finished_at:
        return None
    return (
        datetime.fromisoformat(run.finished_at) - datetime.fromisoformat(run.started_at)
    ).total_seconds()


@dataclass
class TimeSplit:
    """One run's wall time and what the record says of its parts (seconds)."""

    wall: float | None
    cold: dict[Mode, float]
    timed: list[float] = field(default_factory=list)  # per process
    rewarm: list[float] = field(default_factory=list)  # per process, estimated
    clock: str = "wall"  # what the samples count (--clock)
    overlap: bool = False  # the second process measured beside the first
    asked: int = 1  # --processes
    in_extra: int = 0  # measurements that extra processes measured again
    measurements: int = 0


def split(run: Run) -> TimeSplit:
    settings = run.config.settings
    plan = settings.plan if settings is not None else SamplingPlan()
    s = TimeSplit(
        wall=_seconds(run),
        cold={Mode.EAGER: 0.0, Mode.JIT: 0.0},
        clock=plan.clock,
        overlap=bool(settings is not None and settings.overlap),
        asked=settings.processes if settings is not None else run.processes,
        measurements=len(run.measurements),
    )
    for m in run.measurements:
        if m.compile is not None and m.compile.first_call_s and m.mode in s.cold:
            s.cold[m.mode] += m.compile.first_call_s
        counts = m.run_sample_counts or (len(m.samples_s),)
        s.in_extra += len(counts) > s.asked
        start = 0
        for index, count in enumerate(counts):
            part = m.samples_s[start : start + count]
            start += count
            if not part:
                continue
            while len(s.timed) <= index:
                s.timed.append(0.0)
                s.rewarm.append(0.0)
            per_call = statistics.median(part)
            s.timed[index] += sum(part) * m.calls_per_sample
            s.rewarm[index] += count * rewarm_calls(per_call, plan) * per_call
    return s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run JSON files")
    args = parser.parse_args()
    for path in args.runs:
        if path.name.endswith(".hlo.gz"):
            continue
        s = split(load_run(path))
        cold_s = sum(s.cold.values())
        sampling = sum(s.timed) + sum(s.rewarm)
        # Where processes overlapped, the sampling of the one beside another is not in the
        # wall: the second's, and the shorter of each pair of extra processes.
        parts = [t + r for t, r in zip(s.timed, s.rewarm, strict=True)]
        beside = 0.0
        if s.overlap and len(parts) > 1:
            beside = parts[1] + sum(
                min(parts[i : i + 2]) for i in range(s.asked, len(parts) - 1, 2)
            )
        wall = "?" if s.wall is None else f"{s.wall:.0f}"
        print(
            f"{path.name}: {wall} s wall, {s.asked} processes and {len(s.timed) - s.asked} "
            f"extra ({s.in_extra} of {s.measurements} measurements)"
        )
        print(
            f"  cold first calls:                {cold_s:5.1f} s  (eager "
            f"{s.cold[Mode.EAGER]:.1f}, jit {s.cold[Mode.JIT]:.1f})"
        )
        print(
            f"  sampling:                        {sampling:5.1f} s  (timed {sum(s.timed):.1f}, "
            f"re-warm calls {sum(s.rewarm):.1f}, estimated)"
            + ("; --clock cpu: CPU seconds, fewer than wall on a busy machine" * (s.clock == "cpu"))
        )
        for index, (t, r) in enumerate(zip(s.timed, s.rewarm, strict=True), start=1):
            note = "  beside the first (--overlap)" if s.overlap and index == 2 else ""
            if s.overlap and index > s.asked:
                note = "  two at a time (--overlap)"
            print(f"    process {index}: {t + r:5.1f} s  (timed {t:.1f}, re-warm {r:.1f}){note}")
        if s.wall is not None:
            rest = s.wall - cold_s - (sampling - beside)
            print(
                f"  the rest:                        {rest:5.1f} s  "
                "(start-ups, inputs, workers loading programs, warm-up, validation, "
                "checkpoints, report)"
            )


if __name__ == "__main__":
    main()
