"""Derived figures of the result model: paired speedups from lockstep rounds."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from jitbench import stats
from jitbench.results import Mode, Run, Status
from jitbench.results.analysis import analyse
from tests.results.test_codec import make_run

DRIFT = (1.0, 1.7, 0.9, 2.3, 1.1, 1.5, 0.95, 1.9, 1.2, 1.05)


def _drifting(run: Run) -> Run:
    """NumPy 2 ms and jit 1 ms per call, both slowed by the same factor in each round."""
    ms = []
    for m in run.measurements:
        base = 2e-3 if m.mode is Mode.NUMPY else 1e-3
        ms.append(replace(m, samples_s=tuple(base * d for d in DRIFT)))
    return replace(run, measurements=tuple(ms))


def test_runs_from_schema_1_3_on_are_paired_older_ones_are_not() -> None:
    assert make_run().paired
    assert not make_run(schema_version="1.2").paired
    assert not make_run(schema_version="garbage").paired


def test_a_paired_run_takes_the_speedup_round_by_round() -> None:
    run = _drifting(make_run())
    key = run.measurements[0].case.key
    speedup = analyse(run).speedup(key, Mode.JIT)
    assert speedup == stats.Ratio(pytest.approx(2.0), pytest.approx(2.0), pytest.approx(2.0))


def test_an_older_run_keeps_the_unpaired_ratio_of_medians() -> None:
    run = _drifting(make_run(schema_version="1.2"))
    key = run.measurements[0].case.key
    speedup = analyse(run).speedup(key, Mode.JIT)
    assert speedup is not None and speedup.value == pytest.approx(2.0)
    assert speedup.low is not None and speedup.high is not None
    assert speedup.high / speedup.low > 1.2  # the drift is not cancelled without pairing


def test_unequal_sample_counts_fall_back_to_unpaired() -> None:
    run = _drifting(make_run())
    numpy_m, jit_m = run.measurements
    run = replace(run, measurements=(numpy_m, replace(jit_m, samples_s=jit_m.samples_s[:-1])))
    speedup = analyse(run).speedup(numpy_m.case.key, Mode.JIT)
    assert speedup is not None and speedup.high != speedup.low


def _two_process_run(spread_by_mode: dict[Mode, list[float]], device: str = "cpu:0") -> Run:
    """Cases w0..w(n-1) on `device`, each measured in two processes of two rounds: NumPy
    2 ms, and each JAX mode 1 ms in the first process and 1 ms × (1 + its spread for the
    case) in the second, so a mode's speedup moves by that much from process to process."""
    template = make_run().measurements[0]
    ms = []
    n_cases = len(next(iter(spread_by_mode.values())))
    for i in range(n_cases):
        case = replace(template.case, workload=f"w{i}", device=device)
        ms.append(replace(template, case=case, samples_s=(2e-3,) * 4, run_sample_counts=(2, 2)))
        for mode, spreads in spread_by_mode.items():
            later = 1e-3 * (1 + spreads[i])
            ms.append(
                replace(
                    template,
                    case=case,
                    mode=mode,
                    samples_s=(1e-3, 1e-3, later, later),
                    run_sample_counts=(2, 2),
                )
            )
    return make_run(measurements=tuple(ms))


def test_each_mode_shrinks_toward_its_own_typical_process_spread() -> None:
    # Eager moves 20-30 % between processes, jit 1-2 %: pooled, jit's intervals would take
    # eager's spread and eager's jit's.
    eager = [0.2, 0.25, 0.3, 0.22]
    jit = [0.01, 0.015, 0.02, 0.012]
    run = _two_process_run({Mode.EAGER: eager, Mode.JIT: jit})
    for mode, spreads in ((Mode.EAGER, eager), (Mode.JIT, jit)):
        alone = _two_process_run({mode: spreads})  # the same mode with no other beside it
        for i in range(len(spreads)):
            key = (f"w{i}", "S", "cpu:0", "float32")
            assert analyse(run).speedup(key, mode) == analyse(alone).speedup(key, mode)
    key = ("w0", "S", "cpu:0", "float32")
    jit_r, eager_r = analyse(run).speedup(key, Mode.JIT), analyse(run).speedup(key, Mode.EAGER)
    assert jit_r is not None and eager_r is not None
    assert jit_r.high / jit_r.low < 1.1 < eager_r.high / eager_r.low


