"""Render a `Comparison`: rich renderables for the terminal and markdown for a pull request.

Builders return a rich renderable or a string; writing them anywhere is the CLI's job.
"""

from __future__ import annotations

import math

from rich.console import Group
from rich.table import Table
from rich.text import Text

from jitbench import formatting as fmt
from jitbench.formatting import md_escape
from jitbench.gate import FAILING_VERDICTS, Comparison, Entry, SignificanceTest, Verdict
from jitbench.results import Mode

_VERDICT_STYLE = {
    Verdict.REGRESSION: "bold red",
    Verdict.NOW_FAILING: "bold red",
    Verdict.IMPROVEMENT: "green",
    Verdict.FIXED: "green",
    Verdict.UNCHANGED: "dim",
    Verdict.INCONCLUSIVE: "yellow",
    Verdict.NEW: "cyan",
    Verdict.REMOVED: "cyan",
    Verdict.STILL_FAILING: "magenta",
    Verdict.NOT_COMPARED: "dim",
}


def percent_change(ratio: float | None) -> str:
    """'+30.1 %' for a ratio of 1.301; '—' when unknown."""
    if ratio is None or not math.isfinite(ratio):
        return "—"
    return f"{(ratio - 1) * 100:+.1f} %"


def p_value(p: float | None) -> str:
    if p is None:
        return "—"
    return f"{p:.2g}" if p >= 1e-4 else "<1e-4"


def ratio_cell(e: Entry) -> str:
    if e.ratio is None:
        return "—"
    return fmt.ratio_ci(e.ratio, e.ratio_low, e.ratio_high)


def compile_cell(e: Entry) -> str:
    c = e.compile
    if c is None:
        return "—"
    text = f"{fmt.seconds(c.base_s)} → {fmt.seconds(c.new_s)}"
    if c.count > 1:
        text += f" ×{c.count}"
    if c.verdict is not Verdict.UNCHANGED:
        text += f" ({c.verdict.value})"
    return text


def summary_line(cmp: Comparison) -> str:
    """One sentence: how many of each verdict, and whether the gate fails."""
    parts = [f"{cmp.count(v)} {v.value}" for v in Verdict if cmp.count(v)]
    if cmp.compile_regressions:
        parts.append(f"{len(cmp.compile_regressions)} compile-time regression(s)")
    verdict = "FAIL" if cmp.has_regression else "pass"
    return f"{verdict}: " + (", ".join(parts) if parts else "nothing to compare")


def _significance_text(cmp: Comparison) -> str:
    """Which test decided significance, as the comparison used it."""
    alpha = f"{cmp.thresholds.alpha:g}"
    tests = {e.test for e in cmp.entries if e.test is not None}
    if SignificanceTest.PAIRED in tests:
        return f"Wilcoxon signed-rank on the per-round ratios p < {alpha} (measured interleaved)"
    if SignificanceTest.RUNS not in tests:
        return f"Mann–Whitney on the samples p < {alpha}"
    text = f"t-test on the runs' medians and Mann–Whitney on the samples, both p < {alpha}"
    if SignificanceTest.SAMPLES in tests:
        text += " (Mann–Whitney alone where a side has one run)"
    return text


def thresholds_line(cmp: Comparison) -> str:
    t = cmp.thresholds
    return (
        f"run time: ×{t.threshold:g} and {_significance_text(cmp)}"
        + (" (Benjamini–Hochberg adjusted over all timing tests)" if t.p_adjust == "bh" else "")
        + "; "
        f"jit compile: ×{t.compile_threshold:g} and +{fmt.seconds(t.compile_floor_s)}"
        + (
            f" and a t-test on paired cold compiles p < {t.alpha:g}"
            if any(e.compile and e.compile.p_value is not None for e in cmp.entries)
            else ""
        )
        + ("" if t.compile_gates else " (reported, not gating)")
    )


# ---------------------------------------------------------------------------------------
# rich


def comparison_table(cmp: Comparison, *, all_rows: bool = True) -> Table:
    """One row per case × mode: medians, ratio with CI, p-value, compile change, verdict.

    With `all_rows=False`, unchanged rows are left out.
    """
    title = f"jitbench compare {cmp.base_run_id} → {cmp.new_run_id}"
    table = Table(
        title=title, title_justify="left", caption=thresholds_line(cmp), caption_justify="left"
    )
    for col, justify in (
        ("workload", "left"),
        ("size", "left"),
        ("device", "left"),
        ("dtype", "left"),
        ("mode", "left"),
        ("base", "right"),
        ("new", "right"),
        ("new/base", "right"),
        ("change", "right"),
        ("p", "right"),
        ("jit compile", "right"),
        ("verdict", "left"),
        ("note", "left"),
    ):
        table.add_column(col, justify=justify, no_wrap=col != "note")  # type: ignore[arg-type]
    for e in cmp.entries:
        if (
            not all_rows
            and e.verdict is Verdict.UNCHANGED
            and not e.fails_gate
            and not (e.compile and e.compile.verdict is not Verdict.UNCHANGED)
        ):
            continue
        style = _VERDICT_STYLE[e.verdict]
        compile_style = (
            "bold red"
            if e.compile and e.compile.verdict is Verdict.REGRESSION
            else "green"
            if e.compile and e.compile.verdict is Verdict.IMPROVEMENT
            else ""
        )
        table.add_row(
            e.workload,
            e.size,
            e.device,
            e.dtype,
            e.mode.value,
            _median_cell(e, "base"),
            _median_cell(e, "new"),
            ratio_cell(e),
            Text(
                percent_change(e.ratio),
                style=style if e.verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT) else "",
            ),
            p_value(e.p_judged),
            Text(compile_cell(e), style=compile_style),
            Text(e.verdict.value, style=style),
            Text(e.note, style="dim"),
        )
    return table


