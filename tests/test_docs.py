"""README's Python example runs (the docs' runnable blocks run in
tests/interactive/test_docs.py)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


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
