"""The gate's result model (`jitbench.gate.model`): thresholds, the JSON form and the
public surface."""

from __future__ import annotations

import json

import pytest

import jitbench
from jitbench.errors import ConfigError
from jitbench.gate import Thresholds, compare
from tests.gate.builders import make_run, meas, spread


@pytest.mark.parametrize(
    "kwargs",
    [
        {"threshold": 1.0},
        {"threshold": 0.9},
        {"threshold": float("inf")},
        {"alpha": 0.0},
        {"alpha": 1.0},
        {"compile_threshold": 1.0},
        {"compile_floor_s": -1.0},
    ],
)
def test_bad_thresholds_raise_config_error(kwargs):
    with pytest.raises(ConfigError):
        compare(make_run(), make_run(), **kwargs)


def test_unknown_p_adjust_is_a_config_error():
    with pytest.raises(ConfigError, match="--p-adjust"):
        Thresholds(p_adjust="holm")


def test_to_dict_is_strict_json():
    cmp = compare(
        make_run(meas(samples=spread(1e-3, 10), compile_s=0.0)),
        make_run(meas(samples=spread(1.5e-3, 10), compile_s=0.1)),
    )
    data = json.loads(json.dumps(cmp.to_dict(), allow_nan=False))
    assert data["schema"] == "jitbench.comparison"
    assert data["has_regression"] is True
    assert data["entries"][0]["verdict"] == "regression"
    assert data["entries"][0]["compile"]["ratio"] is None  # infinite ratio from a 0 s base
    assert data["counts"]["regression"] == 1


def test_compare_is_exported():
    assert jitbench.compare is compare
    assert "compare" in jitbench.__all__ and "Comparison" in jitbench.__all__
