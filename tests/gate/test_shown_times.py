"""`compare` takes its times and ratios from what the runs show (`results.analysis`), so
a comparison's base and new times are the runs' own and its change is their quotient, in
every format it writes."""

from __future__ import annotations

import csv
import io
import math
from dataclasses import replace

import pytest

from jitbench.gate import compare
from jitbench.render.comparison import comparison_csv
from jitbench.report.comparison import align
from jitbench.results import Mode
from jitbench.results.analysis import analyse, time_ratio
from tests.gate.builders import make_run, meas, spread

ORDER = (3, 7, 1, 9, 0, 5, 2, 8, 4, 6)  # jit's rounds out of step with NumPy's


def _process(center: float, shuffled: bool) -> tuple[float, ...]:
    xs = spread(center, len(ORDER), rel=0.3)
    return tuple(xs[i] for i in ORDER) if shuffled else xs


def _run(run_id: str, jit_center: float, processes: int) -> object:
    numpy = tuple(x for p in range(processes) for x in _process(1e-3 * (1 + 0.1 * p), False))
    jit = tuple(x for p in range(processes) for x in _process(jit_center * (1 + 0.07 * p), True))
    counts = (len(ORDER),) * processes if processes > 1 else ()
    return make_run(
        replace(meas(mode=Mode.NUMPY, samples=numpy), run_sample_counts=counts),
        replace(meas(mode=Mode.JIT, samples=jit), run_sample_counts=counts),
        run_id=run_id,
    )


@pytest.mark.parametrize("processes", [1, 2, 3])
def test_compare_shows_the_runs_times_and_their_quotient(processes):
    base, new = _run("b", 4e-4, processes), _run("n", 5e-4, processes)
    cmp = compare(base, new)
    e = next(e for e in cmp.entries if e.mode is Mode.JIT)
    shown_b = analyse(base).time(e.key, Mode.JIT).value
    shown_n = analyse(new).time(e.key, Mode.JIT).value
    own_b = analyse(base).figure(e.key, Mode.JIT).own_time.value
    # The run's jit time (NumPy ÷ paired speedup) is not jit's own median here, so the
    # identities below can fail.
    assert abs(shown_b / own_b - 1) > 1e-3
    assert e.base_s == pytest.approx(shown_b, rel=1e-12)
    assert e.new_s == pytest.approx(shown_n, rel=1e-12)
    assert e.ratio == pytest.approx(shown_n / shown_b, rel=1e-9)
    assert e.ratio_low <= e.ratio <= e.ratio_high
    row = next(r for r in csv.DictReader(io.StringIO(comparison_csv(cmp))) if r["mode"] == "jit")
    base_s, new_s, ratio = (float(row[c]) for c in ("base_s", "new_s", "ratio"))
    assert math.isclose(ratio, new_s / base_s, rel_tol=1e-9)
    page = next(r for r in align([base, new], [cmp]).rows if r.mode is Mode.JIT)
    assert page.times[0].value == pytest.approx(base_s, rel=1e-12)
    assert page.changes[0].ratio == pytest.approx(page.times[1].value / page.times[0].value)


def _on(run, device: str):
    ms = tuple(replace(m, case=replace(m.case, device=device)) for m in run.measurements)
    return replace(run, measurements=ms)


@pytest.mark.parametrize("processes", [1, 2])
def test_a_pair_the_gate_did_not_judge_quotes_the_gates_figure(processes):
    """Runs on two devices are aligned by workload on the page, with no verdict: its
    change is `time_ratio` of the shown times, the figure the gate's entry quotes
    (`Entry.shown_ratio`, its `ratio`) for the same runs on one device."""
    base, new = _run("b", 4e-4, processes), _run("n", 5e-4, processes)
    elsewhere = _on(new, "gpu:0")
    page = next(
        r for r in align([base, elsewhere], [compare(base, elsewhere)]).rows if r.mode is Mode.JIT
    )
    change = page.changes[0]
    assert change is not None and change.verdict is None and "different devices" in change.note
    e = next(e for e in compare(base, new).entries if e.mode is Mode.JIT)
    assert e.shown_ratio == time_ratio(e.base_s, e.new_s)
    assert change.ratio == e.shown_ratio
    assert e.ratio == pytest.approx(e.shown_ratio, rel=1e-12)


def test_the_note_gives_the_range_of_processes_the_cases_had():
    """A run's extra processes measure only its widest cases: most had 2, a few 3."""

    def run(run_id: str) -> object:
        ms = []
        for workload, processes in (("a", 2), ("b", 3)):
            counts = (len(ORDER),) * processes
            for mode, center in ((Mode.NUMPY, 1e-3), (Mode.JIT, 4e-4)):
                samples = tuple(x for p in range(processes) for x in _process(center, False))
                ms.append(replace(meas(workload, mode, samples), run_sample_counts=counts))
        return make_run(*ms, run_id=run_id)

    note = compare(run("b"), run("n")).pooling[-1].text
    assert "(2–3 base vs 2–3 new; " in note and "finds only large changes" in note


def test_a_mode_measured_in_more_processes_than_numpy_still_agrees():
    """NumPy stopped at --timeout in the first process is measured there only (the workers
    leave it out), so its jit has more parts than its NumPy: the speedup is then taken over
    all samples, and the parts the gate tests must still multiply out to the shown time."""

    def run(run_id: str, jit_center: float, apart: float) -> object:
        jit = _process(jit_center, True) + _process(jit_center * apart, True)
        return make_run(
            meas(mode=Mode.NUMPY, samples=_process(1e-3, False)),
            replace(meas(mode=Mode.JIT, samples=jit), run_sample_counts=(len(ORDER),) * 2),
            run_id=run_id,
        )

    base, new = run("b", 4e-4, 1.0), run("n", 4e-4, 1.6)
    for r in (base, new):
        f = analyse(r).figure(("w", "S", "cpu:0", "float32"), Mode.JIT)
        gm = math.exp(sum(map(math.log, f.shown_process_times)) / len(f.shown_process_times))
        assert len(f.shown_process_times) == 2 and gm == pytest.approx(f.time.value, rel=1e-12)
    e = next(e for e in compare(base, new).entries if e.mode is Mode.JIT)
    assert e.ratio == pytest.approx(e.new_s / e.base_s, rel=1e-9)
