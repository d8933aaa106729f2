"""A comparison that says nothing says so: a run compared with itself, runs on both sides,
or two runs with no case and mode in common (the gate exits 2: it checked nothing)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from jitbench.cli import app
from jitbench.gate import compare
from jitbench.results import dump_run
from tests.gate.builders import make_run, meas, spread


def test_a_run_compared_with_itself_warns() -> None:
    run = make_run(meas(samples=spread(1e-3, 20)), run_id="same")
    [warning] = compare(run, run).warnings
    assert "same run (same)" in warning
    assert compare(run, make_run(meas(samples=spread(1e-3, 20)), run_id="other")).warnings == ()


def test_runs_with_no_case_in_common_warn() -> None:
    base = make_run(meas("a", samples=spread(1e-3, 20)), run_id="b")
    new = make_run(meas("z", samples=spread(1e-3, 20)), meas("y", samples=spread(1e-3, 20)))
    cmp = compare(base, new)
    assert not cmp.has_regression and cmp.warnings == ()
    reason = cmp.nothing_compared
    assert reason is not None
    assert "base (1 measurement(s)) and new (2) have no case and mode in common" in reason
    assert cmp.to_dict()["warnings"] == [reason]
    assert compare(base, base).nothing_compared is None


def test_compare_prints_the_warnings(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    base.write_text(dump_run(make_run(meas("a", samples=spread(1e-3, 20)), run_id="b")))
    new = tmp_path / "new.json"
    new.write_text(dump_run(make_run(meas("z", samples=spread(1e-3, 20)), run_id="n")))
    result = CliRunner().invoke(app, ["compare", str(base), str(new), "--json", "-"])
    assert result.exit_code == 2  # a gate that compared nothing checked nothing
    stderr = " ".join(result.stderr.split())
    assert "warning: base (1 measurement(s)) and new (1) have no case" in stderr
    assert "error: the gate compared nothing, so it checked nothing (exit 2)" in stderr
    assert json.loads(result.stdout)["warnings"]  # and what it wrote is kept
    shown = CliRunner().invoke(app, ["compare", str(base), str(new)])
    assert "NOTHING COMPARED: 1 new, 1 removed" in shown.stdout  # the line agrees with exit 2
    assert "pass:" not in shown.stdout and "INCONCLUSIVE" not in shown.stdout
    itself = CliRunner().invoke(app, ["compare", str(base), str(base)])
    assert "same run (b)" in " ".join(itself.stderr.split())


def test_runs_on_both_sides_warn(tmp_path: Path) -> None:
    from jitbench.gate import merge_runs

    one = make_run(meas(samples=spread(1e-3, 20)), run_id="one")
    two = make_run(meas(samples=spread(1.1e-3, 20)), run_id="two")
    three = make_run(meas(samples=spread(1.2e-3, 20)), run_id="three")
    cmp = compare(merge_runs([one, two]), merge_runs([two, three]))
    [warning] = cmp.warnings
    assert warning.startswith("base and new both hold run(s) two, so they are partly the same")
    assert compare(merge_runs([one, two]), three).warnings == ()


def test_cases_in_common_none_timed_compare_nothing() -> None:
    from jitbench.results import Mode, Status

    base = make_run(
        meas("a", Mode.NUMPY, samples=spread(1e-3, 20)), meas("a", samples=spread(1e-3, 20))
    )
    unsampled = make_run(meas("a", Mode.NUMPY), meas("a"), run_id="n")
    reason = compare(base, unsampled).nothing_compared
    assert reason is not None and "none of the 1 JAX case(s)" in reason
    assert "so nothing was compared" in reason
    skipped = make_run(
        meas("a", Mode.NUMPY, samples=spread(1e-3, 20)), meas("a", status=Status.SKIPPED)
    )
    reason = compare(base, skipped).nothing_compared
    assert reason is not None and "only NumPy was compared" in reason
    numpy_only = make_run(meas("a", Mode.NUMPY, samples=spread(1e-3, 20)))
    assert compare(numpy_only, numpy_only).nothing_compared is None  # a NumPy-only suite


def test_compare_of_an_unsampled_run_exits_2(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    base.write_text(dump_run(make_run(meas("a", samples=spread(1e-3, 20)), run_id="b")))
    new = tmp_path / "new.json"
    new.write_text(dump_run(make_run(meas("a"), run_id="n")))
    result = CliRunner().invoke(app, ["compare", str(base), str(new)])
    assert result.exit_code == 2
    assert "NOTHING COMPARED" in result.stdout and "pass:" not in result.stdout


def test_an_output_never_replaces_a_run_file(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    base.write_text(dump_run(make_run(meas("a", samples=spread(1e-3, 20)), run_id="b")))
    kept = base.read_bytes()
    for option in ("--json", "--markdown", "--html"):
        result = CliRunner().invoke(app, ["compare", str(base), str(base), option, str(base)])
        assert result.exit_code == 2, result.output
        assert "is a jitbench run file, which an output never replaces" in " ".join(
            result.stderr.split()
        )
    assert base.read_bytes() == kept


def test_markdown_and_json_both_on_stdout_are_refused(tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    base.write_text(dump_run(make_run(meas("a", samples=spread(1e-3, 20)), run_id="b")))
    result = CliRunner().invoke(
        app, ["compare", str(base), str(base), "--json", "-", "--markdown", "-"]
    )
    assert result.exit_code == 2 and "would both go to stdout" in " ".join(result.stderr.split())
