"""Put report pages on disk: one page per run, a page for several runs together, the index,
and plotly.js written once beside them so every page opens from disk with no network.

Layout under the output folder (the same folder `jitbench run --out` uses):
    index.html            every run found in runs/, newest first
    plotly.min.js         the plotly package's bundled copy, written once
    runs/<run-id>.json    run data (copied here when rendering a run from elsewhere)
    runs/<run-id>.html    one page per run
    report-<digest>.html  several runs side by side
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from jitbench import formatting as fmt
from jitbench.config import JAX_MODES
from jitbench.errors import ConfigError, ResultsFormatError
from jitbench.report import data, figures
from jitbench.results import (
    Mode,
    OutputLayout,
    Run,
    dump_run,
    load_run,
    save_run,
    write_text_atomic,
)

_FIG_CONFIG = {
    "displaylogo": False,
    "responsive": True,
    "toImageButtonOptions": {"format": "png", "scale": 2},
}


def _figure_json(fig: Any) -> Markup:
    """Figure JSON safe to embed in a <script type="application/json"> element."""
    text = fig.to_json(validate=False, engine="json")
    for raw, safe in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, safe)
    return Markup(text)


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("jitbench.report", "templates"),
        autoescape=True,  # every value from a results file is text, never markup
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["figure_json"] = _figure_json
    env.filters["ratio"] = fmt.ratio
    env.filters["seconds"] = fmt.seconds
    env.globals["fig_config"] = Markup(json.dumps(_FIG_CONFIG))
    return env


def _write(path: Path, text: str) -> Path:
    """Write a page, index or plotly.js atomically (temp file + rename) and return its path."""
    write_text_atomic(path, text)
    return path


def write_plotly_js(out_dir: str | os.PathLike[str]) -> Path:
    """Write the plotly package's bundled plotly.js into `out_dir` unless the same copy is
    already there. Returns its path."""
    from plotly.offline import get_plotlyjs

    path = OutputLayout(Path(out_dir)).plotly_js
    js = get_plotlyjs()
    try:
        if path.stat().st_size == len(js.encode("utf-8")) and path.read_text("utf-8") == js:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    return _write(path, js)


def run_page_path(run: Run, out_dir: str | os.PathLike[str]) -> Path:
    return OutputLayout(Path(out_dir)).run_page(run.run_id)


def _save_run_copy(run: Run, out_dir: Path) -> Path:
    """Keep the run's JSON beside its page (the index finds runs there)."""
    path = OutputLayout(out_dir).run_json(run.run_id)
    text = dump_run(run)
    try:
        if path.read_text("utf-8") == text:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    return save_run(run, path)


