"""The machine's state: /proc parsers on constructed text, the interval shares on constructed
readings, the noise probe with a fake clock, the verdict's thresholds, a whole snapshot from
a fake /proc and /sys tree, and the banner runs carry (old runs: none)."""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import pytest

from jitbench.measure import machine
from jitbench.measure.machine import CpuTimes
from jitbench.measure.threads import choose_cores
from jitbench.results.analysis import machine as verdict
from jitbench.results.analysis.machine import (
    BUSY_LOAD_MARGIN,
    BUSY_OTHERS_MARGIN_CORES,
    BUSY_STEAL,
    NOISY_CV,
    MachineState,
    NoiseProbe,
)

PROC_STAT = """\
cpu  1000 10 300 5000 40 0 5 50 0 0
cpu0 600 5 150 2400 20 0 3 25 0 0
cpu1 400 5 150 2600 20 0 2 25 0 0
intr 12345 0 0
ctxt 999
cpu2 1 2 3
"""


def test_proc_stat_lines_per_cpu_and_old_kernels_short_lines() -> None:
    cpus = machine.parse_proc_stat(PROC_STAT)
    assert set(cpus) == {"cpu", "cpu0", "cpu1", "cpu2"}
    all_cpus = cpus["cpu"]
    assert all_cpus == CpuTimes(1000, 10, 300, 5000, 40, 0, 5, 50)
    assert all_cpus.total == 6405 and all_cpus.busy == 6405 - 5000 - 40
    assert cpus["cpu2"] == CpuTimes(1, 2, 3, 0, 0, 0, 0, 0)  # missing columns count as 0


def test_loadavg_and_a_malformed_one() -> None:
    assert machine.parse_loadavg("0.52 1.03 2.50 2/345 6789\n") == (0.52, 1.03, 2.5)
    assert machine.parse_loadavg("garbage") is None


def test_pid_stat_counts_fields_after_the_last_parenthesis() -> None:
    # A command name with spaces and parentheses: fields are counted after the last ')'.
    line = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 70 30 0 0 20 0 1 0 9 1 1"
    assert machine.parse_pid_stat(line) == 70 + 30
    assert machine.parse_pid_stat("4242 (short) S 1 2") is None
    assert machine.parse_pid_stat("no parenthesis here") is None


def test_interval_shares_from_two_readings() -> None:
    before = {"cpu": CpuTimes(1000, 0, 0, 1000, 0, 0, 0, 0)}
    after = {"cpu": CpuTimes(1100, 0, 0, 1060, 20, 0, 0, 20)}  # 200 ticks in the window
    shares = machine.interval_state(
        stat_before=before,
        stat_after=after,
        ticks_before={1: 500, 2: 100},
        ticks_after={1: 530, 2: 100, 3: 20},  # pid 3 started in the window: all of it counts
        interval_s=0.5,
        ticks_per_s=100,
    )
    assert shares["steal"] == pytest.approx(20 / 200)
    assert shares["iowait"] == pytest.approx(20 / 200)
    assert shares["others_cores"] == pytest.approx((30 + 20) / 100 / 0.5)  # one core busy


def test_interval_shares_are_none_when_unreadable() -> None:
    shares = machine.interval_state(
        stat_before=None,
        stat_after=None,
        ticks_before=None,
        ticks_after=None,
        interval_s=0.1,
        ticks_per_s=100,
    )
    assert shares == {"steal": None, "iowait": None, "others_cores": None}


class FakeClock:
    """Returns scripted durations: each `clock()` pair brackets one sample."""

    def __init__(self, durations: list[float]) -> None:
        self.times = list(itertools.accumulate([0.0] + [x for d in durations for x in (d, 0.0)]))
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        return self.times[self.calls - 1]


def test_noise_probe_times_the_work_with_the_injected_clock() -> None:
    durations = [0.005] * 17 + [0.0055, 0.0045, 0.010]
    calls: list[int] = []
    probe = machine.noise_probe(
        samples=20, clock=FakeClock(durations), work=lambda: calls.append(1)
    )
    assert len(calls) == 20
    assert probe.samples_s == pytest.approx(tuple(durations))
    assert probe.median_s == pytest.approx(0.005)
    assert probe.robust_cv == pytest.approx(0.0)  # more than half the samples are equal
    assert probe.max_over_min == pytest.approx(0.010 / 0.0045)


def test_robust_cv_is_scaled_mad_over_median() -> None:
    probe = NoiseProbe(samples_s=(0.9, 0.95, 1.0, 1.05, 1.1))
    # median 1.0, absolute deviations 0.1 0.05 0 0.05 0.1 -> MAD 0.05
    assert probe.robust_cv == pytest.approx(1.4826 * 0.05)
    assert NoiseProbe(samples_s=()).robust_cv is None


