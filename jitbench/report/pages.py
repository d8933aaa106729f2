"""Put report pages on disk: one page per run, a comparison page for several runs, the
history of every run in a folder, the index, and plotly.js written once beside them so
every page opens from disk with no network.

Layout under the output folder (the same folder `jitbench run --out` uses):
    index.html                   every run found in runs/, newest first; pick two to compare
    history.html                 each workload across the runs, by commit or date
    plotly.min.js                plotly.js (the cartesian partial bundle when built), once
    runs/<run-id>.json           run data (copied here when rendering a run from elsewhere)
    runs/<run-id>.html           one page per run
    runs/<run-id>.csv            its measurements as CSV
    compare-<a>-vs-<b>.html      runs aligned case by case, with the gate's verdicts
"""

from __future__ import annotations

import functools
import html as html_lib
import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from jitbench import formatting as fmt
from jitbench.config import JAX_MODES
from jitbench.errors import ConfigError, OutputError, ResultsFormatError
from jitbench.gate import Comparison, Verdict, compare
from jitbench.gate.diffs import entry_program_key
from jitbench.report import assets, comparison, data, figures, history, summary, table
from jitbench.report.figures import Figure
from jitbench.report.summary import RunSummary
from jitbench.results import (
    Mode,
    OutputLayout,
    Run,
    check_replaceable,
    check_run_copy,
    load_run,
    save_run,
    write_text_atomic,
)
from jitbench.results.analysis import WIDE_FACTOR
from jitbench.results.analysis.crossovers import sweep_verdict

HISTORY_PAGE = OutputLayout(Path()).history.name
#: Cases beyond this many get no sample-distribution chart (the page stays light; the
#: samples are in the run JSON). Every chart's data is embedded in the page and drawn only
#: when its case is opened, but a run of thousands of cases would embed megabytes.
MAX_DISTRIBUTIONS = 200
#: Per-case charts (speedup, compile, memory) show at most this many cases of a device:
#: beyond a few hundred categories a chart is a smear wider than any screen. The case
#: table, the CSV and the JSON keep every case; the geometric means cover every case.
MAX_CHART_CASES = 200
#: Sweep workloads beyond this many per device get no charts, only their verdicts.
MAX_SWEEP_CHARTS = 50
#: The history page draws at most this many workloads (first seen first); its figures are
#: embedded for every workload in the list and drawn when one is picked.
MAX_HISTORY_WORKLOADS = 300


def figure_json(fig: Figure) -> str:
    """A figure dict as the JSON plotly.js reads: NaN and ±inf become null (they are not
    JSON; plotly.js leaves a gap, as plotly.py's encoder did) and NumPy scalars and arrays
    plain numbers and lists."""
    try:
        return json.dumps(fig, separators=(",", ":"), allow_nan=False, default=_plain)
    except ValueError:  # a non-finite float somewhere: the rare case pays for a walk
        return json.dumps(_finite(fig), separators=(",", ":"), allow_nan=False, default=_plain)


def _plain(value: Any) -> Any:
    """What json cannot encode itself: NumPy scalars (`.item()`) and arrays (`.tolist()`)."""
    for method in ("item", "tolist"):
        convert = getattr(value, method, None)
        if callable(convert):
            return _finite(convert())
    raise TypeError(f"{type(value).__name__} in a figure is not JSON: {value!r}")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _figure_json(fig: Figure) -> Markup:
    """Figure JSON safe to embed in a <script type="application/json"> element."""
    return _json_markup(figure_json(fig))


def _json_markup(text: str) -> Markup:
    for raw, safe in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, safe)
    return Markup(text)


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    try:
        return jinja2.FileSystemBytecodeCache()
    except (OSError, RuntimeError):  # no usable temporary directory: compile every time
        return None


