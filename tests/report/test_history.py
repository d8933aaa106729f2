"""History across runs: order, axes, environment changes marked."""

from __future__ import annotations

from dataclasses import replace

from jitbench.report import history
from jitbench.results import Run
from tests.report.builders import labelled, program_changed_runs, stepped_runs
from tests.report.figure_check import checked


def _runs(run: Run) -> list[Run]:
    env = dict(run.environment)
    newer = {**env, "versions": {**env.get("versions", {}), "jax": "9.9.9"}}
    return [
        replace(run, run_id="r2", started_at="2030-01-02T00:00:00+00:00",
                environment={**env, "git": {"commit": "b" * 40, "dirty": False}}),
        labelled(run, "first", run_id="r1", started_at="2030-01-01T00:00:00+00:00",
                 environment={**env, "git": {"commit": "a" * 40, "dirty": True}}),
        replace(run, run_id="r3", started_at="2030-01-03T00:00:00+00:00",
                environment={**newer, "git": {"commit": "c" * 40, "dirty": False}}),
    ]  # fmt: skip


def test_runs_in_order_with_environment_changes(run: Run) -> None:
    hruns = history.history_runs(_runs(run))
    assert [h.run_id for h in hruns] == ["r1", "r2", "r3"]
    assert [h.category for h in hruns] == ["1: first aaaaaaaa", "2: bbbbbbbb", "3: cccccccc"]
    assert hruns[0].commit == "aaaaaaaaaa dirty"
    assert hruns[1].changes == ()
    assert any(c.startswith("jax ") and c.endswith("→ 9.9.9") for c in hruns[2].changes)


def test_a_run_from_before_the_matmul_precision_record_is_no_change(run: Run) -> None:
    """Runs recorded before environment.matmul_precision ran at JAX's default: the first run
    that records "default" is not an environment change; "highest" is."""
    old, new, highest = _runs(run)
    env = {k: v for k, v in old.environment.items() if k != "matmul_precision"}
    old = replace(old, environment=env)
    new = replace(new, environment={**env, "matmul_precision": "default"})
    highest = replace(highest, environment={**env, "matmul_precision": "highest"})
    hruns = history.history_runs([old, new, highest])
    assert [h.changes for h in hruns[:2]] == [(), ()]
    assert any("matmul_precision" in c and c.endswith("→ highest") for c in hruns[2].changes)


def test_workload_figure_has_both_panels_and_both_axes(run: Run) -> None:
    hruns = history.history_runs(_runs(run))
    assert "double" in history.history_workloads(hruns)
    assert "affine" not in history.history_workloads(hruns)  # sweep points only
    fig = checked(history.workload_figure(hruns, "double"))
    assert fig is not None
    names = [t.name for t in fig.data]
    assert "jit × S" in names and "numpy time S" in names
    jit = next(t for t in fig.data if t.name == "jit × S")
    assert list(jit.x) == [h.category for h in hruns] and jit.yaxis == "y"
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis2.type == "log"
    by_commit, by_date = fig.layout.updatemenus[0].buttons
    assert by_date.args[1]["xaxis.type"] == "date"
    assert by_date.args[0]["x"][names.index("jit × S")][0] == hruns[0].date
    # the run whose jax changed is marked on both axes (run order and date)
    marks = [s for s in fig.layout.shapes if s.line.dash == "dot"]
    assert [s.x0 for s in marks] == [2, 2]
    assert [a.text for a in fig.layout.annotations] == ["env"]
    assert "9.9.9" in fig.layout.annotations[0].hovertext
    assert any(s["x0"] == hruns[2].date for s in by_date.args[1]["shapes"])
    # the 1× line stays on the speedup panel whichever axis is chosen
    for button in (by_commit, by_date):
        assert any(s["yref"] == "y" and s["y0"] == 1 for s in button.args[1]["shapes"])


def test_a_run_whose_compiled_program_changed_is_marked() -> None:
    """The 1.8 fixture twice, the second with jit's programs fingerprinted differently:
    its jit points are drawn with the program-changed marker and say so on hover."""
    runs = stepped_runs()
    hruns = history.history_runs(runs)
    pages = {h.run_id: f"runs/{h.run_id}.html" for h in hruns}
    fig = checked(history.workload_figure(hruns, "double", pages=pages))
    steps = [a for a in fig.layout.annotations if (a.text or "").startswith("step")]
    assert [a.x for a in steps] == [hruns[4].category]
    assert (
        steps[0].text == 'step 0.769× (<a href="runs/r3.html">4</a>→<a href="runs/r4.html">5</a>)'
    )
    assert "double S jit: ×1.3 slower" in steps[0].hovertext
    assert "at run 5" in steps[0].hovertext
    assert "jitbench bisect c3 c4 -k double -s S" in steps[0].hovertext