def _median_cell(e: Entry, side: str) -> str:
    m = e.base if side == "base" else e.new
    if m is None:
        return "—"
    if m.median_s is not None and m.ok:
        return fmt.seconds(m.median_s)
    return m.status.value


def environment_table(cmp: Comparison) -> Table | None:
    """What differs between the two runs' environments, or None when nothing does."""
    if not cmp.environment_differences:
        return None
    table = Table(title="environment differs", title_justify="left", title_style="bold yellow")
    for col in ("field", "base", "new"):
        table.add_column(col)
    for d in cmp.environment_differences:
        table.add_row(d.name, _plain(d.base), _plain(d.new))
    return table


def geomean_table(cmp: Comparison) -> Table | None:
    if not cmp.geomeans:
        return None
    table = Table(title="geometric mean new/base", title_justify="left")
    table.add_column("device")
    modes = [m for m in Mode if any(g.mode is m for g in cmp.geomeans)]
    for m in modes:
        table.add_column(m.value, justify="right")
    for device in dict.fromkeys(g.device for g in cmp.geomeans):
        row = [device]
        for m in modes:
            g = next((g for g in cmp.geomeans if g.device == device and g.mode is m), None)
            row.append(f"{fmt.ratio(g.ratio)} ({percent_change(g.ratio)}, {g.count})" if g else "—")
        table.add_row(*row)
    return table


def comparison_renderable(cmp: Comparison, *, all_rows: bool = True) -> Group:
    """Environment differences (if any), the comparison table and the geometric means."""
    parts = [
        t
        for t in (
            environment_table(cmp),
            comparison_table(cmp, all_rows=all_rows),
            geomean_table(cmp),
        )
        if t is not None
    ]
    return Group(*parts)


def pooling_lines(cmp: Comparison) -> list[Text]:
    """How each side was pooled, one line per note; a left-out run stands out."""
    return [Text(n.text, style="yellow" if n.left_out else "dim") for n in cmp.pooling]


def verdict_lines(cmp: Comparison) -> list[Text]:
    """The summary line (pass / FAIL and the counts) and, on failure, the regressed
    workloads."""
    lines = [Text(summary_line(cmp), style="bold red" if cmp.has_regression else "green")]
    if cmp.has_regression:
        regressed = ", ".join(cmp.regressed_workloads)
        lines.append(Text.assemble(("regressed:", "bold red"), f" {regressed}"))
    return lines


def comparison_report(cmp: Comparison, *, all_rows: bool = True) -> Group:
    """Everything `jitbench compare` shows: `comparison_renderable`, the pooling notes and
    the verdict lines."""
    return Group(
        comparison_renderable(cmp, all_rows=all_rows), *pooling_lines(cmp), *verdict_lines(cmp)
    )


def inconclusive_warning(cmp: Comparison) -> str | None:
    """A warning when large changes could not be tested for want of samples, else None."""
    inconclusive = cmp.count(Verdict.INCONCLUSIVE)
    if not inconclusive:
        return None
    return (
        f"{inconclusive} large change(s) could not be tested with so few samples; "
        "rerun both sides with more samples (--min-samples)."
    )


def _plain(value: object) -> str:
    return "—" if value is None or value == "" else str(value)


# ---------------------------------------------------------------------------------------
# markdown


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _md_table(header: list[str], rows: list[list[str]], align: str) -> list[str]:
    sep = ["---:" if a == "r" else "---" for a in align]
    return [_md_row(header), _md_row(sep), *(_md_row(r) for r in rows)]


def _md_entry_row(e: Entry) -> list[str]:
    return [
        md_escape(e.workload),
        md_escape(e.size),
        md_escape(e.device),
        md_escape(e.dtype),
        e.mode.value,
        md_escape(_median_cell(e, "base")),
        md_escape(_median_cell(e, "new")),
        md_escape(percent_change(e.ratio)),
        md_escape(p_value(e.p_judged)),
        md_escape(compile_cell(e)),
        md_escape(e.verdict.value),
        md_escape(e.note),
    ]