@functools.cache
def _env() -> jinja2.Environment:
    """The pages' jinja2 environment, made once: it keeps each template compiled, which
    took longer than rendering a small run's page. The compiled templates are also kept
    between processes, in jinja2's per-user cache folder under the temporary directory
    (docs: validation, "Figures behind the code"); jinja2 recompiles a template whose
    source changed, and works without the cache where the folder cannot be written."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("jitbench.report", "templates"),
        bytecode_cache=_bytecode_cache(),
        autoescape=True,  # every value from a results file is text, never markup
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["figure_json"] = _figure_json
    env.filters["json_data"] = lambda value: _json_markup(json.dumps(value))
    env.filters["ratio"] = fmt.ratio
    env.filters["seconds"] = fmt.seconds
    env.filters["percent"] = fmt.percent
    # '±3%' (or '[low–high]' where a ± would mislead) of a time's [value, low, high]
    env.filters["interval"] = lambda e: fmt.seconds_pm(*e)
    env.filters["count"] = fmt.count
    return env


#: Bidirectional overrides and isolates: a label holding one would show the page's text
#: in another order than it is (the pages' own text and scripts hold none; JSON escapes
#: them), so each is shown as its escape.
_BIDI = re.compile("[\u202a-\u202e\u2066-\u2069]")


def _render(template: str, **context: Any) -> str:
    """Render a page with its content-security policy: the hashes of exactly the inline
    scripts the page carries, computed here; a bidirectional control from a results file
    shown as its escape (`_BIDI`)."""
    scripts = [assets.HEAD_SCRIPT, assets.page_script()]
    return _BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", _render_page(template, scripts, context))


def _render_page(template: str, scripts: list[str], context: dict[str, Any]) -> str:
    return (
        _env()
        .get_template(template)
        .render(
            csp=Markup(assets.content_security_policy(scripts)),  # our own text, no "
            head_script=Markup(assets.HEAD_SCRIPT),
            page_script=Markup(assets.page_script()),
            min_width=figures.min_width,
            **context,
        )
    )


def _write(path: Path, text: str) -> Path:
    """Write a page, index or plotly.js atomically (temp file + rename) and return its path;
    never over a file jitbench did not write, a link or a folder (`check_replaceable`)."""
    check_replaceable(path)
    write_text_atomic(path, text)
    return path


def write_plotly_js(out_dir: str | os.PathLike[str]) -> Path:
    """Write plotly.js (`assets.plotly_bundle`) into `out_dir` unless the same copy is
    already there. Returns its path."""
    path = OutputLayout(Path(out_dir)).plotly_js
    js = assets.plotly_bundle().text
    try:
        if path.stat().st_size == len(js.encode("utf-8")) and path.read_text("utf-8") == js:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    return _write(path, js)


def run_page_path(run: Run, out_dir: str | os.PathLike[str]) -> Path:
    return OutputLayout(Path(out_dir)).run_page(run.run_id)


def run_csv_path(run: Run, out_dir: str | os.PathLike[str]) -> Path:
    return OutputLayout(Path(out_dir)).run_csv(run.run_id)


def _save_run_copy(run: Run, out_dir: Path) -> Path:
    """Keep the run's JSON beside its page (the index finds runs there), serialising the
    run once: written where no file is, left alone where the same run is stored.

    Raises:
        OutputError: a different run file is stored under the run's id (an older partial
            copy, or a file that merely claims the id); it is never replaced.
    """
    path = OutputLayout(out_dir).run_json(run.run_id)
    check_run_copy(run, out_dir)
    if path.exists():  # check_run_copy found this very run there
        return path
    return save_run(run, path)


# ---------------------------------------------------------------------------------------
# One run


def _device_sections(run: Run) -> list[dict[str, Any]]:
    sections = []
    for device in data.device_labels(run):
        cases, scope = data.headline_cases(run, device)
        modes = {m.mode for m in run.measurements if m.case.device == device}
        has_speedup = Mode.NUMPY in modes and bool(modes & set(JAX_MODES))
        sweeps = []
        for i, wl in enumerate(data.sweep_workloads(run, device)):
            axis = data.sweep_axis(data.sweep_cases(run, device, wl))
            series = data.speedup_series(run, device, wl)
            drawn = i < MAX_SWEEP_CHARTS
            sweeps.append(
                {
                    "workload": wl,
                    "axis": axis,
                    "speedup": figures.sweep_speedup_figure(run, device, wl)
                    if has_speedup and drawn
                    else None,
                    "time": figures.sweep_time_figure(run, device, wl) if drawn else None,
                    "verdicts": [
                        sweep_verdict(series.get(m, []), m, axis.name)
                        for m in JAX_MODES
                        if has_speedup and m in modes
                    ],
                    "failures": [
                        f"{m.mode.value} {m.status.value} at {c.size}"
                        for c, m in data.sweep_failures(run, device, wl)
                    ],
                }
            )
        preset = [c for c in cases if not data.is_sweep_case(c)]
        charted = preset[:MAX_CHART_CASES]
        sections.append(
            {
                "device": device,
                "title": data.device_title(run, device),
                "scope": scope,
                "geomeans": data.geomean_speedups(run, device),
                "has_speedup": has_speedup,
                "has_jit": Mode.JIT in modes and bool(preset),
                "n_cases": len(charted),
                "n_preset": len(preset),
                "n_sweeps": len(sweeps),
                "max_sweep_charts": MAX_SWEEP_CHARTS,
                "speedup": figures.speedup_figure(run, device, cases=charted)
                if has_speedup and preset
                else None,
                "compile": figures.compile_figure(run, device, cases=charted)
                if Mode.JIT in modes and preset
                else None,
                "roofline": figures.roofline_figure(run, device),
                # A run of sweeps only has its memory charted at each sweep's largest size.
                "memory": figures.memory_figure(
                    run, device, cases=(preset or cases)[:MAX_CHART_CASES]
                ),
                "sweeps": sweeps,
            }
        )
    return sections


def _problems(run: Run) -> list[dict[str, str]]:
    out = []
    for m in run.measurements:
        if m.failed:
            out.append(
                {
                    "case": m.case.label,
                    "mode": m.mode.value,
                    "status": m.status.value,
                    "what": m.failure_text,
                    "hint": m.hint,
                }
            )
    return out


def render_run_page(run: Run) -> str:
    """HTML of one run's page (links assume it lives in `runs/` under the report root)."""
    layout = OutputLayout(Path("."))
    details = table.case_details(run)
    distributions = {
        d.id: figures.distribution_figure(run, d.case) if i < MAX_DISTRIBUTIONS else None
        for i, d in enumerate(details)
    }
    return _render(
        "run.html",
        root="../",
        links=True,
        uses_plotly=True,
        run=run,
        name=data.run_name(run),
        label=data.run_label(run),
        title=f"jitbench: {data.run_name(run)}",
        started=data.started_text(run),
        machine=data.machine(run),
        commit=data.commit(run),
        threads=data.threads_text(run),
        dtypes=data.dtypes(run),
        versions=data.versions(run),
        notes=data.run_notes(run),
        interval_note=data.interval_note(run),
        heatmaps=table.heatmaps(run),
        devices_figure=figures.device_comparison_figure(run),
        sections=_device_sections(run),
        problems=_problems(run),
        columns=table.case_columns(run),
        rows=table.case_rows(run),
        details=details,
        distributions=distributions,
        max_distributions=MAX_DISTRIBUTIONS,
        data_params=data.params_text,
        environment=data.environment_items(run),
        json_name=layout.run_json(run.run_id).name,
        csv_name=layout.run_json(run.run_id).with_suffix(".csv").name,
    )


