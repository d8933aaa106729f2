"""HTML reports: derived data of runs (`data`, `table`, `comparison`, `history`), plotly
figures (`figures`), the pages that hold them (`pages`) and what pages load besides their
HTML (`assets`: plotly.js, the page script, the content-security policy).

Pages open from disk with no network: plotly.js is written once beside them.
"""

from __future__ import annotations

from jitbench.report.pages import (
    compare_runs,
    load_runs,
    render_comparison_page,
    render_history_page,
    render_run_page,
    write_comparison_page,
    write_index,
    write_plotly_js,
    write_report,
    write_run_page,
)

__all__ = [
    "compare_runs",
    "load_runs",
    "render_comparison_page",
    "render_history_page",
    "render_run_page",
    "write_comparison_page",
    "write_index",
    "write_plotly_js",
    "write_report",
    "write_run_page",
]
