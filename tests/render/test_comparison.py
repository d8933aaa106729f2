"""Rendering a comparison (`jitbench.render.comparison`): markdown for a pull request and
the rich table, on constructed runs."""

from __future__ import annotations

import io
import re
from dataclasses import replace

from jitbench.gate import compare
from jitbench.render.comparison import (
    comparison_markdown,
    comparison_report,
    comparison_table,
    inconclusive_warning,
    md_escape,
    summary_line,
    verdict_lines,
)
from jitbench.results import Run
from tests.gate.builders import ENV, make_run, meas, spread


def _unescaped_pipes(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line))


def test_markdown_names_regressed_workloads_and_escapes_pipes():
    ok = spread(1e-3, 12)
    base = make_run(meas("a|b", samples=ok), meas("calm", samples=ok))
    new = make_run(meas("a|b", samples=spread(1.5e-3, 12)), meas("calm", samples=ok))
    md = comparison_markdown(compare(base, new))
    head = md.splitlines()[0]
    assert "❌" in head and "a\\|b" in head and "calm" not in head
    # Every table row keeps its column count despite the pipe in the name.
    table_lines = [ln for ln in md.splitlines() if ln.startswith("| ")]
    assert table_lines
    entry_rows = [ln for ln in table_lines if not ln.startswith(("| device", "| cpu:0", "| ---"))]
    assert len(entry_rows) == 2 + 3  # regressions (header + 1 row), all (header + 2 rows)
    assert {_unescaped_pipes(ln) for ln in entry_rows} == {13}  # 12 columns each
    assert "### Regressions" in md


def _five_compiles(compile_s: float) -> Run:
    m = meas("slowc", samples=spread(1e-3, 12), compile_s=compile_s)
    assert m.compile is not None
    repeats = tuple(compile_s * f for f in (0.98, 0.99, 1.0, 1.01, 1.02))
    return make_run(replace(m, compile=replace(m.compile, compile_repeats_s=repeats)))


def test_markdown_lists_compile_regressions_apart():
    md = comparison_markdown(compare(_five_compiles(0.1), _five_compiles(0.3)))
    assert "slowc" in md.splitlines()[0]
    assert "### Compile-time regressions" in md and "### Regressions" not in md
    assert "| slowc | S | cpu:0 | float32 | jit | 100 ms | 300 ms | +200.0 % |" in md


def test_untested_compile_changes_are_listed_as_such():
    ok = spread(1e-3, 12)
    cmp = compare(
        make_run(meas("slowc", samples=ok, compile_s=0.0285)),
        make_run(meas("slowc", samples=ok, compile_s=0.0816)),
    )
    md = comparison_markdown(cmp)
    assert md.splitlines()[0].startswith("## ✅")
    assert "### Compile-time changes not tested" in md and "Compile-time regressions" not in md
    assert "1 compile-time change(s) not tested" in summary_line(cmp)
    assert summary_line(cmp).startswith("pass:")


def test_markdown_pass_and_environment_warning():
    ok = spread(1e-3, 12)
    env2 = {**ENV, "versions": {"jax": "0.11.0", "numpy": "2.0"}}
    md = comparison_markdown(
        compare(make_run(meas(samples=ok)), make_run(meas(samples=ok), env=env2))
    )
    assert md.splitlines()[0].startswith("## ✅")
    assert "no regression" in md.splitlines()[0]
    assert "**jax**: 0.10.2 → 0.11.0" in md


def test_md_escape():
    assert md_escape("a|b") == "a\\|b"
    assert md_escape("x*y_z") == "x\\*y\\_z"
    assert md_escape("two\nlines") == "two lines"


def test_rich_table_has_a_row_per_entry():
    ok = spread(1e-3, 12)
    cmp = compare(
        make_run(meas("a", samples=ok), meas("b", samples=ok)),
        make_run(meas("a", samples=spread(2e-3, 12)), meas("b", samples=ok)),
    )
    assert comparison_table(cmp).row_count == 2
    assert comparison_table(cmp, all_rows=False).row_count == 1


def test_console_report_ends_with_the_verdict_and_warns_of_untestable_changes():
    from rich.console import Console

    few, many = spread(1e-3, 3), spread(1e-3, 12)
    cmp = compare(
        make_run(meas("few", samples=few), meas("slow", samples=many)),
        make_run(meas("few", samples=spread(2e-3, 3)), meas("slow", samples=spread(2e-3, 12))),
    )
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(comparison_report(cmp))
    lines = console.export_text().splitlines()
    assert lines[-2:] == ["FAIL: 1 regression, 1 inconclusive", "regressed: slow"]
    assert inconclusive_warning(cmp) == (
        "1 large change(s) could not be tested with so few samples; "
        "rerun both sides with more samples (--min-samples)."
    )
    calm = compare(make_run(meas(samples=many)), make_run(meas(samples=many)))
    assert inconclusive_warning(calm) is None
    assert [t.plain for t in verdict_lines(calm)] == ["pass: 1 unchanged"]


def test_the_markdown_headline_agrees_with_the_exit_code():
    ok = spread(1e-3, 12)
    other = comparison_markdown(compare(make_run(meas("a", samples=ok)), make_run(meas("b"))))
    assert other.splitlines()[0].endswith("⚠️ jitbench regression gate: nothing compared")
    assert "> - base (1 measurement(s)) and new (1) have no case" in other
    partial = replace(make_run(meas(samples=ok)), complete=False)
    md = comparison_markdown(compare(make_run(meas(samples=ok)), partial))
    assert md.splitlines()[0].endswith(": inconclusive") and "is partial" in md