def quiet(**changes: object) -> MachineState:
    base: dict[str, object] = {
        "cores_total": 2,
        "cores_used": 1,
        "load_avg": (0.5, 0.4, 0.3),
        "interval_s": 0.1,
        "steal": 0.0,
        "iowait": 0.0,
        "others_cores": 0.05,
        "governors": ("performance",),
        "probe": NoiseProbe(samples_s=(0.005,) * 20),
    }
    return MachineState(**{**base, **changes})  # type: ignore[arg-type]


def test_a_quiet_machine_is_neither_busy_nor_noisy() -> None:
    verdict = quiet().verdict()
    assert verdict.quiet and verdict.label == "quiet" and verdict.reasons == ()


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"load_avg": (2.0 + BUSY_LOAD_MARGIN + 0.01, 1.0, 0.5)}, "load 2.51 on 2 cores"),
        # One core left free; another process keeps more than it (and the margin) busy.
        ({"others_cores": 1.0 + BUSY_OTHERS_MARGIN_CORES + 0.01}, "other processes used 1.21"),
        # Using every core, a fifth of a core of others is already a competitor.
        ({"cores_used": 2, "others_cores": BUSY_OTHERS_MARGIN_CORES + 0.01}, "0 left free"),
        ({"steal": BUSY_STEAL + 0.01}, "CPU steal 6 %"),
    ],
)
def test_busy_when_load_others_or_steal_exceed_their_thresholds(
    changes: dict[str, object], reason: str
) -> None:
    verdict = quiet(**changes).verdict()
    assert verdict.busy and not verdict.noisy and verdict.label == "busy"
    assert any(reason in r for r in verdict.reasons), verdict.reasons


def test_just_under_the_thresholds_is_quiet() -> None:
    state = quiet(
        load_avg=(2.0 + BUSY_LOAD_MARGIN - 0.01,) * 3,  # about as many tasks as cores
        others_cores=1.0 + BUSY_OTHERS_MARGIN_CORES - 0.01,
        steal=BUSY_STEAL,
    )
    assert state.verdict().quiet


def test_noisy_when_the_probe_spreads_more_than_the_floor() -> None:
    spread = NoiseProbe(samples_s=(0.9, 0.95, 1.0, 1.05, 1.1))  # robust CV 7.4 %
    verdict = quiet(probe=spread).verdict()
    assert verdict.noisy and not verdict.busy and verdict.label == "noisy"
    assert verdict.reasons == ("noise probe ±7.4 % (over ±3 %)",)
    assert spread.robust_cv is not None and spread.robust_cv > NOISY_CV


def test_unknown_figures_never_make_a_verdict() -> None:
    assert MachineState().verdict().quiet
    assert MachineState().summary == "not readable on this system"


def test_summary_names_every_figure() -> None:
    text = quiet(iowait=0.02).summary
    assert text == (
        "load 0.50/0.40/0.30 on 2 cores · others 0.05 cores · steal 0 % · iowait 2 % · "
        "governor performance · noise floor ±0 % (probe 5 ms, max/min 1.00)"
    )


def test_dict_round_trip_and_garbage_reads_as_unknown() -> None:
    state = quiet()
    again = MachineState.from_dict(state.to_dict())
    assert again == state
    garbage = MachineState.from_dict(
        {"cores_total": "two", "load_avg": [1, 2], "steal": float("nan"), "probe_samples_s": "x"}
    )
    assert garbage == MachineState()


def fake_tree(tmp_path: Path) -> tuple[Path, Path]:
    proc, sys_root = tmp_path / "proc", tmp_path / "sys"
    proc.mkdir()
    (proc / "stat").write_text("cpu  100 0 0 100 0 0 0 0 0 0\ncpu0 100 0 0 100 0 0 0 0 0 0\n")
    (proc / "loadavg").write_text("3.00 2.00 1.00 1/100 42\n")
    for pid, ticks in ((101, 50), (os.getpid(), 1000)):
        (proc / str(pid)).mkdir()
        (proc / str(pid) / "stat").write_text(f"{pid} (x) S 1 1 1 0 -1 0 0 0 0 0 {ticks} 0 0 0\n")
    (proc / "self").mkdir()  # not a pid: ignored
    for cpu, governor in ((0, "powersave"), (1, "powersave")):
        d = sys_root / f"devices/system/cpu/cpu{cpu}/cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(f"{governor}\n")
    return proc, sys_root