def _md_compile_table(entries: tuple[Entry, ...]) -> list[str]:
    rows = []
    for e in entries:
        c = e.compile
        assert c is not None
        rows.append(
            [
                md_escape(e.workload),
                md_escape(e.size),
                md_escape(e.device),
                md_escape(e.dtype),
                e.mode.value,
                md_escape(fmt.seconds(c.base_s)),
                md_escape(fmt.seconds(c.new_s)),
                md_escape(percent_change(c.ratio)),
            ]
        )
    return _md_table(
        ["workload", "size", "device", "dtype", "mode", "base", "new", "change"], rows, "lllllrrr"
    )


_ENTRY_HEADER = [
    "workload",
    "size",
    "device",
    "dtype",
    "mode",
    "base",
    "new",
    "change",
    "p",
    "jit compile",
    "verdict",
    "note",
]
_ENTRY_ALIGN = "lllllrrrrrll"


def comparison_markdown(cmp: Comparison, *, title: str = "jitbench regression gate") -> str:
    """A markdown report for a pull-request comment or `$GITHUB_STEP_SUMMARY`.

    It names every regressed workload in its first lines, then lists environment
    differences, regressions, improvements, the geometric means and every comparison.
    """
    lines: list[str] = []
    failures = cmp.failures
    icon = "❌" if failures else "✅"
    head = (
        f"{len(failures)} regression(s) in "
        + ", ".join(f"**{md_escape(w)}**" for w in cmp.regressed_workloads)
        if failures
        else "no regression"
    )
    lines.append(f"## {icon} {md_escape(title)}: {head}")
    lines.append("")
    base = f"`{cmp.base_run_id}`" + (f" at {md_escape(cmp.base_commit)}" if cmp.base_commit else "")
    new = f"`{cmp.new_run_id}`" + (f" at {md_escape(cmp.new_commit)}" if cmp.new_commit else "")
    lines.append(f"Base {base} → new {new}. {md_escape(summary_line(cmp))}.")
    lines.append("")
    lines.append(f"Thresholds: {md_escape(thresholds_line(cmp))}.")
    lines.append("")
    if cmp.pooling:
        lines.extend(
            f"- {'**' if note.left_out else ''}{md_escape(note.text)}"
            f"{'**' if note.left_out else ''}"
            for note in cmp.pooling
        )
        lines.append("")
    if cmp.environment_differences:
        lines.append("> [!WARNING]")
        lines.append(
            "> The two runs were measured in different environments; timings may not be comparable:"
        )
        for d in cmp.environment_differences:
            lines.append(
                f"> - **{md_escape(d.name)}**: {md_escape(_plain(d.base))} → "
                f"{md_escape(_plain(d.new))}"
            )
        lines.append("")
    slower = [e for e in cmp.entries if e.verdict in FAILING_VERDICTS]
    if slower:
        lines.append("### Regressions")
        lines.append("")
        lines.extend(_md_table(_ENTRY_HEADER, [_md_entry_row(e) for e in slower], _ENTRY_ALIGN))
        lines.append("")
    if cmp.compile_regressions:
        gating = "" if cmp.thresholds.compile_gates else ", not gating"
        lines.append(f"### Compile-time regressions (jit trace + lower + compile, cold{gating})")
        lines.append("")
        lines.extend(_md_compile_table(cmp.compile_regressions))
        lines.append("")
    better = [e for e in cmp.entries if e.verdict in (Verdict.IMPROVEMENT, Verdict.FIXED)]
    if better:
        lines.append("### Improvements")
        lines.append("")
        lines.extend(_md_table(_ENTRY_HEADER, [_md_entry_row(e) for e in better], _ENTRY_ALIGN))
        lines.append("")
    if cmp.compile_improvements:
        lines.append("### Compile-time improvements")
        lines.append("")
        lines.extend(_md_compile_table(cmp.compile_improvements))
        lines.append("")
    inconclusive = [e for e in cmp.entries if e.verdict is Verdict.INCONCLUSIVE]
    if inconclusive:
        lines.append(
            f"{len(inconclusive)} large change(s) could not be tested: too few samples "
            "(see the note column below)."
        )
        lines.append("")
    if cmp.geomeans:
        lines.append("### Geometric mean of new/base (below 1 is faster)")
        lines.append("")
        modes = [m for m in Mode if any(g.mode is m for g in cmp.geomeans)]
        rows = []
        for device in dict.fromkeys(g.device for g in cmp.geomeans):
            row = [md_escape(device)]
            for m in modes:
                g = next((g for g in cmp.geomeans if g.device == device and g.mode is m), None)
                row.append(
                    md_escape(f"{fmt.ratio(g.ratio)} ({percent_change(g.ratio)}, {g.count} cases)")
                    if g
                    else "—"
                )
            rows.append(row)
        lines.extend(_md_table(["device", *(m.value for m in modes)], rows, "l" + "r" * len(modes)))
        lines.append("")
    lines.append(f"<details><summary>All {len(cmp.entries)} comparisons</summary>")
    lines.append("")
    lines.extend(_md_table(_ENTRY_HEADER, [_md_entry_row(e) for e in cmp.entries], _ENTRY_ALIGN))
    lines.append("")
    lines.append("</details>")
    lines.append("")
    return "\n".join(lines)
