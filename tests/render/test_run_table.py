"""The terminal run table's notes."""

from __future__ import annotations

from pathlib import Path

from jitbench import formatting as fmt
from jitbench.config import RunConfig
from jitbench.results import load_run

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
    spread = two.process_spread
    assert spread is not None
    assert interval_footer(two).endswith(
        f", which measured the same code a median {fmt.percent(spread.times)} apart"
        + (f" (speedups {fmt.percent(spread.speedups)})." if spread.speedups is not None else ".")
    )


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
        "⚠ unstable run: its 2 processes measured the same code a median 25 % apart"
    )
    # On a busy machine as well: one line, the machine's reasons first.
    from jitbench.measure.machine import MachineState

    busy = MachineState(cores_total=2, cores_used=1, load_avg=(4.5, 3.0, 2.0)).to_dict()
    both = replace(slower, environment={"machine_before": busy, "machine_after": busy})
    banner = machine_banner(both)
    assert banner is not None and "\n" not in banner.plain
    assert banner.plain.startswith("⚠ busy machine (before and after the run): load 4.50")
    assert " · unstable: its 2 processes measured the same code a median 25 % apart" in (
        banner.plain
    )
    # The HTML page says both, as the terminal does.
    from jitbench.report import pages

    html = pages.render_run_page(both)
    assert "unstable: its 2 processes measured the same code a median 25 % apart" in html
    assert "from 2 processes, which measured the same code a median 25 % apart" in html
