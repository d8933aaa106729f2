"""The output folder's layout: every file a run writes there is checked before measuring."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitbench.errors import OutputError
from jitbench.results import OutputLayout


def test_every_page_at_the_root_is_checked(tmp_path: Path) -> None:
    layout = OutputLayout(tmp_path)
    for page in (layout.index, layout.history, layout.plotly_js):
        page.mkdir()
        with pytest.raises(OutputError, match=f"{page.name}' is a folder"):
            layout.ensure_writable()
        page.rmdir()
    assert layout.ensure_writable() is layout


@pytest.mark.parametrize("suffix", [".html", ".csv"])
def test_the_runs_own_page_and_csv_are_checked(tmp_path: Path, suffix: str) -> None:
    layout = OutputLayout(tmp_path)
    (layout.runs_dir / f"r1{suffix}").mkdir(parents=True)
    layout.ensure_writable()  # another run's name: not this run's to write
    with pytest.raises(OutputError, match=f"r1{suffix}' is a folder"):
        layout.ensure_writable("r1")
