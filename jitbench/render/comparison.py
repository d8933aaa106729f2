"""Render a `Comparison`: rich renderables for the terminal, markdown for a pull request and
CSV for a spreadsheet.

The terminal table is compact by default (one row per case × mode, fitted to the width)
or full (`wide`). Builders return a rich renderable or a string; writing them anywhere is
the CLI's job.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from dataclasses import dataclass

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from jitbench import formatting as fmt
from jitbench.formatting import SafeCsvWriter, md_code, md_escape
from jitbench.gate import (
    FAILING_VERDICTS,
    Comparison,
    Entry,
    GateOutcome,
    SignificanceTest,
    Verdict,
)
from jitbench.gate.diffs import entry_program_key
from jitbench.render.layout import Fitted, fit_first, fitted
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


def percent_change(ratio: float | None, *, compact: bool = False) -> str:
    """'+30.1 %' for a ratio of 1.301 ('+30.1%' compact); '—' when unknown."""
    if ratio is None or not math.isfinite(ratio):
        return "—"
    return f"{(ratio - 1) * 100:+.1f}{'' if compact else ' '}%"


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
    if c.verdict is Verdict.INCONCLUSIVE:
        text += " (not tested)"
    elif c.verdict is not Verdict.UNCHANGED:
        text += f" ({c.verdict.value})"
    return text


def summary_line(cmp: Comparison) -> str:
    """One sentence: how many of each verdict, and whether the gate fails (FAIL), cannot
    vouch for the new run (INCONCLUSIVE: a partial run, untestable changes), compared no
    case at all (NOTHING COMPARED, exit 2) or passes."""
    parts = [f"{cmp.count(v)} {v.value}" for v in Verdict if cmp.count(v)]
    if cmp.compile_regressions:
        parts.append(f"{len(cmp.compile_regressions)} compile-time regression(s)")
    if cmp.compile_untested:
        parts.append(f"{len(cmp.compile_untested)} compile-time change(s) not tested")
    programs = [e.program for e in cmp.entries if e.program is not None]
    if programs:
        changed = [p for p in programs if p.changed]
        regressed = [p for p in changed if p.regressed]
        parts.append(
            f"{len(programs) - len(changed)} program(s) unchanged, {len(changed)} changed"
            + (f" ({len(regressed)} past the tolerances)" if regressed else "")
        )
    if cmp.incomplete:
        parts.append("a partial run")
    if cmp.nothing_compared is not None:  # exit 2 whatever else holds: it checked nothing
        verdict = "NOTHING COMPARED"
    else:
        verdict = "FAIL" if cmp.has_regression else "INCONCLUSIVE" if cmp.inconclusive else "pass"
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


def _compile_test_text(cmp: Comparison) -> str:
    """The significance test the compile verdicts also needed, where there was one."""
    tested = [e.compile for e in cmp.entries if e.compile and e.compile.p_value is not None]
    if not tested:
        return ""
    alpha = cmp.thresholds.alpha
    tests = []
    if any(c.paired_ratio is not None for c in tested):
        tests.append("a t-test on paired cold compiles")
    if any(c.paired_ratio is None for c in tested):
        tests.append("with enough cold compiles a side, Mann–Whitney on them")
    return f" and {' or, '.join(tests)} p < {alpha:g}"


def thresholds_line(cmp: Comparison) -> str:
    t = cmp.thresholds
    return (
        f"run time: ×{t.threshold:g} and {_significance_text(cmp)}"
        + (" (Benjamini–Hochberg adjusted over all timing tests)" if t.p_adjust == "bh" else "")
        + "; "
        f"jit compile: ×{t.compile_threshold:g} and +{fmt.seconds(t.compile_floor_s)}"
        + _compile_test_text(cmp)
        + ("" if t.compile_gates else " (reported, not gating)")
    )


# ---------------------------------------------------------------------------------------
# rich


def _shown(e: Entry, all_rows: bool) -> bool:
    """Whether a row is shown: all, or (`all_rows=False`) only those that changed."""
    return (
        all_rows
        or e.verdict is not Verdict.UNCHANGED
        or e.fails_gate
        or (e.compile is not None and e.compile.verdict is not Verdict.UNCHANGED)
    )


def _compile_style(e: Entry) -> str:
    if e.compile and e.compile.verdict is Verdict.REGRESSION:
        return "bold red"
    if e.compile and e.compile.verdict is Verdict.IMPROVEMENT:
        return "green"
    return ""


def _title(cmp: Comparison) -> str:
    return f"jitbench compare {cmp.base_run_id} → {cmp.new_run_id}"


def comparison_table(cmp: Comparison, *, all_rows: bool = True) -> Table:
    """One row per case × mode: medians, ratio with CI, p-value, compile change, verdict
    (the full table, `--format wide`).

    With `all_rows=False`, unchanged rows are left out.
    """
    table = Table(
        title=_title(cmp),
        title_justify="left",
        caption=thresholds_line(cmp),
        caption_justify="left",
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
        if not _shown(e, all_rows):
            continue
        style = _VERDICT_STYLE[e.verdict]
        compile_style = _compile_style(e)
        table.add_row(
            e.workload,
            e.size,
            e.device,
            e.dtype,
            e.mode.value,
            _time_cell(e, "base"),
            _time_cell(e, "new"),
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


def _time_cell(e: Entry, side: str, *, compact: bool = False) -> str:
    """The side's time the change is taken from (`Entry.base_s` / `new_s`), or its
    status."""
    m, seconds = (e.base, e.base_s) if side == "base" else (e.new, e.new_s)
    if m is None:
        return "—"
    if seconds is not None:
        return fmt.seconds(seconds, compact=compact)
    return m.status.value


@dataclass(frozen=True)
class _Layout:
    """One way to draw the compact comparison table, roomiest first."""

    gap: int = 2
    compact_units: bool = False
    inline_notes: bool = True  # else a superscript mark on the case, the notes underneath
    fold_case: bool = False


_LAYOUTS = (
    _Layout(),
    _Layout(gap=1),
    _Layout(gap=1, compact_units=True),
    _Layout(inline_notes=False),
    _Layout(gap=1, inline_notes=False),
    _Layout(gap=1, compact_units=True, inline_notes=False),
    _Layout(gap=1, compact_units=True, inline_notes=False, fold_case=True),
)

_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def _compact_compile(e: Entry, compact: bool) -> Text:
    c = e.compile
    if c is None:
        return Text("—")
    return Text(percent_change(c.ratio, compact=compact), style=_compile_style(e))


def _compact_layout(
    cmp: Comparison, entries: list[Entry], layout: _Layout
) -> Fitted[RenderableType]:
    devices = len({e.device for e in entries}) > 1
    dtypes = len({e.dtype for e in entries}) > 1
    table = Table(
        title=_title(cmp),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, layout.gap - 1),
        collapse_padding=True,
    )
    columns = [
        ("case", "left"),
        ("base", "right"),
        ("new", "right"),
        ("change", "right"),
        ("p", "right"),
        ("compile", "right"),
        ("verdict", "left"),
    ]
    if layout.inline_notes:
        columns.append(("note", "left"))
    for header, justify in columns:
        table.add_column(
            header,
            justify=justify,  # type: ignore[arg-type]
            no_wrap=not (header == "case" and layout.fold_case),
            overflow="fold",
        )
    notes: dict[str, int] = {}
    compact = layout.compact_units
    case_texts = ["case"]
    for e in entries:
        parts = [e.workload, e.size, e.mode.value]
        if devices:
            parts.insert(2, e.device)
        if dtypes:
            parts.insert(-1, e.dtype)
        label = Text(" ".join(parts))
        if e.note and not layout.inline_notes:
            label.append(str(notes.setdefault(e.note, len(notes) + 1)).translate(_SUPERSCRIPT))
        case_texts.append(label.plain)
        style = _VERDICT_STYLE[e.verdict]
        row: list[Text | str] = [
            label,
            _time_cell(e, "base", compact=compact),
            _time_cell(e, "new", compact=compact),
            Text(
                percent_change(e.ratio, compact=compact),
                style=style if e.verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT) else "",
            ),
            p_value(e.p_judged),
            _compact_compile(e, compact),
            Text(e.verdict.value, style=style),
        ]
        if layout.inline_notes:
            row.append(Text(e.note, style="dim"))
        table.add_row(*row)
    parts_out: list[RenderableType] = [table]
    parts_out += [
        Text(f"{str(n).translate(_SUPERSCRIPT)} {text}", style="dim") for text, n in notes.items()
    ]
    parts_out.append(Text(thresholds_line(cmp), style="dim"))
    # Notes must fit on one line; only a folded case name may wrap.
    need = fitted(table, *([case_texts] if layout.fold_case else [])).needs
    return Fitted(Group(*parts_out), need)


def compact_comparison_table(
    cmp: Comparison, *, all_rows: bool = True, width: int | None = None
) -> RenderableType:
    """One row per case × mode: base and new medians, the change, its p-value, the jit
    compile time's change, the verdict and a note; in the roomiest layout whose narrowest
    rendering fits `width` (None: no limit). Notes move under the table behind a [n]
    marker when they do not fit. `comparison_table` is the full table (`--format wide`)."""
    entries = [e for e in cmp.entries if _shown(e, all_rows)]
    layouts = [lambda layout=layout: _compact_layout(cmp, entries, layout) for layout in _LAYOUTS]
    return fit_first(layouts, width)


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


def comparison_renderable(
    cmp: Comparison, *, all_rows: bool = True, width: int | None = None, wide: bool = True
) -> Group:
    """Environment differences (if any), the comparison table (full with `wide`, else
    compact and fitted to `width`) and the geometric means."""
    table = (
        comparison_table(cmp, all_rows=all_rows)
        if wide
        else compact_comparison_table(cmp, all_rows=all_rows, width=width)
    )
    parts = [t for t in (environment_table(cmp), table, geomean_table(cmp)) if t is not None]
    return Group(*parts)


def pooling_lines(cmp: Comparison) -> list[Text]:
    """How each side was pooled, one line per note; a left-out run stands out."""
    return [Text(n.text, style="yellow" if n.stands_out else "dim") for n in cmp.pooling]


def verdict_lines(cmp: Comparison) -> list[Text]:
    """The summary line (pass / FAIL and the counts) and, on failure, the regressed
    workloads."""
    style = "bold red" if cmp.has_regression else "yellow" if cmp.inconclusive else "green"
    lines = [Text(summary_line(cmp), style=style)]
    if cmp.has_regression:
        regressed = ", ".join(cmp.regressed_workloads)
        lines.append(Text.assemble(("regressed:", "bold red"), f" {regressed}"))
    return lines


def comparison_report(
    cmp: Comparison, *, all_rows: bool = True, width: int | None = None, wide: bool = True
) -> Group:
    """Everything `jitbench compare` shows: `comparison_renderable` (full with `wide`, else
    compact and fitted to `width`), the pooling notes and the verdict lines."""
    return Group(
        comparison_renderable(cmp, all_rows=all_rows, width=width, wide=wide),
        *pooling_lines(cmp),
        *verdict_lines(cmp),
    )


def inconclusive_warning(cmp: Comparison) -> str | None:
    """Why the gate cannot vouch for the new run (a partial run, large changes too few
    samples could test), one line, else None."""
    return " ".join(cmp.inconclusive) or None


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
        md_escape(_time_cell(e, "base")),
        md_escape(_time_cell(e, "new")),
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


def _diff_label(cmp: Comparison, key: str) -> str:
    entry = next((e for e in cmp.entries if entry_program_key(e) == key), None)
    if entry is None:
        return key.replace("|", " ")
    return f"{entry.workload} {entry.size} {entry.device} {entry.dtype} {entry.mode.value}"


def program_diff_lines(
    cmp: Comparison,
    paths: Mapping[str, str],
    *,
    diffs: Mapping[str, str] | None = None,
    preview: int = 0,
) -> list[str]:
    """What the terminal shows of the program diffs written (`paths`: program key → the
    file, as shown): one line a changed program, and with `preview` (`--format wide`) that many
    first lines of its diff (`diffs`) under it."""
    lines: list[str] = []
    for key, path in paths.items():
        lines.append(fmt.terminal_safe(f"program diff of {_diff_label(cmp, key)}: {path}"))
        if preview and diffs is not None and (diff := diffs.get(key)):
            # A stored archive may come from an untrusted artifact: no control reaches
            # the terminal.
            head = diff.splitlines()
            lines.extend(f"    {fmt.terminal_safe(line)}" for line in head[:preview])
            if len(head) > preview:
                lines.append(f"    … {len(head) - preview} more line(s) in the file")
    return lines


def comparison_markdown(
    cmp: Comparison,
    *,
    title: str = "jitbench regression gate",
    program_diffs: Mapping[str, str] | None = None,
) -> str:
    """A markdown report for a pull-request comment or `$GITHUB_STEP_SUMMARY`.

    It names every regressed workload in its first lines, then lists environment
    differences, regressions, improvements, the geometric means, where the changed
    programs' diffs are (`program_diffs`: program key → path as shown) and every
    comparison.
    """
    lines: list[str] = []
    failures = cmp.failures
    outcome = cmp.outcome()
    if failures:
        icon, head = (
            "❌",
            f"{len(failures)} regression(s) in "
            + ", ".join(f"**{md_escape(w)}**" for w in cmp.regressed_workloads),
        )
    elif outcome is GateOutcome.NOTHING_COMPARED:
        icon, head = "⚠️", "nothing compared"
    elif outcome is GateOutcome.INCONCLUSIVE:
        icon, head = "⚠️", "inconclusive"
    else:
        icon, head = "✅", "no regression"
    lines.append(f"## {icon} {md_escape(title)}: {head}")
    lines.append("")
    said = [*cmp.inconclusive, *cmp.warnings, *filter(None, [cmp.nothing_compared])]
    if said:  # what the CLI warns on stderr belongs in the comment too
        lines.extend(["> [!WARNING]", *(f"> - {md_escape(line)}" for line in said), ""])
    base = md_code(cmp.base_run_id) + (
        f" at {md_escape(cmp.base_commit)}" if cmp.base_commit else ""
    )
    new = md_code(cmp.new_run_id) + (f" at {md_escape(cmp.new_commit)}" if cmp.new_commit else "")
    lines.append(f"Base {base} → new {new}. {md_escape(summary_line(cmp))}.")
    lines.append("")
    lines.append(f"Thresholds: {md_escape(thresholds_line(cmp))}.")
    lines.append("")
    if cmp.pooling:
        lines.extend(
            f"- {'**' if note.stands_out else ''}{md_escape(note.text)}"
            f"{'**' if note.stands_out else ''}"
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
    if cmp.compile_untested:
        lines.append(
            "### Compile-time changes not tested (too few cold compiles a side: reported, "
            "not gating)"
        )
        lines.append("")
        lines.extend(_md_compile_table(cmp.compile_untested))
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
    if program_diffs:
        lines.append("### Program diffs (optimised HLO, names and metadata aside)")
        lines.append("")
        lines.extend(
            f"- {md_escape(_diff_label(cmp, key))}: {md_code(path)}"
            for key, path in program_diffs.items()
        )
        lines.append("")
    lines.append(f"<details><summary>All {len(cmp.entries)} comparisons</summary>")
    lines.append("")
    lines.extend(_md_table(_ENTRY_HEADER, [_md_entry_row(e) for e in cmp.entries], _ENTRY_ALIGN))
    lines.append("")
    lines.append("</details>")
    lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# CSV

CSV_COLUMNS = (
    "workload",
    "size",
    "device",
    "dtype",
    "mode",
    "base_s",
    "new_s",
    "base_status",
    "new_status",
    "ratio",
    "ratio_low",
    "ratio_high",
    "p_value",
    "p_adjusted",
    "compile_base_s",
    "compile_new_s",
    "compile_verdict",
    "verdict",
    "note",
)


def _csv_number(value: float | None) -> str:
    return "" if value is None or math.isnan(value) else repr(float(value))


def comparison_csv(cmp: Comparison) -> str:
    """Every comparison as CSV (`CSV_COLUMNS`, raw numbers in seconds), one row per
    case × mode."""
    buffer = io.StringIO()
    writer = SafeCsvWriter(buffer)
    writer.writerow(CSV_COLUMNS)
    for e in cmp.entries:
        sides = [e.base, e.new]
        medians = [_csv_number(e.base_s), _csv_number(e.new_s)]
        statuses = [m.status.value if m is not None else "" for m in sides]
        c = e.compile
        writer.writerow(
            [
                e.workload,
                e.size,
                e.device,
                e.dtype,
                e.mode.value,
                *medians,
                *statuses,
                _csv_number(e.ratio),
                _csv_number(e.ratio_low),
                _csv_number(e.ratio_high),
                _csv_number(e.p_value),
                _csv_number(e.p_adjusted),
                _csv_number(c.base_s if c else None),
                _csv_number(c.new_s if c else None),
                c.verdict.value if c else "",
                e.verdict.value,
                e.note,
            ]
        )
    return buffer.getvalue()
