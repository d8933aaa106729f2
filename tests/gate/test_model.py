"""The gate's result model (`jitbench.gate.model`): thresholds, the JSON form and the
public surface."""

from __future__ import annotations

import json

import numpy as np
import pytest

import jitbench
from jitbench.errors import ConfigError
from jitbench.gate import Thresholds, compare
from tests.gate.builders import make_run, meas, spread

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        ({"threshold": 1.0}, "--threshold"),
        ({"threshold": 0.9}, "--threshold"),
        ({"threshold": -1.1}, "--threshold"),
        ({"threshold": INF}, "--threshold"),
        ({"threshold": NAN}, "--threshold"),
        ({"threshold": "1.1"}, "--threshold"),
        ({"threshold": True}, "--threshold"),
        ({"alpha": 0.0}, "--alpha"),
        ({"alpha": 1.0}, "--alpha"),
        ({"alpha": -0.01}, "--alpha"),
        ({"alpha": INF}, "--alpha"),
        ({"alpha": NAN}, "--alpha"),
        ({"compile_threshold": 1.0}, "--compile-threshold"),
        ({"compile_threshold": 0.5}, "--compile-threshold"),
        ({"compile_threshold": INF}, "--compile-threshold"),
        ({"compile_threshold": NAN}, "--compile-threshold"),
        ({"compile_floor_s": -1.0}, "--compile-floor"),
        ({"compile_floor_s": INF}, "--compile-floor"),
        ({"compile_floor_s": NAN}, "--compile-floor"),
        ({"compile_floor_s": None}, "--compile-floor"),
        ({"compile_gates": "no"}, "--compile-gate/--no-compile-gate"),
        ({"p_adjust": "holm"}, "--p-adjust"),
        ({"p_adjust": None}, "--p-adjust"),
    ],
)
def test_bad_thresholds_raise_config_error(kwargs, flag):
    with pytest.raises(ConfigError) as caught:
        Thresholds(**kwargs)
    message = str(caught.value)
    [value] = kwargs.values()
    # One line that names the option, shows the bad value and says what would do.
    assert message.startswith(f"{flag} is ") and f"got {value!r}." in message
    assert any(fix in message for fix in ("such as", "one of", "True or False"))
    assert "\n" not in message


def test_thresholds_defaults_and_good_values():
    t = Thresholds()
    assert (t.threshold, t.alpha, t.compile_threshold, t.compile_floor_s) == (1.1, 0.01, 1.25, 0.02)
    assert t.compile_gates is True and t.p_adjust == "bh"
    # Edges that are fine: a zero floor, integers, NumPy scalars.
    Thresholds(threshold=2, compile_floor_s=0, alpha=np.float32(0.05), p_adjust="none")
    # compare() without thresholds judges with these same defaults.
    assert compare(make_run(), make_run()).thresholds == Thresholds()


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
    assert json.loads(cmp.to_json()) == data  # the text `--json` writes
    # One figure a side: the time each run shows, never beside another median.
    assert data["schema_version"] == "1.7"
    entry = data["entries"][0]
    assert "base_median_s" not in entry and "new_median_s" not in entry
    assert (entry["base_s"], entry["new_s"]) == (cmp.entries[0].base_s, cmp.entries[0].new_s)


def test_compare_is_exported():
    assert jitbench.compare is compare
    assert "compare" in jitbench.__all__ and "Comparison" in jitbench.__all__
