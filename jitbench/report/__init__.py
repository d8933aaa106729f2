"""HTML reports: plotly figures of a Run (`figures`) and the pages that hold them (`pages`).

Pages open from disk with no network: plotly.js is written once beside them.
"""

from __future__ import annotations

from jitbench.report.pages import (
    load_runs,
    render_multi_page,
    render_run_page,
    write_index,
    write_plotly_js,
    write_report,
    write_run_page,
)

__all__ = [
    "load_runs",
    "render_multi_page",
    "render_run_page",
    "write_index",
    "write_plotly_js",
    "write_report",
    "write_run_page",
]
