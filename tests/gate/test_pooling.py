"""Pooling (`jitbench.gate.pooling`): several runs of one side merged into one, a run the
machine slowed left out, and sides read from files or folders of rounds.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from jitbench.errors import ConfigError, ResultsFormatError
from jitbench.gate import Verdict, compare, load_side, merge_runs, run_levels
from jitbench.render.comparison import comparison_markdown
from jitbench.results import Mode, Run, Status
from tests.gate.builders import ENV, STEADY, make_run, meas, only, runs_at_levels, spread


def test_merge_runs_pools_samples_and_keeps_median_compile():
    r1 = make_run(meas(samples=(1.0, 1.1), compile_s=0.3), meas("b", samples=(1.0,)), run_id="r1")
    r2 = make_run(meas(samples=(1.2,), compile_s=0.1), meas("b", status=Status.ERROR), run_id="r2")
    r3 = make_run(meas(samples=(1.3,), compile_s=0.2), meas("b", samples=(1.0,)), run_id="r3")
    merged = merge_runs([r1, r2, r3])
    assert merged.run_id == "r1+2"
    w = merged.get(("w", "S", "cpu:0", "float32"), Mode.JIT)
    assert w.samples_s == (1.0, 1.1, 1.2, 1.3)
    assert w.compile.total_compile_s == pytest.approx(0.2)
    b = merged.get(("b", "S", "cpu:0", "float32"), Mode.JIT)
    assert b.status is Status.ERROR  # failing in any round is failing
    assert merge_runs([r1]) is r1
    with pytest.raises(ValueError):
        merge_runs([])


def test_compile_is_judged_on_the_median_of_every_pooled_repeat():
    def run_with(repeats, run_id):
        m = meas(samples=spread(1e-3, 12), compile_s=sorted(repeats)[1])
        m = replace(m, compile=replace(m.compile, compile_repeats_s=tuple(repeats)))
        return make_run(m, run_id=run_id)

    # Base: one quiet run and one slow minute; new: two ordinary runs, 25 % above the
    # quiet one. Judged run by run (the lower run's median) this is a compile regression;
    # on the median of all six cold compiles per side it is not.
    base = merge_runs([run_with((0.100, 0.102, 0.104), "b1"), run_with((0.15, 0.16, 0.14), "b2")])
    new = merge_runs([run_with((0.126, 0.128, 0.13), "n1"), run_with((0.127, 0.125, 0.129), "n2")])
    assert base.measurements[0].compile.compile_repeats_s == (0.100, 0.102, 0.104, 0.15, 0.16, 0.14)
    e = only(compare(base, new))
    assert e.compile.base_s == pytest.approx((0.104 + 0.14) / 2)
    assert e.compile.verdict is Verdict.UNCHANGED
    # A real doubling still regresses.
    slower = merge_runs([run_with((0.25, 0.26, 0.24), "s1"), run_with((0.25, 0.27, 0.26), "s2")])
    assert only(compare(base, slower)).compile.verdict is Verdict.REGRESSION


def test_a_run_the_machine_slowed_as_a_whole_is_left_out_of_its_side():
    def run(factor, run_id, compile_s):
        return make_run(
            *(
                meas(f"w{i}", samples=spread(1e-3 * (i + 1) * factor, 8), compile_s=compile_s)
                for i in range(6)
            ),
            run_id=run_id,
        )

    quiet, calm, busy = run(1.0, "quiet", 0.10), run(1.02, "calm", 0.10), run(1.3, "busy", 0.20)
    # Relative to the per-case median of the three runs (calm's): 1/1.02 and 1.3/1.02.
    assert run_levels([quiet, calm, busy]) == [
        pytest.approx(1 / 1.02),
        pytest.approx(1.0),
        pytest.approx(1.3 / 1.02),
    ]
    side = merge_runs([quiet, calm, busy])
    w0 = side.get(("w0", "S", "cpu:0", "float32"), Mode.JIT)
    # the busy run's samples are left out
    assert w0.samples_s == quiet.measurements[0].samples_s + calm.measurements[0].samples_s
    assert w0.compile.compile_repeats_s == (0.10, 0.10, 0.20)  # its compiles still count
    assert side.config.pooled["excluded"] == [{"run_id": "busy", "level": pytest.approx(1.3)}]
    # Siblings within the factor pool as before, and 0 keeps every run.
    assert len(merge_runs([quiet, calm, run(1.1, "near", 0.1)]).measurements[0].samples_s) == 24
    assert len(merge_runs([quiet, calm, busy], disturbed_factor=0).measurements[0].samples_s) == 24

    cmp = compare(side, merge_runs([quiet, run(1.02, "q2", 0.1), calm]))
    left_out = [n for n in cmp.pooling if n.left_out]
    assert len(left_out) == 1
    assert left_out[0].text.startswith("base: run busy left out: 1.30× slower")
    assert [n.text for n in cmp.pooling if not n.left_out][:2] == [
        "base: 3 runs pooled",
        "new: 3 runs pooled",
    ]
    # The busy run's samples are out, so base is two runs against new's three: too few.
    assert "(2 base vs 3 new; a run of --processes K gives K)" in cmp.pooling[-1].text
    assert "measure 4 per side" in cmp.pooling[-1].text
    assert cmp.to_dict()["pooling"][1]["left_out"] is True
    assert not cmp.environment_differences  # pooling is not a measurement difference
    assert "left out" in comparison_markdown(cmp)
    with pytest.raises(ConfigError, match="--disturbed-factor"):
        merge_runs([quiet, busy], disturbed_factor=0.9)


def test_only_a_minority_of_a_sides_runs_is_ever_left_out():
    """Where half a side's runs or more are beyond the factor from its fastest, the machine
    drifted as a whole: leaving them all out judged a real 1.3x slowdown at 1.06x on one
    side's one lucky run (docs/validation/gate-power.md, the noisy day). The
    slowest minority goes; of two runs, neither."""

    def run(factor: float, run_id: str) -> Run:
        return make_run(
            *(meas(f"w{i}", samples=spread(1e-3 * (i + 1) * factor, 8)) for i in range(6)),
            run_id=run_id,
        )

    four = [run(1.0, "lucky"), run(1.17, "r2"), run(1.18, "r3"), run(1.2, "r4")]
    assert merge_runs(four).config.pooled["excluded"] == [
        {"run_id": "r4", "level": pytest.approx(1.2)}
    ]
    five = [*four, run(1.25, "r5")]
    left_out = [x["run_id"] for x in merge_runs(five).config.pooled["excluded"]]
    assert left_out == ["r4", "r5"]
    assert merge_runs([run(1.0, "a"), run(1.3, "b")]).config.pooled["excluded"] == []


def test_merge_runs_keeps_each_runs_median():
    runs = runs_at_levels({"w": [1.0, 1.5, 2.0], **STEADY}, "r")
    w = merge_runs(runs).get(("w", "S", "cpu:0", "float32"), Mode.JIT)
    assert w.run_sample_counts == (8, 8, 8)
    assert w.run_medians_s == pytest.approx((1e-3, 1.5e-3, 2e-3))
    # A pooled side merged again keeps the runs apart.
    again = merge_runs([merge_runs(runs[:2]), runs[2]], disturbed_factor=0)
    assert again.get(("w", "S", "cpu:0", "float32"), Mode.JIT).run_sample_counts == (8, 8, 8)
    # One run: one median, and no partition.
    assert runs[0].measurements[0].run_medians_s == pytest.approx((1e-3,))


def test_compare_accepts_folders_of_rounds(tmp_path):
    from typer.testing import CliRunner

    from jitbench.cli import app
    from jitbench.results import save_run

    for side, center in (("base", 1e-3), ("head", 1.5e-3)):
        for i in range(3):
            save_run(
                make_run(meas(samples=spread(center, 4, 0.02)), run_id=f"{side}{i}"),
                tmp_path / side / "runs" / f"{side}{i}.json",
            )
    # 4 samples per run cannot reach p < 0.01; 3 rounds pooled (12 per side) can.
    single = CliRunner().invoke(
        app,
        [
            "compare",
            str(tmp_path / "base" / "runs" / "base0.json"),
            str(tmp_path / "head" / "runs" / "head0.json"),
        ],
    )
    assert single.exit_code == 4, single.output  # inconclusive: never a pass
    pooled = CliRunner().invoke(
        app,
        [
            "compare",
            str(tmp_path / "base"),
            str(tmp_path / "head"),
            "--json",
            str(tmp_path / "c.json"),
        ],
    )
    assert pooled.exit_code == 1, pooled.output
    data = json.loads((tmp_path / "c.json").read_text())
    assert data["entries"][0]["base_n"] == 12 and data["entries"][0]["verdict"] == "regression"
    (tmp_path / "empty").mkdir()
    empty = CliRunner().invoke(app, ["compare", str(tmp_path / "empty"), str(tmp_path / "head")])
    assert empty.exit_code == 2 and "no run JSON" in empty.output


@pytest.mark.parametrize("factor", [float("nan"), float("inf"), -1.0, 0.5, 1.0, "1.2", None])
def test_a_bad_disturbed_factor_is_refused_before_anything_is_read(factor, tmp_path):
    runs = [make_run(meas(samples=spread(1e-3, 8)), run_id=f"r{i}") for i in range(2)]
    for call in (
        lambda: merge_runs(runs, disturbed_factor=factor),
        lambda: load_side(tmp_path / "missing.json", disturbed_factor=factor),
    ):
        with pytest.raises(ConfigError) as caught:
            call()
        message = str(caught.value)
        assert message.startswith("--disturbed-factor is 0 (keep every run) or a finite factor")
        assert f"got {factor!r}." in message and "such as 1.15" in message


def _save_side(folder, *runs):
    from jitbench.results import save_run

    for run in runs:
        save_run(run, folder / f"{run.run_id}.json")


def test_a_side_reads_its_loose_runs_and_its_runs_folder_alike(tmp_path):
    _save_side(tmp_path, make_run(meas(samples=spread(1e-3, 8)), run_id="loose"))
    _save_side(tmp_path / "runs", make_run(meas(samples=spread(1e-3, 8)), run_id="kept"))
    side = load_side(tmp_path)
    assert side.config.pooled["runs"] == ["loose", "kept"]


def test_two_files_of_one_run_count_once_and_say_so(tmp_path):
    """Five copies of one run turned 3 regressions into 9 in a review: each copy a run of
    evidence, and a typical spread of 0 %. `jitbench report side/once.json --out side`
    puts a second copy in side/runs/."""
    from jitbench.gate.pooling import pooling_notes

    run = make_run(meas(samples=spread(1e-3, 8)), run_id="once")
    _save_side(tmp_path, run)
    _save_side(tmp_path / "runs", run)
    (tmp_path / "copy.json").write_text((tmp_path / "once.json").read_text())
    other = make_run(meas(samples=spread(1.1e-3, 8)), run_id="other")
    _save_side(tmp_path, other)
    side = load_side(tmp_path)
    assert side.config.pooled["runs"] == ["once", "other"]  # once each
    assert len(side.measurements[0].run_sample_counts) == 2
    [pooled, copies] = pooling_notes(side, "base")
    assert pooled.text == "base: 2 runs pooled"
    assert copies.warns and copies.text.startswith("base: run once is in 3 files (")
    assert copies.text.endswith("): counted once")
    (tmp_path / "other.json").unlink()  # one run, in three files: the run, and the note
    alone = load_side(tmp_path)
    assert alone.run_id == "once" and [n.text[:25] for n in pooling_notes(alone, "new")] == [
        "new: run once is in 3 fil"
    ]


def test_two_different_runs_of_one_id_are_refused(tmp_path):
    _save_side(tmp_path, make_run(meas(samples=spread(1e-3, 8)), run_id="once"))
    (tmp_path / "runs").mkdir()
    longer = make_run(meas(samples=spread(1e-3, 9)), run_id="once")
    _save_side(tmp_path / "runs", longer)
    with pytest.raises(ResultsFormatError) as caught:
        load_side(tmp_path)
    assert "hold different runs of one id (once)" in str(caught.value)


def test_a_comparison_in_a_sides_folder_is_named_as_one(tmp_path):
    base = make_run(meas(samples=spread(1e-3, 8)), run_id="b")
    _save_side(tmp_path, base)
    (tmp_path / "gate.json").write_text(compare(base, base).to_json())
    with pytest.raises(ResultsFormatError) as caught:
        load_side(tmp_path)
    assert "gate.json' is a comparison written by `jitbench compare --json`, not a run" in str(
        caught.value
    )


def test_a_run_measured_unlike_its_side_is_pooled_with_a_note_that_stands_out():
    from jitbench.gate.pooling import pooling_notes

    first = make_run(meas(samples=spread(1e-3, 8)), run_id="f32")
    x64 = make_run(
        meas(samples=spread(1e-3, 8)),
        run_id="x64",
        env={**ENV, "x64": True, "git": {"commit": "def", "dirty": False}},
    )
    alike = make_run(meas(samples=spread(1e-3, 8)), run_id="again")
    side = merge_runs([first, x64, alike], disturbed_factor=0)
    [pooled, mixed] = pooling_notes(side, "base")
    assert not pooled.stands_out and mixed.stands_out and mixed.warns and not mixed.left_out
    assert mixed.text.startswith(
        "base: run x64 was not measured like run f32, the first (commit: abc → def; x64: "
        "False → True), yet pooled with it"
    )
    cmp = compare(side, alike)
    assert cmp.to_dict()["pooling"][1]["warns"] is True
