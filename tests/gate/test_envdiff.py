"""Environment differences (`jitbench.gate.envdiff`) between two runs, and commit labels."""

from __future__ import annotations

from jitbench.gate import compare
from jitbench.gate.envdiff import commit_label, config_differences, is_measurement_setting
from tests.gate.builders import ENV, make_run


def test_environment_differences_are_listed():
    env2 = {
        **ENV,
        "host": "other",
        "x64": True,
        "matmul_precision": "highest",
        "versions": {"jax": "0.11.0", "numpy": "2.0"},
        "devices": [{"id": 0, "platform": "gpu", "kind": "H100", "label": "gpu:0"}],
        "git": {"commit": "def", "dirty": True},
    }
    cmp = compare(make_run(env=ENV), make_run(env=env2, config={"plan": {"budget_s": 0.5}}))
    names = {d.name: (d.base, d.new) for d in cmp.environment_differences}
    assert names["jax"] == ("0.10.2", "0.11.0")
    assert names["x64"] == (False, True)
    assert names["matmul_precision"] == ("default", "highest")  # unrecorded: JAX's default
    assert names["host"] == ("box", "other")
    assert "gpu:0=H100" in names["devices"][1]
    assert names["config.plan.budget_s"] == (2.0, 0.5)
    assert "git" not in names and "numpy" not in names
    assert cmp.new_commit == "def dirty"
    assert not compare(make_run(), make_run()).environment_differences


def test_config_differences_leave_out_what_ran_and_how_runs_were_pooled():
    base = {"sizes": ["S"], "seed": 0, "plan": {"budget_s": 2.0}, "pooled": {"runs": ["a", "b"]}}
    new = {"sizes": ["M"], "seed": 1, "plan": {"budget_s": 0.5}}
    diffs = [(d.name, d.base, d.new) for d in config_differences(base, new)]
    assert diffs == [("config.plan.budget_s", 2.0, 0.5)]
    assert is_measurement_setting("plan.rounds")
    assert not is_measurement_setting("modes") and not is_measurement_setting("pooled.runs")


def test_commit_label():
    assert commit_label(make_run(env={**ENV, "git": {"commit": "0123456789abcdef"}})) == (
        "0123456789ab"
    )
    assert commit_label(make_run(env={**ENV, "git": {}})) is None
