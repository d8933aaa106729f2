"""The documentation's runnable examples run, and README's Python example does too.

A fenced ```python block right after a `<!-- runnable -->` line in docs/ is executed as
it is written (from the repository's root, so its paths hold), in one namespace per page.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RUNNABLE = re.compile(r"<!-- runnable -->\s*```python\n(.*?)```", re.S)
PAGES = sorted(p for p in (REPO / "docs").rglob("*.md") if RUNNABLE.search(p.read_text()))


def test_some_pages_have_runnable_examples() -> None:
    assert PAGES, "no runnable example found in docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_a_pages_runnable_examples_run(page: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for block in RUNNABLE.findall(page.read_text()):
        exec(compile(block, str(page), "exec"), namespace)


def test_readme_python_example_runs_with_a_small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """README's one-call example, with a smaller array and budget (its figures are the
    machine's; that it runs and agrees with itself is the test's)."""
    text = (REPO / "README.md").read_text()
    [block] = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "bench(" in b]
    block = block.replace("1_000_000", "10_000").replace(
        "bench(selu, x)", "bench(selu, x, budget=0.05, processes=1)"
    )
    monkeypatch.chdir(REPO)
    namespace: dict[str, object] = {}
    exec(compile(block, "README.md", "exec"), namespace)
    r = namespace["result"]
    s = r.speedup("jit")  # type: ignore[attr-defined]
    assert s.value == pytest.approx(r.time("numpy").value / r.time("jit").value)  # type: ignore[attr-defined]
    assert os.path.exists(REPO / "mkdocs.yml")
