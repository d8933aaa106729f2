"""The example notebook, executed headless on a real Jupyter kernel (nbclient), and what it
shows checked: the HTML table of every result, and speedups that are the quotient of the
times shown beside them."""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "jit_worth_it.ipynb"

_UNITS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
_ROW = re.compile(
    r"<tr><td>(?P<size>[^<]*)</td><td>(?P<mode>[^<]*)</td>"
    r'<td style="text-align:right">(?P<time>[^<]*)</td><td>(?P<speedup>[^<]*)</td></tr>'
)


def seconds(text: str) -> float:
    """'4.66 µs ±2%' → 4.66e-6 (the time shown, before its interval)."""
    number, unit = text.split()[:2]
    return float(number.replace(",", "")) * _UNITS[unit]


def ratio(text: str, over: str) -> float | None:
    """The ratio shown 'vs NumPy' or 'vs eager' in a speedup cell ('3.25× [2.48–4.27] vs
    NumPy · 2.89× ±3% vs eager'), or None."""
    for part in text.split(" · "):
        if part.rstrip().endswith(f"vs {over}") or f" vs {over} " in part:
            return float(part.split("×")[0].replace(",", ""))
    return None


def table_rows(page: str) -> dict[str, tuple[float, str]]:
    """mode → (seconds shown, speedup cell) of one result's HTML table."""
    return {
        m["mode"]: (seconds(html.unescape(m["time"])), html.unescape(m["speedup"]))
        for m in _ROW.finditer(page)
    }


def check_consistent(rows: dict[str, tuple[float, str]]) -> int:
    """Every speedup shown is the shown base time ÷ the shown mode time, to the three
    digits each is shown with. Returns how many were checked."""
    checked = 0
    for mode, (t, cell) in rows.items():
        for base, over in (("numpy", "NumPy"), ("eager", "eager")):
            shown = ratio(cell, over)
            if shown is None or base not in rows:
                continue
            assert shown == pytest.approx(rows[base][0] / t, rel=0.012), (mode, over, rows)
            checked += 1
    return checked


def test_the_parsers_read_what_the_summary_writes() -> None:
    page = (
        '<tr><td>given</td><td>numpy</td><td style="text-align:right">1.24 ms ±19%</td>'
        "<td></td></tr><tr><td>given</td><td>jit</td>"
        '<td style="text-align:right">381 µs [231 µs–630 µs]</td>'
        "<td>3.25× [2.48–4.27] vs NumPy · 2.89× ±3% vs eager</td></tr>"
    )
    rows = table_rows(page)
    assert rows["numpy"][0] == pytest.approx(1.24e-3) and rows["jit"][0] == pytest.approx(381e-6)
    assert ratio(rows["jit"][1], "NumPy") == 3.25 and ratio(rows["jit"][1], "eager") == 2.89
    assert check_consistent(rows) == 1


@pytest.mark.e2e
def test_the_example_notebook_runs_and_shows_consistent_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    repo = str(NOTEBOOK.parents[1])
    # The kernel (and the worker processes bench() starts) import this checkout's jitbench.
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [repo, os.environ.get("PYTHONPATH")]))
    )
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")  # kept clean
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()

    results = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert not [o for o in cell.outputs if o.output_type == "error"], cell.source
        pages = [
            o.data["text/html"]
            for o in cell.outputs
            if "data" in o and 'class="jitbench-table"' in o.data.get("text/html", "")
        ]
        results += [(cell.source, page) for page in pages]
    assert len(results) == 3  # selu, the FAQ's product, the pitfall
    for source, page in results:
        assert "<svg" in page, source
        rows = table_rows(page)
        assert set(rows) == {"numpy", "eager", "jit"}, source
        assert check_consistent(rows) == 3, source  # eager and jit vs NumPy, jit vs eager
    selu, _, pitfall = (page for _, page in results)
    assert "2 processes" in selu  # the first result's intervals hold from run to run
    assert "jit-slower-than-numpy" in pitfall and "dispatch" in pitfall