def write_run_page(run: Run, out_dir: str | os.PathLike[str]) -> Path:
    """Write the page of one run to `out_dir/runs/<run-id>.html`, its CSV beside it, plus
    plotly.js once and the run's JSON beside the page when missing. Returns the page's path.

    Raises:
        OutputError: `out_dir` cannot be written, or already holds a different run file
            under the run's id (checked before anything is written).
    """
    root = Path(out_dir)
    _save_run_copy(run, root)
    write_plotly_js(root)
    _write(run_csv_path(run, root), table.run_csv(run))
    return _write(run_page_path(run, root), render_run_page(run))


# ---------------------------------------------------------------------------------------
# Several runs, aligned


def _gate_summary(cmp: Comparison, diffs: Mapping[str, str] | None = None) -> dict[str, Any]:
    counts = [(v.value, cmp.count(v)) for v in Verdict if cmp.count(v)]
    return {
        "program_diffs": [
            (f"{e.workload} {e.size} {e.device} {e.dtype} {e.mode.value}", e.program.text, diff)
            for e in cmp.entries
            if e.program is not None and (diff := (diffs or {}).get(entry_program_key(e)))
        ],
        "fails": cmp.has_regression,
        "nothing_compared": cmp.nothing_compared,
        "inconclusive": list(cmp.inconclusive),
        "failures": len(cmp.failures),
        "counts": counts,
        "compile_regressions": len(cmp.compile_regressions),
        "thresholds": cmp.thresholds,
        "environment": [(d.name, str(d.base), str(d.new)) for d in cmp.environment_differences],
        "pooling": [n.text for n in cmp.pooling],
        "geomeans": [(g.device, g.mode.value, g.ratio, g.count) for g in cmp.geomeans],
    }