def test_capture_reads_a_fake_proc_and_sys_tree(tmp_path: Path) -> None:
    proc, sys_root = fake_tree(tmp_path)
    step = iter(range(100))

    def work() -> None:
        # The machine moves on while the probe runs: another process and the hypervisor.
        if next(step) == 0:
            (proc / "stat").write_text("cpu  180 0 0 100 0 0 0 20 0 0\n")
            (proc / "101" / "stat").write_text("101 (x) S 1 1 1 0 -1 0 0 0 0 0 90 0 0 0\n")
            (proc / str(os.getpid()) / "stat").write_text(
                f"{os.getpid()} (x) S 1 1 1 0 -1 0 0 0 0 0 9000 0 0 0\n"
            )

    state = machine.capture(cores_used=1, probe_samples=5, proc=proc, sys_root=sys_root, work=work)
    assert state.cores_used == 1 and state.cores_total == os.cpu_count()
    assert state.load_avg == (3.0, 2.0, 1.0)
    assert state.steal == pytest.approx(20 / 100)
    assert state.iowait == 0
    assert state.governors == ("powersave",)
    assert state.probe is not None and len(state.probe.samples_s) == 5
    # Only pid 101's 40 ticks count: this process is not "others".
    assert state.interval_s is not None and state.interval_s > 0
    assert state.others_cores == pytest.approx(40 / os.sysconf("SC_CLK_TCK") / state.interval_s)
    assert state.verdict().busy  # steal 20 %


def test_capture_without_proc_or_sys_gives_none_not_errors(tmp_path: Path) -> None:
    state = machine.capture(
        probe_samples=0, proc=tmp_path / "none", sys_root=tmp_path / "none", work=lambda: None
    )
    assert state.steal is None and state.others_cores is None and state.governors is None
    assert state.probe is None


def test_a_real_snapshot_is_quick_and_complete_on_linux() -> None:
    state = machine.capture(cores_used=1)
    # The default probe (`PROBE_SAMPLES` as defined: tests/conftest.py shortens the runs').
    default = machine.capture.__kwdefaults__["probe_samples"]
    assert state.probe is not None and len(state.probe.samples_s) == default
    assert state.interval_s is not None and state.interval_s < 2.0, state
    if Path("/proc/stat").exists():
        assert state.steal is not None and state.others_cores is not None
        assert state.load_avg is not None


def test_banner_only_for_busy_or_noisy_runs_and_never_for_old_ones() -> None:
    assert verdict.banner({}) is None  # a run from before the snapshots
    calm = {"machine_before": quiet().to_dict(), "machine_after": quiet().to_dict()}
    assert verdict.banner(calm) is None
    noisy_probe = NoiseProbe(samples_s=(0.9, 0.95, 1.0, 1.05, 1.1))
    env = {
        "machine_before": quiet().to_dict(),
        "machine_after": quiet(load_avg=(4.5, 3.0, 2.0), probe=noisy_probe).to_dict(),
    }
    assert verdict.banner(env) == (
        "busy and noisy machine (after the run): load 4.50 on 2 cores · "
        "noise floor ±0 % before, ±7.4 % after"
    )


def test_a_run_is_unstable_when_its_processes_measured_the_same_code_far_apart() -> None:
    from jitbench.results.analysis import ProcessSpread

    assert verdict.unstable(None) is None  # one process: nothing to tell
    # Judged on the figure shown, to one decimal: 9.94 % reads 9.9 %, 9.96 % reads 10.0 %.
    below = ProcessSpread(processes=2, measurements=120, times=0.0994, speedups=0.05)
    assert verdict.unstable(below) is None
    at = ProcessSpread(processes=2, measurements=120, times=0.0996, speedups=0.1)
    assert verdict.unstable(at) == (
        "its 2 processes measured the same code a median 10.0 % apart (speedups 10.0 %): "
        "a repeat run may differ as much"
    )
    unpaired = ProcessSpread(processes=3, measurements=9, times=1.25, speedups=None)
    assert verdict.spread_text(unpaired) == "measured the same code a median 125.0 % apart"


def test_choose_cores_takes_the_least_busy_then_rotates_ties_by_start() -> None:
    assert choose_cores(1, (0, 1, 2, 3), {0: 5, 1: 0, 2: 5, 3: 0}) == {1}
    assert choose_cores(2, (0, 1, 2, 3), {0: 5, 1: 0, 2: 5, 3: 1}) == {1, 3}
    assert choose_cores(2, (2, 3, 5), None) == {2, 3}  # unknown: the first ones
    assert choose_cores(1, (4, 6), {}) == {4}
    # Runs started together (pids 1000 and 1001) take different idle cores.
    idle = {0: 0, 1: 0}
    assert {min(choose_cores(1, (0, 1), idle, start=pid)) for pid in (1000, 1001)} == {0, 1}
    assert choose_cores(1, (0, 1, 2), {0: 0, 1: 9, 2: 0}, start=1) == {2}  # busy 1 skipped
