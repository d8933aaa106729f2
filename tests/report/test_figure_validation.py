"""Every figure builder's dict, on every fixture run and the real run, is a figure plotly
validates: the builders skip plotly.py's checks for speed, so these tests are the check."""

from __future__ import annotations

import inspect
from dataclasses import replace
from pathlib import Path

import pytest

from jitbench.gate import compare
from jitbench.report import comparison, data, figures, history
from jitbench.results import Run, load_run
from tests.report.builders import relabelled, slower
from tests.report.figure_check import checked

FIXTURES = Path(__file__).resolve().parents[1] / "results" / "fixtures"
#: Every public figure builder, found by name, so a new one cannot go unchecked.
BUILDERS = {
    f"{module.__name__.rsplit('.', 1)[1]}.{name}"
    for module in (figures, history, comparison)
    for name, fn in inspect.getmembers(module, inspect.isfunction)
    if fn.__module__ == module.__name__
    and (name.endswith("_figure") or name == "speedup_side_by_side")
}


def every_figure(run: Run) -> dict[str, list[figures.Figure | None]]:
    """Each builder's figures for `run` (and for `run` beside a slower copy of itself)."""
    built: dict[str, list[figures.Figure | None]] = {name: [] for name in BUILDERS}

    def add(name: str, fig: figures.Figure | None) -> None:
        built[name].append(fig)

    for device in data.device_labels(run):
        add("figures.speedup_figure", figures.speedup_figure(run, device))
        add("figures.compile_figure", figures.compile_figure(run, device))
        add("figures.roofline_figure", figures.roofline_figure(run, device))
        add("figures.memory_figure", figures.memory_figure(run, device))
        for wl in data.sweep_workloads(run, device):
            add("figures.sweep_speedup_figure", figures.sweep_speedup_figure(run, device, wl))
            add("figures.sweep_time_figure", figures.sweep_time_figure(run, device, wl))
    for case in run.cases():
        add("figures.distribution_figure", figures.distribution_figure(run, case))
    add("figures.device_comparison_figure", figures.device_comparison_figure(run))
    add("figures.device_comparison_figure", figures.device_comparison_figure(two_devices(run)))
    some = next((c.workload for c in run.cases() if not data.is_sweep_case(c)), None)
    other = slower(run, some, 2.0, run_id="other") if some else replace(run, run_id="other")
    hruns = history.history_runs([run, other])
    for wl in history.history_workloads(hruns):
        add("history.workload_figure", history.workload_figure(hruns, wl))
        add("history.program_figure", history.program_figure(hruns, wl))
    alignment = comparison.align([run, other], [compare(run, other)])
    add("comparison.speedup_side_by_side", comparison.speedup_side_by_side(alignment))
    add("comparison.ratio_figure", comparison.ratio_figure(alignment, 0))
    return built


def two_devices(run: Run) -> Run:
    """`run` with a copy of every measurement on a second device (gpu:0)."""
    gpu = relabelled(run, device="gpu:0", kind="H200", host="h", run_id=run.run_id)
    return replace(run, measurements=(*run.measurements, *gpu.measurements))


def _check_all(built: dict[str, list[figures.Figure | None]]) -> None:
    for name, figs in built.items():
        for fig in figs:
            if fig is not None:
                try:
                    checked(fig)
                except ValueError as exc:  # plotly's message names the bad property
                    pytest.fail(f"{name} built an invalid figure: {exc}")


@pytest.mark.parametrize(
    "fixture", sorted(FIXTURES.glob("run-schema-*.json")), ids=lambda p: p.name
)
def test_every_builder_makes_valid_figures_for_old_runs(fixture: Path) -> None:
    _check_all(every_figure(load_run(fixture)))


def test_every_builder_makes_valid_figures_for_a_real_run(run: Run) -> None:
    built = every_figure(run)
    _check_all(built)
    for name in BUILDERS:  # the real run has a sweep, jit, memory: every kind is drawn
        assert any(f is not None for f in built[name]), f"{name} drew nothing"


def test_a_misspelled_property_fails_the_check() -> None:
    with pytest.raises(ValueError, match="mrker"):
        checked({"data": [figures.trace("scatter", x=[1], mrker={"size": 3})], "layout": {}})
    with pytest.raises(ValueError, match="yaxs"):
        checked({"data": [], "layout": {"yaxs": {"type": "log"}}})