def render_comparison_page(
    runs: Sequence[Run],
    comparisons: Sequence[Comparison],
    *,
    links: bool = True,
    run_pages: Sequence[str | None] | None = None,
    program_diffs: Sequence[Mapping[str, str] | None] = (),
) -> str:
    """HTML of runs aligned case by case: each later run against the first, with the
    gate's verdicts (`comparisons[i]` compares runs[0] with runs[i + 1]), time ratios with
    their intervals, jit speedups side by side, and a warning where the case sets differ.

    Args:
        links: whether the page sits in a report folder (links to its index and history).
        run_pages: a link to each run's own page, or None where there is none.
        program_diffs: per comparison, its changed programs' diffs by program key
            (`gate.program.program_diffs`), shown inline, folded.
    """
    alignment = comparison.align(runs, comparisons)
    names = alignment.names
    pages = list(run_pages) if run_pages is not None else [None] * len(runs)
    geomeans = []
    for i, run in enumerate(runs):
        for device in data.device_labels(run):
            for mode in JAX_MODES:
                keys = alignment.headline_keys(run, mode)
                for g in data.geomean_speedups(run, device, keys=keys):
                    if g.mode is mode:
                        geomeans.append((names[i], data.device_title(run, device), g))
    labels = comparison.row_labels(alignment)
    n_cats = len(labels)
    charts = {
        "speedup": comparison.speedup_side_by_side(alignment, Mode.JIT),
        "ratios": [comparison.ratio_figure(alignment, i) for i in range(len(comparisons))],
    }
    return _render(
        "compare.html",
        root="",
        links=links,
        uses_plotly=True,
        title=f"jitbench: {' vs '.join(names)}",
        names=names,
        runs=runs,
        pages=pages,
        run_ids=json.dumps([r.run_id for r in runs]),
        alignment=alignment,
        show_device=not alignment.by_device or len({r.devices for r in alignment.rows}) > 1,
        gates=[
            _gate_summary(c, program_diffs[i] if i < len(program_diffs) else None)
            for i, c in enumerate(comparisons)
        ],
        geomeans=geomeans,
        wide_factor=f"{WIDE_FACTOR:g}",
        charts=charts,
        n_cats=n_cats,
        data=data,
        comparison=comparison,
        Mode=Mode,
        started=[data.started_text(r) for r in runs],
        commits=[data.commit(r) for r in runs],
        machines=[data.machine(r) for r in runs],
    )


def compare_runs(runs: Sequence[Run]) -> list[Comparison]:
    """The gate's comparison of the first run with each later one (default thresholds)."""
    return [compare(runs[0], r) for r in runs[1:]]


