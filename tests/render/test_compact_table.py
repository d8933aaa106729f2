"""The compact run table (the default of `jitbench run`) fits 80, 100 and 120 columns and
cuts nothing; `--wide` keeps every column; CSV carries the raw numbers."""

from __future__ import annotations

import csv
import io
import math

import pytest

from jitbench import formatting as fmt
from jitbench.render.layout import plain_text
from jitbench.render.run_csv import COLUMNS, run_csv
from jitbench.render.run_table import compact_notes, compact_table, summary_table
from jitbench.results import (
    Case,
    CompileInfo,
    Diagnostic,
    Measurement,
    Mode,
    Run,
    Severity,
    Status,
)
from jitbench.results.analysis import analyse
from tests.test_default_suite import EXPECTED as DEFAULT_SUITE_NAMES

# The default suite's workload names (the longest is 18 characters): a table of them all
# must fit 80 columns.
NAMES = tuple(sorted(DEFAULT_SUITE_NAMES))


def _samples(center: float, spread: float, seed: int, n: int = 31) -> tuple[float, ...]:
    # Deterministic, different for every mode (so paired ratios vary from round to round):
    # samples spread over [center, center * (1 + spread)).
    return tuple(center * (1 + spread * ((i * (7919 + 104 * seed)) % n) / n) for i in range(n))


def _run(spread: float, *, back: bool = True) -> Run:
    """Every default-suite workload at S and M, all three modes, with diagnostics on some
    cases; `spread` sets how wide the speedup intervals are (0.02 quiet, 3 very busy);
    `back`: the output's copy back to the host was timed (schema 1.6 on)."""
    ms: list[Measurement] = []
    for i, name in enumerate(NAMES):
        for size, scale in (("S", 1e-3), ("M", 1e-2)):
            case = Case(
                workload=name, size=size, device="cpu:0", dtype="float32", input_bytes=4 << 20
            )
            times = {Mode.NUMPY: scale, Mode.EAGER: scale * (0.3 + i % 5), Mode.JIT: scale / 7}
            for mode, center in times.items():
                diagnostics: tuple[Diagnostic, ...] = ()
                if mode is Mode.JIT and i % 3 == 0:
                    diagnostics = (
                        Diagnostic(
                            code="jit-slower-than-numpy", severity=Severity.INFO, message=""
                        ),
                    )
                if mode is Mode.EAGER and i % 4 == 0:
                    diagnostics = (
                        Diagnostic(
                            code="recompiled-during-timing", severity=Severity.WARNING, message=""
                        ),
                        Diagnostic(code="outlier-samples", severity=Severity.INFO, message=""),
                    )
                ms.append(
                    Measurement(
                        case=case,
                        mode=mode,
                        status=Status.OK,
                        samples_s=_samples(center, spread, seed=i * 3 + list(Mode).index(mode)),
                        calls_per_sample=10,
                        transfer_s=None if mode is Mode.NUMPY else 4.1e-4,
                        transfer_bytes=None if mode is Mode.NUMPY else 4 << 20,
                        transfer_back_s=None if mode is Mode.NUMPY or not back else 2.34e-5,
                        transfer_back_bytes=None if mode is Mode.NUMPY or not back else 1 << 20,
                        device_peak_bytes=None if mode is Mode.NUMPY or not back else 3 << 20,
                        device_peak_exact=None if mode is Mode.NUMPY or not back else False,
                        compile=CompileInfo(trace_s=0.05, lower_s=0.02, compile_s=0.2)
                        if mode is Mode.JIT
                        else None,
                        diagnostics=diagnostics,
                    )
                )
    return Run(
        run_id="20261122T000000Z-abcdef",
        started_at="2026-11-22T00:00:00+00:00",
        finished_at="2026-11-22T00:01:00+00:00",
        complete=True,
        environment={},
        measurements=tuple(ms),
    )


@pytest.mark.parametrize("width", [80, 100, 120])
@pytest.mark.parametrize("spread", [0.02, 3.0], ids=["quiet", "busy"])
def test_fits_the_width_and_cuts_nothing(width: int, spread: float) -> None:
    run = _run(spread)
    text = plain_text(compact_table(run, width), width)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= width, text
    assert "…" not in text and "..." not in text, text
    assert all(line == line.rstrip() for line in lines)  # no padding
    for case in run.cases():
        numpy = analyse(run).time(case, Mode.NUMPY)
        assert numpy is not None
        assert fmt.seconds(numpy.value, compact=True) in text.replace(" ", ""), case.label
        # The break-even count is a whole number: written out in full, never cut (where
        # the width leaves room for its column at all: the footnote says when not).
        if "break even (--format wide" not in text.replace("\n", " "):
            assert fmt.count(analyse(run).break_even_calls(case.key)) in text
    if spread < 1:  # a quiet run: no case name is broken, one line per case
        for case in run.cases():
            assert any(line.startswith(f"{case.workload} {case.size}") for line in lines), text
        rows = [line for line in lines if line.split(" ")[0] in NAMES]
        assert len(rows) == len(run.cases())


def test_roomy_layout_at_120_and_notes_under_the_table_at_80() -> None:
    run = _run(0.02)
    wide_text = plain_text(compact_table(run, 120), 120)
    narrow_text = plain_text(compact_table(run, 80), 80)
    assert "transfer" in wide_text and "4 MiB" in wide_text.replace("4MiB", "4 MiB")
    assert "H→D" in wide_text and "D→H" in wide_text
    assert "23.4 µs · 1 MiB" in wide_text  # the copy back, time and bytes
    assert "410µs" in narrow_text or "410 µs" in narrow_text  # transfer time at 80 too
    # At 80 only H→D fits (the default suite's names); the table says what it left out.
    assert "D→H" not in narrow_text.split("left out to fit the width")[0]
    assert "left out to fit the width: D→H (--format wide shows every column)" in " ".join(
        narrow_text.split()
    )
    assert "left out" not in wide_text
    # At 80 the notes go under the table behind a superscript mark on the case name.
    assert "¹ " in narrow_text and "jit-slower-than-numpy" in narrow_text
    assert "recompiled-during-timing (eager)" in narrow_text
    # outlier-samples is summed up under the table, not repeated on each row.
    assert "outlier-samples" not in narrow_text