def test_the_history_page_lists_each_step_with_its_runs_and_bisect_line() -> None:
    from jitbench.report import render_history_page

    page = render_history_page(stepped_runs())
    steps = page[page.index('<ul class="steps">') :]
    steps = steps[: steps.index("</ul>")]
    assert "double S jit: ×1.3 slower" in steps
    assert '<a href="runs/r3.html">run 4</a>' in steps
    assert '<a href="runs/r4.html">run 5</a>' in steps
    assert "<code>jitbench bisect c3 c4 -k double -s S</code>" in steps


def test_without_commits_a_step_says_there_is_no_bisect_line() -> None:
    from jitbench.report import render_history_page

    page = render_history_page(stepped_runs(commits=False))
    assert history.NO_COMMIT in page
    assert "jitbench bisect c" not in page


def _old_run() -> Run:
    """The 1.7 fixture: a run from before programs were fingerprinted."""
    from pathlib import Path

    from jitbench.results import load_run

    fixture = Path(__file__).resolve().parents[1] / "results" / "fixtures" / "run-schema-1.7.json"
    return replace(load_run(fixture), run_id="old", started_at="2026-11-01T00:00:00+00:00")


def test_program_series_mark_the_run_whose_program_changed_and_say_what_moved() -> None:
    hruns = history.history_runs([_old_run(), *program_changed_runs()])
    series = history.program_series(hruns)
    jit = next(s for s in series if s.key[:2] == ("double", "S") and s.mode.value == "jit")
    # the old run has no point; the fifth 1.8 run (number 6 here) is the change
    assert [p.run.run_id for p in jit.points] == [f"r{i}" for i in range(8)]
    assert [p.run.number for p in jit.changes] == [6]
    moved = jit.changes[0].moved
    assert "+1 fusion" in moved and "bytes accessed +30 %" in moved
    assert jit.points[0].values["fusions"] == 1 and jit.points[5].values["fusions"] == 2
    assert jit.points[0].values["instructions"] == 6
    assert jit.points[0].values["peak_bytes"] == 512
    sharded = next(s for s in series if s.key[:2] == ("double", "S") and s.mode.value == "sharded")
    assert sharded.changes == ()
    text = history.program_change_text(jit, jit.changes[0])
    assert text.startswith("◆ double S jit at run 6: +1 fusion")


def test_program_figure_one_metric_at_a_time_normalised_with_the_change_marked() -> None:
    hruns = history.history_runs(program_changed_runs())
    fig = checked(history.program_figure(hruns, "double"))
    labels = [b.label for b in fig.layout.updatemenus[0].buttons]
    assert labels[:2] == ["HLO instructions", "fusions"] and "peak memory" in labels
    shown = [t for t in fig.data if t.visible is True]
    assert {t.name for t in shown} == {"jit S", "sharded S"}
    jit = next(t for t in shown if t.name == "jit S")
    assert list(jit.x) == [h.category for h in hruns]
    assert jit.y[0] == 1.0 and jit.y[4] == round(7 / 6, 6)
    symbols = list(jit.marker.symbol)
    assert symbols.index(history.PROGRAM_CHANGED_SYMBOL) == 4
    assert symbols.count(history.PROGRAM_CHANGED_SYMBOL) == 1
    assert "+1 fusion" in jit.hovertext[4] and jit.hovertext[4].startswith("7 (×1.17)")
    assert jit.hovertemplate.startswith("jit S HLO instructions: %{hovertext}")
    # a menu entry shows its metric's traces only
    fusions = fig.layout.updatemenus[0].buttons[1].args[0]["visible"]
    assert sum(fusions) == 2 and len(fusions) == len(fig.data)


def test_the_history_page_shows_the_program_metrics_and_lists_the_change() -> None:
    from jitbench.report import render_history_page

    page = render_history_page(program_changed_runs())
    assert "<h3>Compiled program</h3>" in page
    assert 'id="history-programs-' in page
    changes = page[page.index('<ul class="program-changes">') :]
    changes = changes[: changes.index("</ul>")]
    assert "◆ double S jit at run 5: +1 fusion" in changes
    assert "sharded" not in changes


def test_an_old_schema_history_has_no_program_section() -> None:
    from jitbench.report import render_history_page

    hruns = history.history_runs([_old_run()])
    assert history.program_series(hruns) == []
    page = render_history_page([_old_run()])
    assert "Compiled program" not in page and "program-changes" not in page