def write_comparison_page(
    runs: Sequence[Run],
    comparisons: Sequence[Comparison],
    path: str | os.PathLike[str],
    *,
    links: bool | None = None,
    program_diffs: Mapping[str, str] | None = None,
) -> Path:
    """Write the comparison page of `runs` to `path` (plotly.js beside it, once); links
    to the runs' pages where `path` sits in a report folder that has them, and to its
    index and history when `links` (default: when the folder has an index). The first
    comparison's changed programs' diffs (`program_diffs`, by program key) show inline.

    Raises:
        ConfigError: fewer than two runs, or not one comparison per later run.
        OutputError: the folder cannot be written.
    """
    if len(runs) < 2 or len(comparisons) != len(runs) - 1:
        raise ConfigError("a comparison page needs two or more runs and the gate's comparisons.")
    page = Path(path)
    if page.is_dir():
        raise OutputError(f"{str(page)!r} is a folder; give the comparison page a file name.")
    folder = page.parent
    layout = OutputLayout(folder)
    run_pages = [
        layout.relative(p) if (p := layout.run_page(r.run_id)).exists() else None for r in runs
    ]
    write_plotly_js(folder)
    html = render_comparison_page(
        runs,
        comparisons,
        links=layout.index.exists() if links is None else links,
        run_pages=run_pages,
        program_diffs=[program_diffs],
    )
    return _write(page, html)


def write_report(runs: Sequence[Run], out_dir: str | os.PathLike[str]) -> Path:
    """Render `runs` into `out_dir`: each run's page, a comparison page when there are
    several (aligned with the first run, named from the runs' labels or ids), the history
    and a refreshed index. Returns the page to open (the run's page for one run, the
    comparison page for several).

    Raises:
        ConfigError: no runs given.
        OutputError: `out_dir` cannot be written.
    """
    if not runs:
        raise ConfigError("no runs to report; pass one or more run JSON files.")
    root = Path(out_dir)
    pages = [write_run_page(r, root) for r in runs]
    result = pages[0]
    if len(runs) > 1:
        result = write_comparison_page(
            runs, compare_runs(runs), root / comparison.page_name(runs), links=True
        )
    write_index(root, fresh=runs)
    return result


# ---------------------------------------------------------------------------------------
# Index and history


@dataclass(frozen=True)
class _Stored:
    """A run file in runs/ as the index sees it: its summary, and the run itself where it
    had to be loaded (no summary cached for this version of the file, or a stale page)."""

    path: Path
    summary: RunSummary
    run: Run | None


def _stored_runs(root: Path, fresh: Sequence[Run]) -> tuple[list[_Stored], list[tuple[str, str]]]:
    """Every run file in ROOT/runs/ with its summary: taken from `fresh` (runs just written
    there, already in memory) or from the summary cache when it holds this version of the
    file, else loaded and summarised (and cached). Files that fail to load are listed as
    broken with why."""
    layout = OutputLayout(root)
    in_memory = {layout.run_json(r.run_id): r for r in fresh}
    found, broken = [], []
    paths = sorted(layout.runs_dir.glob("*.json"))
    for path in paths:
        try:
            stamp = summary.stamp_of_file(path)
        except OSError as exc:  # gone or unreadable since the listing
            broken.append((path.name, str(exc)))
            continue
        run = in_memory.get(path)
        known = summary.cached(path, stamp) if run is None else None
        if known is None:
            try:
                run = run if run is not None else load_run(path)
            except ResultsFormatError as exc:
                broken.append((path.name, str(exc)))
                continue
            known = summary.summarize(run)
            summary.store(path, stamp, known)
        found.append(_Stored(path, known, run))
    summary.prune(layout.runs_dir, (p.name for p in paths))
    return found, broken


_RUNS_META = re.compile(r'<meta name="jitbench-runs" content="([^"]*)">')


def _comparison_pages(root: Path) -> tuple[list[str], dict[str, str]]:
    """Comparison pages in `root` (old side-by-side `report-*.html` ones too), and the
    two-run ones by 'base id\\nnew id' for the index's picker."""
    names = sorted(p.name for p in root.glob("compare-*.html")) + sorted(
        p.name for p in root.glob("report-*.html")
    )
    pairs = {}
    for name in names:
        try:
            with open(root / name, encoding="utf-8") as fh:
                head = fh.read(4096)
        except OSError:
            continue
        found = _RUNS_META.search(head)
        try:
            ids = json.loads(html_lib.unescape(found.group(1))) if found else []
        except ValueError:
            continue
        if isinstance(ids, list) and len(ids) == 2 and all(isinstance(i, str) for i in ids):
            pairs[f"{ids[0]}\n{ids[1]}"] = name
    return names, pairs


