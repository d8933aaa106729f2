"""The gate fails closed: what it cannot vouch for (a partial run on either side, a large
change too few samples can test) never reads as a pass, a run file's free-form
environment of unexpected types never crashes it, and its bootstrap's memory is bounded
whatever the sample count."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from jitbench import stats
from jitbench.cli import app
from jitbench.gate import Verdict, compare
from jitbench.results import run_from_dict, save_run
from tests.gate.builders import ENV, make_run, meas, spread


def _compare(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["compare", *map(str, args)])
    return result.exit_code, " ".join(result.output.split())


def _sides(tmp_path: Path, *, new_complete: bool = True, factor: float = 1.0, n: int = 30):
    cases = ("a", "b", "c")
    base = make_run(*(meas(w, samples=spread(1e-3, n)) for w in cases), run_id="base")
    kept = cases if new_complete else cases[:1]
    new = make_run(*(meas(w, samples=spread(1e-3 * factor, n)) for w in kept), run_id="new")
    if not new_complete:
        new = replace(new, complete=False, finished_at=None)
    return save_run(base, tmp_path / "base.json"), save_run(new, tmp_path / "new.json")


def test_a_partial_new_run_against_a_complete_base_does_not_pass(tmp_path: Path) -> None:
    base, new = _sides(tmp_path, new_complete=False)
    code, output = _compare(base, new, "--json", tmp_path / "gate.json")
    assert code == 4, output
    assert "INCONCLUSIVE" in output and "the new run new is partial" in output
    assert "--allow-inconclusive" in output and "jitbench run --resume" in output
    gate = json.loads((tmp_path / "gate.json").read_text())
    assert gate["inconclusive"] and not gate["has_regression"]
    unreached = [e for e in gate["entries"] if e["verdict"] == "removed"]
    assert unreached and all("partial and stopped before" in e["note"] for e in unreached)
    # Accepted on purpose: exit 0, the warning still printed.
    code, output = _compare(base, new, "--allow-inconclusive")
    assert code == 0 and "partial" in output
    # A partial base is as blind.
    code, _ = _compare(new, base)
    assert code == 4


def test_a_complete_run_that_left_a_workload_out_still_passes(tmp_path: Path) -> None:
    base, _ = _sides(tmp_path)
    fewer = make_run(meas("a", samples=spread(1e-3, 30)), run_id="fewer")
    code, output = _compare(base, save_run(fewer, tmp_path / "fewer.json"))
    assert code == 0 and "pass:" in output


def test_a_large_slowdown_with_too_few_samples_is_inconclusive_not_a_pass(tmp_path: Path) -> None:
    base, new = _sides(tmp_path, factor=100.0, n=3)
    cmp = compare(*(run_from_dict(json.loads(p.read_text())) for p in (base, new)))
    assert cmp.count(Verdict.INCONCLUSIVE) == 3 and not cmp.has_regression
    code, output = _compare(base, new)
    assert code == 4, output
    assert "could not be tested with so few samples" in output


def test_help_says_how_an_inconclusive_gate_is_treated() -> None:
    result = CliRunner().invoke(app, ["compare", "--help"])
    text = " ".join(result.output.split())
    assert "4 when the gate is inconclusive" in text and "--allow-inconclusive" in text


ODD = [1, 2.5, True, "text", [1, "a"], {"a": {"b": 1}}, None]


@pytest.mark.parametrize("key", ["versions", "devices", "env", "git", "threads", "process"])
@pytest.mark.parametrize("value", ODD, ids=lambda v: type(v).__name__)
def test_environment_fields_of_other_types_never_crash_compare_or_report(
    key: str, value: object, tmp_path: Path
) -> None:
    good = make_run(meas(samples=spread(1e-3, 10)), run_id="good")
    odd = make_run(meas(samples=spread(1e-3, 10)), run_id="odd", env={**ENV, key: value})
    paths = [save_run(r, tmp_path / f"{r.run_id}.json") for r in (good, odd)]
    for args in ([paths[0], paths[1]], [paths[1], paths[0]]):
        code, output = _compare(*args)
        assert code == 0, output
    result = CliRunner().invoke(app, ["report", str(paths[1]), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    table = CliRunner().invoke(app, ["report", str(paths[1]), "--format", "table"])
    assert table.exit_code == 0, table.output


def test_a_versions_entry_of_another_type_is_left_out_not_shown() -> None:
    from jitbench.results.codec import readable_environment

    env = readable_environment({"versions": {"jax": "0.10", "numpy": [1, 2]}, "devices": [3]})
    assert env == {"versions": {"jax": "0.10"}, "devices": []}


def test_the_bootstrap_of_a_million_samples_holds_no_resample_matrix() -> None:
    """Resampled as before, 10⁶ samples took 2000 × 10⁶ × 8 bytes: 16 GB a side."""
    import tracemalloc

    rng = np.random.default_rng(0)
    a, b = rng.lognormal(size=10**6), rng.lognormal(size=10**6) * 1.01
    tracemalloc.start()
    ratio = stats.ratio_of_medians(a, b)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 64 * 2**20, peak  # a sorted copy of a side, and the medians
    assert ratio.low is not None and ratio.high is not None
    assert ratio.low < ratio.value < ratio.high
    assert ratio.high / ratio.low < 1.01


@pytest.mark.parametrize("n", [7, 8, 60])
def test_the_direct_bootstrap_medians_have_the_resampled_ones_distribution(
    n: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = np.random.default_rng(1).lognormal(size=n)
    resampled = stats._bootstrap_medians(x, 20_000, np.random.default_rng(2))
    monkeypatch.setattr(stats, "BOOTSTRAP_MAX_ELEMENTS", 0)
    direct = stats._bootstrap_medians(x, 20_000, np.random.default_rng(3))
    # The same distribution: two-sample Kolmogorov–Smirnov distance within sampling error
    # (1.36·√(2/20000) ≈ 0.014 at 95 %).
    points = np.union1d(direct, resampled)
    cdf = [np.searchsorted(np.sort(d), points, side="right") / len(d) for d in (direct, resampled)]
    assert np.max(np.abs(cdf[0] - cdf[1])) < 0.02


def test_the_median_interval_of_many_samples_is_the_exact_rule_at_its_edge() -> None:
    n = stats.EXACT_CI_MAX_N
    for m in (n, n - 1):
        assert stats._median_ci_indices_large(m, 0.95) == stats.median_ci_indices(m)
    lo, hi = stats.median_ci_indices(10**6)
    assert lo + hi == 10**6 - 1 and 499_000 < lo < 499_100


def test_modes_are_judged_as_before_where_the_samples_fit(tmp_path: Path) -> None:
    """Below the bound, the bootstrap draws the same resamples as before (the same
    intervals in every stored comparison)."""
    a, b = spread(1e-3, 50), spread(1.1e-3, 40)
    rng = np.random.default_rng(0)
    before_a = np.median(rng.choice(np.asarray(a), size=(2000, 50), replace=True), axis=1)
    before_b = np.median(rng.choice(np.asarray(b), size=(2000, 40), replace=True), axis=1)
    low, high = np.percentile(before_a / before_b, [2.5, 97.5])
    ratio = stats.ratio_of_medians(a, b)
    assert (ratio.low, ratio.high) == (pytest.approx(low), pytest.approx(high))