def test_each_device_shrinks_toward_its_own_typical_process_spread() -> None:
    # A GPU's jit speedups moved 1.6x as much between processes as its host CPU's in a real
    # run; here 20-30 % against 1-2 %: pooled over the run, the CPU's intervals would take
    # the GPU's spread and the GPU's the CPU's.
    cpu, gpu = [0.01, 0.015, 0.02, 0.012], [0.2, 0.25, 0.3, 0.22]
    alone = {d: _two_process_run({Mode.JIT: s}, d) for d, s in (("cpu:0", cpu), ("gpu:0", gpu))}
    both = make_run(measurements=alone["cpu:0"].measurements + alone["gpu:0"].measurements)
    for run in alone.values():
        for case in run.cases():
            assert analyse(both).speedup(case.key, Mode.JIT) == analyse(run).speedup(
                case.key, Mode.JIT
            )
    cpu_r = analyse(both).speedup(("w0", "S", "cpu:0", "float32"), Mode.JIT)
    gpu_r = analyse(both).speedup(("w0", "S", "gpu:0", "float32"), Mode.JIT)
    assert cpu_r is not None and gpu_r is not None
    assert cpu_r.high / cpu_r.low < 1.1 < gpu_r.high / gpu_r.low


def test_the_process_spread_is_the_median_distance_between_processes() -> None:
    # NumPy never moves; jit's second process is 10/20/30/40 % slower case by case.
    run = _two_process_run({Mode.JIT: [0.1, 0.2, 0.3, 0.4]})
    spread = analyse(run).process_spread
    assert spread is not None and (spread.processes, spread.measurements) == (2, 8)
    # Times: four NumPy measurements 0 % apart and jit's 10-40 %: the median of eight.
    assert spread.times == pytest.approx(0.05)
    # Speedups: jit's only, 10-40 % apart.
    assert spread.speedups == pytest.approx(0.25)


def test_a_run_of_one_process_has_no_process_spread() -> None:
    assert analyse(_drifting(make_run())).process_spread is None


def test_failed_measurements_are_left_out_of_the_process_spread() -> None:
    run = _two_process_run({Mode.JIT: [0.1, 0.2, 0.3, 0.4]})
    ms = [
        replace(m, status=Status.ERROR) if m.mode is Mode.JIT and m.case.workload == "w3" else m
        for m in run.measurements
    ]
    spread = analyse(replace(run, measurements=tuple(ms))).process_spread
    assert spread is not None and spread.measurements == 7
    assert spread.speedups == pytest.approx(0.2)


def test_the_process_spread_is_a_mean_over_pairs_of_processes_not_their_range() -> None:
    """Slowest ÷ fastest widens with every process added, so `--processes 4` (the hint
    for a split) would have read as less stable than two."""
    template = make_run().measurements[0]
    three = replace(
        template, samples_s=(1e-3, 1e-3, 1e-3, 1e-3, 1.3e-3, 1.3e-3), run_sample_counts=(2, 2, 2)
    )
    spread = analyse(make_run(measurements=(three,))).process_spread
    assert spread is not None and spread.processes == 3
    assert spread.times == pytest.approx(math.expm1(2 / 3 * math.log(1.3)))  # 19 %, not 30 %


def test_numpy_filed_under_two_devices_counts_once_in_the_process_spread() -> None:
    run = _two_process_run({Mode.JIT: [0.1, 0.2, 0.3, 0.4]})
    on_gpu = tuple(replace(m, case=replace(m.case, device="gpu:0")) for m in run.measurements)
    both = make_run(measurements=run.measurements + on_gpu)
    spread = analyse(both).process_spread
    assert spread is not None and spread.measurements == 12  # 8 jit, 4 NumPy: not 8


def test_get_takes_a_case_or_its_key_and_a_mode_or_its_name() -> None:
    run = make_run()
    numpy_m, jit_m = run.measurements
    case = run.cases()[0]
    assert run.get(case, "jit") is jit_m
    assert run.get(case.key, Mode.JIT) is jit_m
    assert run.get(case, Mode.NUMPY) is numpy_m and run.get(case, "eager") is None
    assert run.device_peak(case) == run.device_peak(case.key)
    with pytest.raises(ValueError, match="'fast'"):
        run.get(case, "fast")


def test_a_run_prints_as_one_line_not_its_samples() -> None:
    run = make_run()
    text = repr(run)
    assert "\n" not in text and len(text) < 120 and text.startswith(f"Run({run.run_id}, ")
    assert str(run) == text