def test_unlimited_width_is_the_roomiest_layout_and_wide_has_every_column() -> None:
    run = _run(0.02)
    text = plain_text(compact_table(run))
    assert " ms" in text and "note" in text  # spaced units, notes inline
    wide = plain_text(summary_table(run))
    for column in ("workload", "size", "device", "GFLOP/s", "transfer", "notes"):
        assert column in wide
    assert "410 µs · 4 MiB" in wide and "23.4 µs · 1 MiB" in wide and "D→H" in wide


@pytest.mark.parametrize("width", [None, 100, 80])
def test_a_run_before_schema_1_6_has_no_copy_back_column(width: int | None) -> None:
    run = _run(0.02, back=False)
    text = plain_text(compact_table(run, width), width)
    assert "D→H" not in text and ("410 µs" in text or "410µs" in text)
    assert "D→H" not in plain_text(summary_table(run))


def test_compact_notes_group_codes_by_mode() -> None:
    def m(mode: Mode, *codes: str) -> Measurement:
        case = Case(workload="w", size="S", device="cpu:0", dtype="float32")
        return Measurement(
            case=case,
            mode=mode,
            status=Status.OK,
            diagnostics=tuple(
                Diagnostic(code=c, severity=Severity.INFO, message="") for c in codes
            ),
        )

    notes = compact_notes(
        [
            m(Mode.NUMPY, "prints-during-call", "outlier-samples"),
            m(Mode.EAGER, "eager-dispatch-bound", "prints-during-call"),
            m(Mode.JIT, "jit-slower-than-numpy", "noisy"),
        ]
    )
    assert notes == (
        "prints-during-call (numpy, eager); eager-dispatch-bound; jit-slower-than-numpy"
    )


def test_ratio_pm_covers_the_wider_side_of_the_interval() -> None:
    assert fmt.ratio_pm(3.16, 2.91, 3.26) == "3.16× ±8%"
    assert fmt.ratio_pm(0.896, 0.837, 1.0) == "0.896× ±12%"
    assert fmt.ratio_pm(2.0, 1.995, 2.004) == "2× ±1%"  # rounded up
    assert fmt.ratio_pm(3.16, None, None) == "3.16×"
    assert fmt.ratio_pm(7.0, 7.0 - 1e-13, 7.0) == "7× ±0%"
    assert fmt.ratio_pm(3.16, 2.91, 3.26, digits=2, space=False, times=False) == "3.2±8%"


def test_csv_has_one_row_per_case_with_raw_numbers() -> None:
    run = _run(0.02)
    rows = list(csv.DictReader(io.StringIO(run_csv(run))))
    assert len(rows) == len(run.cases()) and tuple(rows[0]) == COLUMNS
    first = rows[0]
    numpy = run.get(run.cases()[0].key, Mode.NUMPY)
    assert numpy is not None and numpy.median_s is not None
    assert math.isclose(float(first["numpy_s"]), numpy.median_s)
    assert first["transfer_bytes"] == str(4 << 20) and first["numpy_status"] == "ok"
    assert float(first["transfer_back_s"]) == 2.34e-5
    assert first["transfer_back_bytes"] == str(1 << 20)
    assert first["device_peak_bytes"] == str(3 << 20) and first["device_peak_exact"] == "false"
    speedup = analyse(run).speedup(run.cases()[0].key, Mode.JIT)
    assert speedup is not None and math.isclose(float(first["jit_speedup"]), speedup.value)


def _sharded_run(spread: float) -> Run:
    """`_run` with sharded mode over 4 devices on every case (1.6× jit's time)."""
    from dataclasses import replace

    from jitbench.results import ShardingInfo

    base = _run(spread)
    info = ShardingInfo(device_count=4, mesh_shape={"devices": 4}, split_axes={"x": 0})
    sharded = [
        replace(m, mode=Mode.SHARDED, samples_s=tuple(x * 1.6 for x in m.samples_s), sharding=info)
        for m in base.measurements
        if m.mode is Mode.JIT
    ]
    return replace(base, measurements=(*base.measurements, *sharded))


@pytest.mark.parametrize("width", [80, 100, 120])
@pytest.mark.parametrize("spread", [0.02, 3.0], ids=["quiet", "busy"])
def test_sharded_columns_fit_the_width(width: int, spread: float) -> None:
    run = _sharded_run(spread)
    text = plain_text(compact_table(run, width), width)
    assert max(len(line) for line in text.splitlines()) <= width, text
    assert "…" not in text and "4 dev" in text and "eff." in text, text
    assert "16%" in text  # efficiency: (1 / 1.6) / 4 devices
    if spread < 1:
        lines = text.splitlines()
        for case in run.cases():
            assert any(line.startswith(f"{case.workload} {case.size}") for line in lines), text


def test_wide_table_has_the_sharded_figures() -> None:
    text = plain_text(summary_table(_sharded_run(0.02)), 400)
    assert "efficiency" in text and "sharded" in text and "16%" in text
    header = text.splitlines()[3]  # both copies, then sharded mode's, then the notes
    assert header.count("D→H") == 2 and header.index("notes") > header.rindex("D→H")
