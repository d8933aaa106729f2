"""The terminal run table's notes."""

from __future__ import annotations

from pathlib import Path

from jitbench.config import RunConfig
from jitbench.results import Measurement, load_run
from jitbench.results.analysis import analyse

RUN_FILE = Path(__file__).resolve().parents[1] / "results" / "fixtures" / "run-schema-1.2.json"


def test_the_footer_says_what_the_speedup_intervals_claim() -> None:
    from dataclasses import replace

    from jitbench.render.run_table import interval_footer

    run = load_run(RUN_FILE)  # schema 1.2: unpaired
    assert "bootstrap" in interval_footer(run)
    paired = replace(run, schema_version="1.3")
    assert "this process only" in interval_footer(paired)
    one = replace(paired, config=replace(paired.config, settings=RunConfig(processes=1)))
    assert "leave out --processes 1" in interval_footer(one)
    smoke = replace(paired, config=replace(paired.config, settings=RunConfig.quick_settings()))
    assert "a full run (not --quick) measures in two processes" in interval_footer(smoke)
    two = replace(
        paired,
        measurements=tuple(
            replace(m, run_sample_counts=(len(m.samples_s) - 2, 2)) for m in run.measurements
        ),
    )
    assert "from 2 processes" in interval_footer(two)
    # The footer quotes how far the run's own processes measured the same code apart.
    assert "from 2 processes, which measured the same code a median " in interval_footer(two)


def test_the_banner_says_a_run_is_unstable_with_or_without_a_busy_machine() -> None:
    from dataclasses import replace

    from jitbench.render.run_table import machine_banner

    run = replace(load_run(RUN_FILE), schema_version="1.3", environment={})
    assert machine_banner(run) is None
    # Every measurement's second process 25 % slower than its first.
    slower = replace(
        run,
        measurements=tuple(
            replace(
                m,
                samples_s=(*m.samples_s, *(x * 1.25 for x in m.samples_s)),
                run_sample_counts=(len(m.samples_s), len(m.samples_s)),
            )
            for m in run.measurements
        ),
    )
    banner = machine_banner(slower)
    assert banner is not None
    assert banner.plain.startswith(
        "⚠ unstable run: its 2 processes measured the same code a median 25.0 % apart "
        "(speedups 0.0 %)"  # every mode slowed alike: the paired speedups held
    )
    from jitbench.render.run_table import interval_footer

    assert interval_footer(slower) == (
        "speedup intervals: 95 % prediction intervals for a repeat run, from 2 processes, "
        "which measured the same code a median 25.0 % apart (speedups 0.0 %)."
    )
    # On a busy machine as well: one line, the machine's reasons first.
    from jitbench.results.analysis.machine import MachineState

    busy = MachineState(cores_total=2, cores_used=1, load_avg=(4.5, 3.0, 2.0)).to_dict()
    both = replace(slower, environment={"machine_before": busy, "machine_after": busy})
    banner = machine_banner(both)
    assert banner is not None and "\n" not in banner.plain
    assert banner.plain.startswith("⚠ busy machine (before and after the run): load 4.50")
    assert " · unstable: its 2 processes measured the same code a median 25.0 % apart" in (
        banner.plain
    )
    from jitbench.results.analysis.machine import run_flags

    assert run_flags(both.environment, analyse(both).process_spread) == ["busy", "unstable"]
    assert run_flags({}, analyse(run).process_spread) == []
    # The HTML page says both, as the terminal does.
    from jitbench.report import pages

    html = pages.render_run_page(both)
    assert "unstable: its 2 processes measured the same code a median 25.0 % apart" in html
    assert "from 2 processes, which measured the same code a median 25.0 % apart" in html


def test_many_processes_disagree_warnings_are_one_line_and_the_rest_stay_whole() -> None:
    from dataclasses import replace

    from jitbench.measure import diagnose
    from jitbench.render.run_table import MAX_PROCESS_WARNINGS, problems
    from jitbench.results import Diagnostic, Severity

    run = load_run(RUN_FILE)
    split = Diagnostic(
        code=diagnose.PROCESSES_DISAGREE, severity=Severity.WARNING, message="apart", hint="h"
    )
    note = replace(split, severity=Severity.INFO)  # every mode moved alike: not a problem
    other = Diagnostic(code="large-jaxpr", severity=Severity.WARNING, message="big", hint="h")

    def ms_of(count: int) -> list[Measurement]:
        ms = [
            replace(m, diagnostics=(split,) if i < count else (note,))
            for i, m in enumerate(run.measurements)
        ]
        ms[-1] = replace(ms[-1], diagnostics=(*ms[-1].diagnostics, other))
        return ms

    def marked(count: int) -> list[str]:
        return problems(replace(run, measurements=tuple(ms_of(count))))

    few = marked(MAX_PROCESS_WARNINGS)
    assert [line.split(": ")[1] for line in few] == [diagnose.PROCESSES_DISAGREE] * 3 + [
        "large-jaxpr"
    ]
    many = marked(MAX_PROCESS_WARNINGS + 1)
    assert len(many) == 2 and many[0] == "cumulative[S] cpu:0 float32 jit: large-jaxpr: big"
    assert many[1].startswith(
        "processes-disagree: 4 measurements' processes measured them 1.5× or more apart: "
        "double[S] cpu:0 flo…"
    )
    assert len(many[1]) <= 100  # a note is one line under the table
    detailed = problems(
        replace(run, measurements=tuple(ms_of(MAX_PROCESS_WARNINGS + 1))), detailed=True
    )
    assert detailed[0] == "cumulative[S] cpu:0 float32 jit: large-jaxpr: big — hint: h"
    assert detailed[1].startswith(
        "processes-disagree: 4 measurements' processes measured them 1.5× or more apart: "
        "double[S] cpu:0 float32 numpy, double[S] cpu:0 float32 eager, double[S] cpu:0 float32 "
        "jit, cumulative[S] cpu:0 float32 numpy — hint:"
    )


def test_an_incomplete_runs_tables_say_so_first() -> None:
    """The HTML page said "incomplete"; the terminal, markdown and CSV tables of
    `jitbench report partial.json --format …` looked like a finished run."""
    from dataclasses import replace

    from jitbench.render.run_markdown import run_markdown
    from jitbench.render.run_table import incomplete_banner

    run = load_run(RUN_FILE)
    assert incomplete_banner(run) is None and "incomplete" not in run_markdown(run)
    partial = replace(run, complete=False)
    banner = incomplete_banner(partial)
    assert banner is not None and banner.plain.startswith("⚠ incomplete run (interrupted")
    assert banner.plain.endswith("finishes it (2 case(s) so far)")
    assert run_markdown(partial).rstrip().endswith("`jitbench run --resume RUN.json` finishes it.")
    nothing = replace(partial, measurements=())
    assert incomplete_banner(nothing).plain.endswith("(none yet)")  # type: ignore[union-attr]