def _device_sections(runs: Sequence[Run], *, with_host: bool) -> list[dict[str, Any]]:
    sections = []
    for run in runs:
        for device in data.device_labels(run):
            sweeps = []
            for wl in data.sweep_workloads(run, device):
                series = data.sweep_series(run, device, wl)
                sweeps.append(
                    {
                        "workload": wl,
                        "figure": figures.sweep_figure(run, device, wl),
                        "verdicts": [
                            data.sweep_verdict(series, m) for m in JAX_MODES if m in series
                        ],
                    }
                )
            modes = {m.mode for m in run.measurements if m.case.device == device}
            sections.append(
                {
                    "run": run,
                    "device": device,
                    "has_speedup": Mode.NUMPY in modes and bool(modes & set(JAX_MODES)),
                    "has_jit": Mode.JIT in modes,
                    "title": data.device_title(run, device, with_host=with_host),
                    "geomeans": data.geomean_speedups(run, device),
                    "speedup": figures.speedup_figure(
                        run,
                        device,
                        title=f"Speedup over NumPy — "
                        f"{data.device_title(run, device, with_host=with_host)}",
                    ),
                    "compile": figures.compile_figure(run, device),
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


_COLUMNS = (
    ("workload", "workload"),
    ("size", "size"),
    ("device", "device"),
    ("dtype", "dtype"),
    ("mode", "mode"),
    ("status", "status"),
    ("median", "median / call"),
    ("ci", "95 % CI"),
    ("samples", "samples"),
    ("speedup", "× NumPy [CI]"),
    ("first_call", "first call"),
    ("compile", "jit compile"),
    ("notes", "errors & diagnostics"),
)


def render_run_page(run: Run) -> str:
    """HTML of one run's page (links assume it lives in `runs/` under the report root)."""
    return (
        _env()
        .get_template("run.html")
        .render(
            root="../",
            run=run,
            title=f"jitbench run {run.run_id}",
            started=data.started_text(run),
            machine=data.machine(run),
            threads=data.threads_text(run),
            banner=data.machine_banner(run),
            versions=data.versions(run),
            sections=_device_sections([run], with_host=False),
            problems=_problems(run),
            columns=_COLUMNS,
            rows=data.measurement_rows(run),
            environment=data.environment_items(run),
            json_name=OutputLayout(Path(".")).run_json(run.run_id).name,
            Mode=Mode,
        )
    )


def write_run_page(run: Run, out_dir: str | os.PathLike[str]) -> Path:
    """Write the page of one run to `out_dir/runs/<run-id>.html` (plus plotly.js once and the
    run's JSON beside the page when missing). Returns the page's path.

    Raises:
        OutputError: `out_dir` cannot be written.
    """
    root = Path(out_dir)
    write_plotly_js(root)
    _save_run_copy(run, root)
    return _write(run_page_path(run, root), render_run_page(run))


def render_multi_page(runs: Sequence[Run]) -> str:
    """HTML of several runs side by side: one speedup chart per (run, device) on a shared
    axis, geometric means compared, and links to each run's own page."""
    y_range = figures.speedup_range(runs)
    layout = OutputLayout(Path("."))  # the multi page sits at the output folder's root
    hosts = {data.host(r) for r in runs}
    with_host = len(hosts) > 1 or len(runs) > 1
    charts = []
    seen = [(data.host(r), d) for r in runs for d in data.device_labels(r)]
    for run in runs:
        for device in data.device_labels(run):
            title = data.device_title(run, device, with_host=with_host)
            if seen.count((data.host(run), device)) > 1:  # same device in several runs
                title += f" · run {run.run_id}"
            charts.append(
                {
                    "run": run,
                    "device": device,
                    "title": title,
                    "page": layout.relative(layout.run_page(run.run_id)),
                    "geomeans": data.geomean_speedups(run, device),
                    "figure": figures.speedup_figure(run, device, title=title, y_range=y_range),
                }
            )
    crowded = any(len(data.cases_on(c["run"], c["device"])) > figures.MAX_ANNOTATED for c in charts)
    return (
        _env()
        .get_template("multi.html")
        .render(
            root="",
            title=f"jitbench: {len(runs)} runs side by side",
            runs=runs,
            charts=charts,
            grid_class="stack" if crowded else "grid",
            data=data,
            Mode=Mode,
        )
    )


def _multi_name(runs: Sequence[Run]) -> str:
    digest = hashlib.sha256("\0".join(r.run_id for r in runs).encode()).hexdigest()[:10]
    return f"report-{digest}.html"


def write_report(runs: Sequence[Run], out_dir: str | os.PathLike[str]) -> Path:
    """Render `runs` into `out_dir`: each run's page, a side-by-side page when there are
    several, and a refreshed index. Returns the page to open (the run's page for one run,
    the side-by-side page for several).

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
        result = _write(root / _multi_name(runs), render_multi_page(runs))
    write_index(root)
    return result


def _load_all(runs_dir: Path) -> tuple[list[tuple[Run, Path]], list[tuple[str, str]]]:
    found, broken = [], []
    for path in sorted(runs_dir.glob("*.json")):
        try:
            found.append((load_run(path), path))
        except ResultsFormatError as exc:
            broken.append((path.name, str(exc)))
    return found, broken


def write_index(out_dir: str | os.PathLike[str]) -> Path:
    """Write `out_dir/index.html` listing every run in `out_dir/runs/` newest first, with
    date, machine, devices, JAX version, workloads and geometric-mean speedups. Pages missing
    or older than their JSON are rendered on the way. Returns the index's path.

    Raises:
        OutputError: `out_dir` cannot be written.
    """
    root = Path(out_dir)
    layout = OutputLayout(root)
    write_plotly_js(root)
    loaded, broken = _load_all(layout.runs_dir)
    by_run = {id(r): p for r, p in loaded}
    entries = []
    for run in data.newest_first(r for r, _ in loaded):
        json_path = by_run[id(run)]
        page = json_path.with_suffix(".html")
        if not page.exists() or page.stat().st_mtime < json_path.stat().st_mtime:
            _write(page, render_run_page(run))
        entries.append(
            {
                "run": run,
                "page": layout.relative(page),
                "json": layout.relative(json_path),
                "started": data.started_text(run),
                "machine": data.machine(run),
                "devices": [data.device_title(run, d) for d in data.device_labels(run)],
                "jax": data.versions(run).get("jax") or "—",
                "workloads": data.workloads(run),
                "geomeans": [(d, data.geomean_speedups(run, d)) for d in data.device_labels(run)],
            }
        )
    combined = sorted(p.name for p in root.glob("report-*.html"))
    html = (
        _env()
        .get_template("index.html")
        .render(
            root="",
            title="jitbench reports",
            entries=entries,
            broken=broken,
            combined=combined,
        )
    )
    return _write(layout.index, html)


def load_runs(paths: Iterable[str | os.PathLike[str]]) -> list[Run]:
    """Load run JSON files for a report. Raises ResultsFormatError for a bad file."""
    return [load_run(p) for p in paths]


__all__ = [
    "load_runs",
    "render_multi_page",
    "render_run_page",
    "write_index",
    "write_plotly_js",
    "write_report",
    "write_run_page",
]
