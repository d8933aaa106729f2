"""The terminal run table's notes."""

from __future__ import annotations

from pathlib import Path

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
