"""The comparison page: cases aligned, the gate's verdicts shown as given, ratios with
intervals, differing case sets warned about, files named from labels."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from jitbench import save_run
from jitbench.gate import Verdict, compare
from jitbench.report import comparison, pages
from jitbench.results import Mode, Run
from tests.report.builders import labelled, relabelled, slower
from tests.report.figure_check import checked


def test_cases_align_with_the_gates_verdicts(run: Run) -> None:
    base = labelled(run, "before")
    new = labelled(slower(run, "double", 3.0, run_id="new-run"), "after")
    cmp = compare(base, new)
    a = comparison.align([base, new], [cmp])
    assert a.by_device and not a.sets_differ and not a.same_run
    assert a.names == ("before", "after")
    rows = {(r.label, r.mode): r for r in a.rows}
    jit = rows[("double[S]", Mode.JIT)]
    assert [m.case.key for m in jit.measurements if m] == [jit.measurements[0].case.key] * 2
    change = jit.changes[0]
    entry = next(e for e in cmp.entries if e.workload == "double" and e.mode is Mode.JIT)
    assert change is not None and change.verdict is entry.verdict  # the gate's, as given
    assert change.ratio == entry.ratio and (change.low, change.high) == (
        entry.ratio_low,
        entry.ratio_high,
    )
    assert change.ratio is not None and change.ratio > 2
    assert comparison.page_name([base, new]) == "compare-before-vs-after.html"


def test_differing_case_sets_are_warned_about(run: Run) -> None:
    fewer = replace(
        run,
        run_id="fewer",
        measurements=tuple(m for m in run.measurements if m.case.workload != "double"),
    )
    cmp = compare(run, fewer)
    a = comparison.align([run, fewer], [cmp])
    assert a.sets_differ and a.only_in[0] == ("double[S]",) and a.only_in[1] == ()
    assert all(k[0] != "double" for k in a.common)
    html = pages.render_comparison_page([run, fewer], [cmp])
    assert 'id="sets-differ"' in html and "Only in " in html
    removed = [r for r in a.rows if r.label == "double[S]"]
    assert removed and all(r.changes[0].verdict is Verdict.REMOVED for r in removed)


def test_numpy_on_a_second_device_shows_the_verdict_it_was_judged_with() -> None:
    """The gate judges NumPy once per case; the page's NumPy row on the other device fell
    back to a bare ratio with no verdict."""
    from jitbench import load_run

    examples = Path(__file__).resolve().parents[2] / "reports" / "examples" / "runs"
    base = load_run(examples / "20261123T064616Z-8ae277.json")
    new = load_run(examples / "20261126T044455Z-f00e30.json")
    a = comparison.align([base, new], [compare(base, new)])
    rows = {(r.label, r.devices, r.mode): r for r in a.rows}
    cpu = rows[("mandelbrot[S]", "cpu:0", Mode.NUMPY)].changes[0]
    gpu = rows[("mandelbrot[S]", "gpu:0", Mode.NUMPY)].changes[0]
    assert cpu is not None and gpu is not None and cpu.verdict is not None
    assert (gpu.verdict, gpu.ratio) == (cpu.verdict, cpu.ratio)
    assert gpu.note.startswith("judged on cpu:0")


def test_a_comparison_of_nothing_in_common_says_so_and_names_the_dtypes(run: Run) -> None:
    """An --x64 run against a float32 one: the page said "The gate passes: no regression"
    (the CLI exits 2) and "Only in A: double[S]. Only in B: double[S]."."""
    x64 = replace(
        run,
        run_id="x64",
        measurements=tuple(
            replace(m, case=replace(m.case, dtype="float64")) for m in run.measurements
        ),
    )
    html = pages.render_comparison_page([run, x64], [compare(run, x64)])
    assert "The gate compared nothing, so it checked nothing" in html
    assert "The gate passes" not in html
    assert "double[S] float32" in html and "double[S] float64" in html


def test_the_same_run_twice_is_said(run: Run) -> None:
    html = pages.render_comparison_page([run, run], [compare(run, run)])
    assert "The same run is on both sides" in html


def test_runs_on_different_devices_align_by_workload(run: Run) -> None:
    gpu = relabelled(run, device="gpu:0", kind="H100", host="gpuhost", run_id="gpu-run")
    a = comparison.align([run, gpu], [compare(run, gpu)])
    assert not a.by_device and not a.sets_differ
    jit = next(r for r in a.rows if r.label == "double[S]" and r.mode is Mode.JIT)
    assert jit.devices == "cpu:0 · gpu:0"
    change = jit.changes[0]
    assert change is not None and change.verdict is None and change.ratio is not None
    assert "different devices" in change.note
    fig = checked(comparison.speedup_side_by_side(a))
    # one trace per run, side by side in each case
    assert fig is not None and [t.name for t in fig.data] == [run.run_id, "gpu-run"]


def test_cli_compare_writes_the_page(cli_here, run: Run, tmp_path: Path) -> None:
    a = save_run(labelled(run, "base line"), tmp_path / "a.json")
    b = save_run(labelled(slower(run, "double", 3.0, run_id="b"), "head"), tmp_path / "b.json")
    page = tmp_path / "out" / "cmp.html"
    res = cli_here("compare", str(a), str(b), "--html", str(page))
    assert res.returncode in (0, 1), res.stderr
    assert f"comparison page written to {page}" in res.stdout
    html = page.read_text()
    assert "base line → head" in html
    assert (page.parent / "plotly.min.js").is_file()
    assert re.search(
        r'<meta name="jitbench-runs" content="\[&#34;[^"]+&#34;, &#34;b&#34;\]">', html
    )
    res = cli_here("compare", str(a), str(b), "--html", str(tmp_path))
    assert res.returncode == 2 and "is a folder" in res.stderr


def test_labels_that_reduce_to_one_file_name_name_two_pages(run: Run) -> None:
    """'速い' and '日本' both reduced to '_', so A-vs-B and A-vs-C wrote one file, and
    labels past 48 characters that differed at their end did the same."""
    a, b, c = (labelled(replace(run, run_id=f"r{i}"), name) for i, name in enumerate("速日遅"))
    assert comparison.page_name([a, b]) != comparison.page_name([a, c])
    long = "nightly-build-of-the-main-branch-on-the-shared-runner-"
    d, e = (labelled(replace(run, run_id=f"l{i}"), long + tag) for i, tag in enumerate("xy"))
    assert comparison.page_name([d, a]) != comparison.page_name([e, a])
    assert comparison.page_name([d, a]).startswith("compare-nightly-build-of-the-main-branc")


def test_geometric_means_leave_out_on_every_side_what_one_side_leaves_out() -> None:
    """A case whose processes disagree in one run left that run's geometric mean but
    stayed in the other's, so the two means covered different cases."""
    from tests.gate.builders import make_run, meas, spread

    def case(workload: str, jit_slowdown: float) -> list:
        counts = (10, 10)
        numpy = spread(1e-3, 10) * 2
        jit = spread(2e-4, 10) + spread(2e-4 * jit_slowdown, 10)
        return [
            replace(meas(workload, Mode.NUMPY, numpy), run_sample_counts=counts),
            replace(meas(workload, Mode.JIT, jit), run_sample_counts=counts),
        ]

    same = [m for w in "abcd" for m in case(w, 1.0)]
    base = make_run(*same, *case("e", 1.0), run_id="base")
    new = make_run(*same, *case("e", 2.0), run_id="new")  # e's processes: 2x apart
    a = comparison.align([base, new], [compare(base, new)])
    assert {k[0] for k in a.headline_keys(base, Mode.JIT)} == set("abcd")
    assert a.headline_keys(new, Mode.JIT) == a.headline_keys(base, Mode.JIT)
    html = pages.render_comparison_page([base, new], [compare(base, new)])
    row = r"<td>jit</td><td class=\"num\">[^<]*</td><td class=\"num\">(\d+)</td>"
    assert re.findall(row, html) == ["4", "4"]
