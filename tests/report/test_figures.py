"""Figure builders and the data behind them, without a browser."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from jitbench.report import data, figures, pages
from jitbench.results import Mode, Run
from jitbench.results.analysis import analyse
from tests.report.builders import seed_run
from tests.report.figure_check import checked


def _case(run: Run, workload: str):
    return next(c for c in run.cases() if c.workload == workload)


def test_speedup_figure_is_log_with_ci_and_geomean(run: Run) -> None:
    fig = checked(figures.speedup_figure(run, "cpu:0"))
    assert fig.layout.yaxis.type == "log"
    assert "×" in fig.layout.yaxis.title.text
    names = [t.name for t in fig.data if t.showlegend is not False]
    vs = [n for n in names if n.endswith("vs NumPy")]
    assert vs == ["eager vs NumPy", "jit vs NumPy"]  # fixed order
    double = data.case_label(_case(run, "double"))
    f = analyse(run).figure(_case(run, "double"), Mode.JIT)
    assert f is not None and f.speedup is not None
    # a headline point in the mode's trace, an uncertain one faded in its own
    name = "jit vs NumPy" if f.headline else "jit: uncertain, left out of ★"
    jit = next(t for t in fig.data if t.name == name)
    i = list(jit.x).index(double)
    r = f.speedup
    assert jit.y[i] == pytest.approx(r.value)
    assert jit.error_y.array[i] == pytest.approx(r.high - r.value)
    assert figures.GEOMEAN in list(fig.layout.xaxis.categoryarray)
    g = next(g for g in data.geomean_speedups(run, "cpu:0") if g.mode is Mode.JIT)
    geo = [t.y[0] for t in fig.data if t.name == "jit geomean"]
    assert geo == ([pytest.approx(g.value)] if g.value is not None else [])
    # the sweep's sizes have their own chart: not categories here
    assert not any(c.startswith("affine[") for c in fig.layout.xaxis.categoryarray)
    again = [pages.figure_json(figures.speedup_figure(run, "cpu:0")) for _ in range(2)]
    assert again[0] == again[1]  # deterministic


def test_the_parity_label_sits_on_the_parity_line(run: Run) -> None:
    """On a log axis plotly reads an annotation's y as log10(value) but a shape's as the
    value: the 1× label must say y = 0 where the line says y = 1 (issue 16 drew it at 10×)."""
    fig = checked(figures.speedup_figure(run, "cpu:0"))
    [line] = [s for s in fig.layout.shapes if s.y0 == s.y1 == 1.0]
    assert line.yref == "y" and line.line.dash == "dash"
    [label] = [a for a in fig.layout.annotations if a.text == "1× = NumPy"]
    assert label.yref == "y" and label.y == 0.0 and label.yanchor == "bottom"
    assert fig.layout.yaxis.type == "log"
    assert fig.layout.yaxis.range[0] < 0 < fig.layout.yaxis.range[1]  # on the chart


def test_failed_and_mismatched_cases_are_notes_not_points(run: Run) -> None:
    fig = checked(figures.speedup_figure(run, "cpu:0"))
    wrong = data.case_label(_case(run, "wrong_in_jit"))
    branch = data.case_label(_case(run, "value_branch"))
    for t in fig.data[1:]:  # data[0] only pins the categories
        assert wrong not in list(t.x)
    jit = next(t for t in fig.data if t.name == "jit vs NumPy")
    assert branch not in list(jit.x)
    notes = {a.x: a for a in fig.layout.annotations if a.x in (wrong, branch)}
    assert "✗ jit mismatch" in notes[wrong].text and "✗ eager mismatch" in notes[wrong].text
    assert "✗ jit error" in notes[branch].text
    assert notes[wrong].yref == "paper"  # at the bottom whatever the axis

    cfig = checked(figures.compile_figure(run, "cpu:0"))
    labels = list(cfig.layout.xaxis.categoryarray)
    for t in cfig.data:
        for label in (wrong, branch):
            assert t.y[labels.index(label)] is None, (t.name, label)
    cnotes = {a.x: a.text for a in cfig.layout.annotations}
    assert cnotes[wrong] == "✗ jit mismatch" and cnotes[branch] == "✗ jit error"


def test_compile_figure_is_log_with_break_even_in_hover(run: Run) -> None:
    fig = checked(figures.compile_figure(run, "cpu:0"))
    key = _case(run, "double").key
    jit = run.get(key, Mode.JIT)
    assert jit is not None and jit.compile is not None
    i = list(fig.layout.xaxis.categoryarray).index(data.case_label(_case(run, "double")))
    by_name = {t.name: t for t in fig.data}
    assert list(by_name) == [
        "compile (trace + lower + XLA)",
        "first call (cold)",
        "steady state per call",
    ]
    assert by_name["compile (trace + lower + XLA)"].y[i] == pytest.approx(
        jit.compile.total_compile_s
    )
    assert by_name["steady state per call"].y[i] == pytest.approx(
        analyse(run).time(jit.case, Mode.JIT).value  # type: ignore[union-attr]
    )
    assert fig.layout.yaxis.type == "log"  # a 2 s compile must not flatten the rest
    assert "break-even" in by_name["steady state per call"].hovertext[i]
    assert "trace" in by_name["steady state per call"].hovertext[i]
    # no break-even labels on the bars to collide with each other
    assert not any("break-even" in (a.text or "") for a in fig.layout.annotations)


def test_sweep_charts_use_the_workloads_own_parameter(run: Run) -> None:
    assert data.sweep_workloads(run, "cpu:0") == ["affine"]
    axis = data.sweep_axis(data.sweep_cases(run, "cpu:0", "affine"))
    assert axis.param == "n" and axis.title.startswith("n ")
    fig = checked(figures.sweep_speedup_figure(run, "cpu:0", "affine"))
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert fig.layout.xaxis.title.text.startswith("n")
    lines = [t for t in fig.data if t.name in ("eager vs NumPy", "jit vs NumPy")]
    assert lines and all(list(t.x) == [16, 1024, 65536] for t in lines)
    bands = [t for t in fig.data if t.fill == "toself"]
    assert len(bands) == len(lines)  # an interval band per mode
    tfig = checked(figures.sweep_time_figure(run, "cpu:0", "affine"))
    numpy = next(t for t in tfig.data if t.name == "numpy")
    assert list(numpy.x) == [16, 1024, 65536]


def test_geomean_averages_presets_only_and_leaves_failures_out(run: Run) -> None:
    jit = next(g for g in data.geomean_speedups(run, "cpu:0") if g.mode is Mode.JIT)
    presets = [c for c in run.cases() if not data.is_sweep_case(c)]
    shown = [f for c in presets if (f := analyse(run).figure(c, Mode.JIT)) and f.speedup]
    ok = [f.speedup.value for f in shown if f.headline]  # type: ignore[union-attr]
    uncertain = [f for f in shown if f.uncertain]
    assert jit.count == len(ok) and jit.uncertain == len(uncertain)
    assert jit.failed == 2  # wrong_in_jit mismatch, value_branch error
    # (how the mean is taken is tested on generated runs: tests/results/test_analysis.py)
    assert jit.value == (pytest.approx(math.exp(sum(map(math.log, ok)) / len(ok))) if ok else None)
    assert jit.scope == "preset sizes"
    # a run of sweeps only: each workload at its largest size
    sweep_only = replace(
        run, measurements=tuple(m for m in run.measurements if data.is_sweep_case(m.case))
    )
    [g] = [g for g in data.geomean_speedups(sweep_only, "cpu:0") if g.mode is Mode.JIT]
    assert g.count + g.uncertain == 1 and g.scope == "each sweep's largest size"
    largest = next(c for c in sweep_only.cases() if c.size == "n=65536")
    value = data.speedup_value(sweep_only, largest, Mode.JIT)
    assert g.value == (pytest.approx(value) if g.count else None)


def test_distribution_roofline_and_memory(run: Run) -> None:
    case = _case(run, "double")
    fig = checked(figures.distribution_figure(run, case))
    assert fig is not None and [t.name for t in fig.data] == ["numpy", "eager", "jit"]
    jit = run.get(case.key, Mode.JIT)
    assert jit is not None and sorted(fig.data[2].x) == sorted(jit.samples_s)
    assert fig.layout.xaxis.type == "log"
    roof = checked(figures.roofline_figure(run, "cpu:0"))
    assert roof is not None and roof.layout.xaxis.type == roof.layout.yaxis.type == "log"
    assert "jit" in [t.name for t in roof.data]
    mem = checked(figures.memory_figure(run, "cpu:0"))
    assert mem is not None and [t.name for t in mem.data][:3] == [
        "arguments",
        "outputs",
        "temporaries",
    ]


def test_the_roofline_draws_the_analysis_layers_rates(run: Run) -> None:
    """Each point is `CaseAnalysis.achieved_flops_per_s`, jit's the tables' GFLOP/s
    (`ModeFigure.achieved_flops_per_s`); a mismatched jit's program is no work to rate
    NumPy's or eager's time by, so its case has no point (the table shows none either)."""
    roof = checked(figures.roofline_figure(run, "cpu:0"))
    assert roof is not None
    drawn = {
        (t.name, label.split("<br>")[0]): (x, y)
        for t in roof.data
        if t.mode == "markers"
        for x, y, label in zip(t.x, t.y, t.hovertext, strict=True)
    }
    expected = {}
    for case in data.headline_cases(run, "cpu:0")[0]:
        c = analyse(run).case(case)
        assert c is not None
        for mode in Mode:
            rate = c.achieved_flops_per_s(mode)
            if rate is not None:
                expected[(mode.value, data.plot_text(data.case_label(case)))] = (
                    c.arithmetic_intensity,
                    rate / 1e9,
                )
    wrong = data.plot_text(data.case_label(_case(run, "wrong_in_jit")))
    assert not any(name == wrong for _, name in drawn)
    assert drawn == expected
    double = analyse(run).case(_case(run, "double"))
    assert double is not None
    jit = double.get(Mode.JIT)
    assert jit is not None and jit.achieved_flops_per_s is not None
    label = data.plot_text(data.case_label(double.case))
    assert drawn[("jit", label)][1] == jit.achieved_flops_per_s / 1e9


def test_sizes_sort_as_a_reader_expects() -> None:
    run = seed_run()
    s, m = (next(c for c in run.cases() if c.size == x) for x in ("S", "M"))
    assert data.size_sort_key(s) < data.size_sort_key(m)
    big_s = replace(s, input_elements=10**9)
    assert data.size_sort_key(big_s) < data.size_sort_key(m)  # S < M whatever the elements


def test_plot_text_is_safe() -> None:
    assert (
        data.plot_text('<a href="javascript:x">s</a>') == '&lt;a href="javascript:x"&gt;s&lt;/a&gt;'
    )
    clipped = data.plot_text("a" * 100 + "[n=1000]")
    assert len(clipped) == data.MAX_LABEL_CHARS and clipped.endswith("a[n=1000]")


@pytest.mark.filterwarnings("error::RuntimeWarning")  # NumPy's would reach the terminal
def test_zero_times_from_a_crafted_file_do_not_break_the_chart(run: Run) -> None:
    key = _case(run, "double").key
    ms = tuple(
        replace(m, samples_s=(0.0,) * len(m.samples_s))
        if m.case.key == key and m.mode is Mode.JIT
        else m
        for m in run.measurements
    )
    raw = figures.speedup_figure(replace(run, measurements=ms), "cpu:0")
    fig = checked(raw)
    label = data.case_label(_case(run, "double"))
    jit = next(t for t in fig.data if t.name == "jit vs NumPy")
    assert label not in list(jit.x)
    assert any(a.x == label and "jit no ratio" in a.text for a in fig.layout.annotations)
    assert "Infinity" not in pages.figure_json(raw) and "NaN" not in pages.figure_json(raw)


def test_a_size_order_inversion_is_no_headline_win() -> None:
    run = seed_run()
    s_case = next(c for c in run.cases() if c.size == "S")
    assert data.speedup_value(run, s_case, Mode.JIT) == pytest.approx(11.0)
    f = analyse(run).figure(s_case, Mode.JIT)
    assert f is not None and f.suspect and not f.headline
    [jit] = [g for g in data.geomean_speedups(run, "cpu:0") if g.mode is Mode.JIT]
    assert (jit.count, jit.suspect, jit.failed) == (1, 1, 0)
    assert jit.value == pytest.approx(2.0)  # M alone; S's 11× is left out
    fig = checked(figures.speedup_figure(run, "cpu:0"))
    suspect = next(t for t in fig.data if t.name == "jit: suspect, left out of ★")
    assert list(suspect.x) == ["gemm[S]"] and suspect.marker.symbol == "diamond-open"
    notes = {a.x: a.text for a in fig.layout.annotations}
    assert "⚠ jit size order" in notes["gemm[S]"]


def test_device_comparison_puts_each_devices_case_on_one_axis(run: Run) -> None:
    from tests.report.test_figure_validation import two_devices

    assert figures.device_comparison_figure(run) is None  # one device: nothing to compare
    fig = checked(figures.device_comparison_figure(two_devices(run)))
    names = [t.name for t in fig.data]
    assert names[0] == "NumPy (host)"
    assert [n.split(" (")[0] for n in names[1:]] == ["jit on cpu:0", "jit on gpu:0"]
    assert "H200" in names[2]
    assert fig.layout.yaxis.type == "log"
    # The same categories for both devices: the copy's points sit on the original's.
    assert list(fig.data[1].x) == list(fig.data[2].x)
    assert list(fig.data[1].y) == pytest.approx(list(fig.data[2].y))
    assert list(fig.layout.xaxis.categoryarray)[: len(fig.data[1].x)] == list(fig.data[1].x)
