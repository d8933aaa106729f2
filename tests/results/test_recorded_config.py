"""`Run.config` is typed (`RecordedConfig`: the RunConfig plus where the run came from),
while the "config" of the JSON file keeps the layout it has always had, both ways."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from jitbench.config import Mode, RunConfig, SamplingPlan
from jitbench.results import dump_run, run_from_dict
from jitbench.results.model import RecordedConfig, Run, Selection

SELECTION = [{"workload": "w", "suite": "/s/suite.py"}, {"workload": "local", "suite": None}]


def make_run(config: object) -> Run:
    return Run(
        run_id="r1",
        started_at="2026-01-01T00:00:00+00:00",
        finished_at=None,
        complete=False,
        environment={},
        config=config,  # type: ignore[arg-type]
        measurements=(),
    )


def reloaded(run: Run) -> tuple[Run, str]:
    text = dump_run(run)
    return run_from_dict(json.loads(text)), text


def test_a_run_records_its_settings_then_its_selection_as_before() -> None:
    settings = RunConfig.quick_settings(modes=(Mode.JIT,), timeout_s=2.0)
    record = RecordedConfig(
        settings=settings,
        selection=(Selection(workload="w", suite="/s/suite.py"), Selection(workload="local")),
    )
    run = make_run(record)
    # The layout `jitbench run` has always written: RunConfig.to_dict(), then "selection".
    expected = {**settings.to_dict(), "selection": SELECTION}
    assert run.config_record() == expected
    assert list(json.loads(dump_run(run))["config"]) == list(expected)
    again, text = reloaded(run)
    assert again.config == record and dump_run(again) == text  # byte for byte


def test_resumed_at_pooled_and_unknown_keys_survive_a_load_and_save() -> None:
    data = {
        **RunConfig().to_dict(),
        "selection": SELECTION,
        "resumed_at": ["2026-01-02T00:00:00+00:00"],
        "pooled": {"runs": ["a", "b"], "excluded": []},
        "written_by_a_newer_jitbench": {"x": 1},
    }
    run = make_run(data)
    assert run.config.settings == RunConfig()
    assert run.config.resumed_at == ("2026-01-02T00:00:00+00:00",)
    assert run.config.pooled == {"runs": ["a", "b"], "excluded": []}
    assert run.config.extra == {"written_by_a_newer_jitbench": {"x": 1}}
    assert run.config_record() == data and list(run.config_record()) == list(data)
    again, text = reloaded(run)
    assert again.config == run.config and dump_run(again) == text


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"plan": {"budget_s": -1}, "selection": SELECTION},
        {"modes": ["warp"], "quick": True},
        {"selection": "not a list", "resumed_at": "yesterday", "pooled": [1]},
    ],
    ids=["empty", "bad-budget", "unknown-mode", "odd-shapes"],
)
def test_what_cannot_be_read_is_kept_as_found(data: dict[str, object]) -> None:
    run = make_run(data)
    assert run.config.settings is None
    assert run.config_record() == data
    again, _ = reloaded(run)
    assert again.config_record() == data


def test_settings_missing_from_an_older_file_take_their_defaults() -> None:
    run = make_run({"plan": {"budget_s": 2.0}, "quick": True})
    # ... except threads: a file from before --threads was measured with the libraries'
    # own thread pools, and says so when resumed or compared; and processes: one from
    # before --processes was measured in one process (the default is now two); the
    # plan's rewarm_s: one from before it re-warmed with one call (the default is 4 ms);
    # and overlap: one from before --overlap measured its processes one after another.
    assert run.config.settings == RunConfig(
        quick=True,
        plan=SamplingPlan(budget_s=2.0, rewarm_s=0.0),
        threads=None,
        processes=1,
        overlap=False,
    )
    assert run.config.selection is None and run.config.resumed_at == ()


def test_a_run_built_from_the_dict_form_is_typed() -> None:
    run = make_run(RecordedConfig(settings=RunConfig(), selection=()))
    record = run.config_record()
    assert record["plan"]["rounds"] == 1 and "pooled" not in record and "selection" in record
    pooled = replace(run, config={**record, "pooled": {"runs": ["r1"], "excluded": []}})
    assert isinstance(pooled.config, RecordedConfig)
    assert pooled.config.settings == RunConfig() and pooled.config.selection == ()
    assert pooled.config.pooled == {"runs": ["r1"], "excluded": []}
