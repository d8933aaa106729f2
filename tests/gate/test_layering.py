"""The gate's place in the pipeline: it reads results and statistics, never the stages
above it (runner, cli, report, render, adapters), and it never prints."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

GATE = Path(__file__).resolve().parents[2] / "jitbench" / "gate"

#: What a gate module may import from jitbench (and their submodules).
ALLOWED = (
    "jitbench.gate",
    "jitbench.errors",
    "jitbench.stats",
    "jitbench.formatting",
    "jitbench.config",
    "jitbench.results",
)


def jitbench_imports(path: Path) -> set[str]:
    """Every jitbench module `path` imports, `from jitbench import x` read as jitbench.x."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.name}: relative import"
            if node.module == "jitbench":
                found.update(f"jitbench.{a.name}" for a in node.names)
            elif node.module:
                found.add(node.module)
    return {m for m in found if m == "jitbench" or m.startswith("jitbench.")}


@pytest.mark.parametrize("path", sorted(GATE.glob("*.py")), ids=lambda p: p.name)
def test_gate_imports_only_lower_layers(path):
    imported = jitbench_imports(path)
    bad = {m for m in imported if not any(m == a or m.startswith(a + ".") for a in ALLOWED)}
    assert not bad, f"jitbench/gate/{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", sorted(GATE.glob("*.py")), ids=lambda p: p.name)
def test_gate_never_prints(path):
    calls = [
        n
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
    ]
    assert not calls, f"jitbench/gate/{path.name} calls print()"