def render_history_page(runs: Sequence[Run | RunSummary]) -> str:
    """HTML of every workload's time and speedup across `runs` (or their summaries; the
    page at the report folder's root)."""
    hruns = history.history_runs(runs)
    layout = OutputLayout(Path("."))
    names = history.history_workloads(hruns)
    pages = {h.run_id: layout.relative(layout.run_page(h.run_id)) for h in hruns}
    series = history.history_series(hruns)
    programs = history.program_series(hruns)
    workloads = []
    for wl in names[:MAX_HISTORY_WORKLOADS]:
        fig = history.workload_figure(hruns, wl, series=series, pages=pages)
        if fig is not None:
            steps = [
                {
                    "head": history.step_head(s, found),
                    "runs": [s.run_of(p) for p in (found.before, found.after)],
                    "command": found.bisect_command(s.workload, s.size),
                }
                for s in series
                if s.workload == wl
                for found in s.steps
            ]
            program_changes = [
                history.program_change_text(p, point)
                for p in programs
                if p.key[0] == wl
                for point in p.changes
            ]
            workloads.append(
                {
                    "name": wl,
                    "figure": fig,
                    "steps": steps,
                    "programs": history.program_figure(hruns, wl, series=programs),
                    "program_changes": program_changes,
                }
            )
    return _render(
        "history.html",
        root="",
        links=True,
        uses_plotly=bool(workloads),
        title="jitbench: history",
        hruns=hruns,
        pages=pages,
        workloads=workloads,
        no_commit=history.NO_COMMIT,
        n_workloads=len(names),
        max_workloads=MAX_HISTORY_WORKLOADS,
    )


def write_index(out_dir: str | os.PathLike[str], *, fresh: Sequence[Run] = ()) -> Path:
    """Write `out_dir/index.html` listing every run in `out_dir/runs/` newest first (with
    date, label, commit, machine, devices, JAX version, workloads and geometric-mean
    speedups, and a picker of two runs to compare) and `out_dir/history.html`. Pages
    missing or older than their JSON are rendered on the way. Returns the index's path.

    What the index and history show of each run comes from a summary cached in
    `runs/.index-cache/` per version of each run file (`summary`), so a refresh does not
    load every stored run again.

    Args:
        fresh: runs just written to `out_dir/runs/` (by `write_run_page`), used as they are
            instead of being read back.

    Raises:
        OutputError: `out_dir` cannot be written.
    """
    root = Path(out_dir)
    layout = OutputLayout(root)
    stored, broken = _stored_runs(root, fresh)
    entries = []
    by_summary = {id(s.summary): s for s in stored}
    for run_summary in data.newest_first(s.summary for s in stored):
        item = by_summary[id(run_summary)]
        json_path = item.path
        page = json_path.with_suffix(".html")
        if not page.exists() or page.stat().st_mtime < json_path.stat().st_mtime:
            run = item.run if item.run is not None else load_run(json_path)
            write_plotly_js(root)
            _write(json_path.with_suffix(".csv"), table.run_csv(run))
            _write(page, render_run_page(run))
        entries.append(
            {
                "summary": run_summary,
                "page": layout.relative(page),
                "json": layout.relative(json_path),
                "json_arg": str(json_path),
            }
        )
    if stored:
        _write(layout.history, render_history_page([s.summary for s in stored]))
    combined, pairs = _comparison_pages(root)
    html = _render(
        "index.html",
        root="",
        links=True,
        uses_plotly=False,
        title="jitbench reports",
        entries=entries,
        broken=broken,
        combined=combined,
        pairs=pairs,
        out_arg=str(root),
        has_history=bool(stored),
    )
    return _write(layout.index, html)


def load_runs(paths: Iterable[str | os.PathLike[str]]) -> list[Run]:
    """Load run JSON files for a report. Raises ResultsFormatError for a bad file."""
    return [load_run(p) for p in paths]


__all__ = [
    "HISTORY_PAGE",
    "compare_runs",
    "load_runs",
    "render_comparison_page",
    "render_history_page",
    "render_run_page",
    "run_csv_path",
    "write_comparison_page",
    "write_index",
    "write_plotly_js",
    "write_report",
    "write_run_page",
]
