"""The pipeline flows one way: each module imports only from its own stage or lower ones.

The ranks below are the layout ARCHITECTURE.md draws. The test reads the imports from the
source (static, including imports inside functions), so a lazy import cannot hide an
upward dependency, and it also rejects import cycles between modules.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "jitbench"

#: Lower ranks are imported by higher ones, never the other way round.
RANKS: dict[str, int] = {
    "errors": 0,
    "formatting": 0,
    "rank_tests": 0,
    "stats": 0,
    "config": 1,
    "results": 2,
    "suite": 3,
    "measure": 4,
    "runner": 5,
    "ab": 6,
    "gate": 6,
    "render": 7,
    "report": 7,
    "adapters": 7,
    "api": 8,
    "interactive": 8,
    "cli": 9,
    "__main__": 10,
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every jitbench module `path` imports, absolute or relative, at any depth."""
    module = _module_name(path)
    return _imports_of(path.read_text(encoding="utf-8"), module, path.name == "__init__.py")


def _imports_of(source: str, module: str, is_package: bool) -> set[str]:
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            for alias in node.names:
                # `from jitbench import stats` imports the module jitbench.stats;
                # `from jitbench import run` imports an attribute of the package.
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in KNOWN else base)
    return {name for name in found if name == "jitbench" or name.startswith("jitbench.")}


def _stage(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


MODULES = {
    _module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if _module_name(p) != "jitbench"
}
KNOWN = set(MODULES) | {"jitbench"}


def _resolve(name: str) -> str | None:
    """The module `name` refers to (an imported attribute resolves to its module)."""
    while name and name not in KNOWN:
        name = name.rpartition(".")[0]
    return name or None


def test_every_stage_has_a_rank() -> None:
    stages = {_stage(m) for m in MODULES}
    assert stages <= set(RANKS), f"give these stages a rank: {sorted(stages - set(RANKS))}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_upward_import(module: str) -> None:
    own = RANKS[_stage(module)]
    upward = []
    for name in _imports(MODULES[module]):
        target = _resolve(name)
        if target is None or target == "jitbench":
            # The public surface (jitbench/__init__.py) imports every stage; below it,
            # only the CLI may use it.
            if target == "jitbench" and own < RANKS["cli"]:
                upward.append("jitbench (the public surface)")
            continue
        stage = _stage(target)
        if stage != _stage(module) and RANKS[stage] > own:
            upward.append(target)
    assert not upward, f"{module} (rank {own}) imports from a later stage: {sorted(upward)}"


def test_no_import_cycles() -> None:
    edges = {
        m: {
            t
            for n in _imports(p)
            if (t := _resolve(n)) and t != m and t != "jitbench" and not m.startswith(t + ".")
        }
        for m, p in MODULES.items()
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_the_walker_sees_lazy_and_relative_imports() -> None:
    """The check itself can fail: lazy, relative and attribute imports are all resolved."""
    source = (
        "from jitbench import formatting, workload\n"
        "def f():\n"
        "    from ..report import pages\n"
        "    import jitbench.gate\n"
    )
    found = {_resolve(n) for n in _imports_of(source, "jitbench.measure.timer", False)}
    assert found == {"jitbench.formatting", "jitbench", "jitbench.report.pages", "jitbench.gate"}


#: A docstring says what and why in a few lines; the longer why goes to the methodology
#: pages. The code names no machine and no date: figures from a machine live in the
#: validation pages, with the command, date, machine and commit that made them.
DOCSTRING_LINES = 40
MACHINE_OR_DATE = re.compile(r"\b20[12]\d-[01]\d-[0-3]\d\b|\bvCPUs?\b|\bdevelopment VM\b|\bXeon\b")


def _long_docstrings(source: str) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            doc = node.body[0] if node.body else None
            if isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant):
                lines = (doc.end_lineno or doc.lineno) - doc.lineno + 1
                if isinstance(doc.value.value, str) and lines > DOCSTRING_LINES:
                    found.append((getattr(node, "name", "<module>"), lines))
    return found


def test_docstrings_are_short_and_the_code_names_no_machine_or_date() -> None:
    long, dated = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        long += [(path.name, name, n) for name, n in _long_docstrings(source)]
        dated += [
            f"{path.name}:{i}: {line.strip()}"
            for i, line in enumerate(source.splitlines(), 1)
            if MACHINE_OR_DATE.search(line)
        ]
    assert not long, f"docstrings over {DOCSTRING_LINES} lines: {long}"
    assert not dated, "lines that name a machine or a date:\n" + "\n".join(dated)


def test_the_docstring_and_date_checks_can_fail() -> None:
    long = 'def f():\n    """' + "line\n" * DOCSTRING_LINES + '"""\n'
    assert _long_docstrings(long) == [("f", DOCSTRING_LINES + 1)]
    assert MACHINE_OR_DATE.search("# measured 2026-11-30 on the 2-vCPU VM")
    assert not MACHINE_OR_DATE.search("budget_s = 2.0  # seconds")
