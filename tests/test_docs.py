"""The docs site (docs/, mkdocs.yml) stays true to the code.

CI builds the site with `mkdocs build --strict` (broken links and references fail there);
these tests run what the build cannot: every code block marked runnable, and the tables
that restate the code (diagnostic codes, exit codes, the public API) against the code.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

import jitbench
from jitbench.cli import common
from jitbench.measure.diagnose import CODES

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
RUNNABLE = re.compile(r"^<!-- runnable -->\n```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
VALIDATION_FIELDS = ("**Command**", "**Machine**", "**Date")


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "hooks" not in p.parts)


def _runnable_blocks() -> list[Any]:
    blocks = []
    for page in _pages():
        for i, match in enumerate(RUNNABLE.finditer(page.read_text(encoding="utf-8"))):
            name = f"{page.relative_to(DOCS)}#{i + 1}"
            blocks.append(pytest.param(page, match.group(1), id=name))
    return blocks


def _hook() -> Any:
    spec = importlib.util.spec_from_file_location("docs_hook", DOCS / "hooks" / "generated.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_there_are_runnable_blocks() -> None:
    assert len(_runnable_blocks()) >= 3


@pytest.mark.parametrize(("page", "code"), _runnable_blocks())
def test_a_runnable_block_runs(page: Path, code: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each block sets its own small budgets; it runs from the repository root, as a reader
    of the guide would, and must not write into the checkout."""
    monkeypatch.chdir(REPO)
    before = {p for p in (REPO / "reports").rglob("*") if p.is_file()}
    exec(compile(code, str(page), "exec"), {"__name__": "__docs_example__"})
    assert {p for p in (REPO / "reports").rglob("*") if p.is_file()} == before


def test_the_diagnostic_codes_table_has_every_code() -> None:
    text = (DOCS / "guide" / "profiling.md").read_text(encoding="utf-8")
    table = set(re.findall(r"^\| `([a-z0-9-]+)` \|", text, re.MULTILINE))
    assert set(CODES) <= table, set(CODES) - table
    # Codes beside the stable set (`time-split-unavailable`, `unvalidated`) must exist too.
    source = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "jitbench").rglob("*.py"))
    assert all(f'"{code}"' in source for code in table - set(CODES))


def test_the_exit_codes_table_has_every_exit_code() -> None:
    text = (DOCS / "reference" / "exit-codes.md").read_text(encoding="utf-8")
    rows = dict(
        (name, int(code))
        for code, name in re.findall(r"^\| \*\*(\d+)\*\* \| `(EXIT_[A-Z_]+)` \|", text, re.M)
    )
    constants = {n: getattr(common, n) for n in dir(common) if n.startswith("EXIT_")}
    assert rows == constants


def test_the_api_page_documents_every_public_name() -> None:
    text = (DOCS / "reference" / "python-api.md").read_text(encoding="utf-8")
    documented = re.findall(r"^::: jitbench\.(\w+)$", text, re.MULTILINE)
    assert len(documented) == len(set(documented))
    assert set(documented) == set(jitbench.__all__) - {"__version__"}


def test_the_cli_reference_is_every_commands_help() -> None:
    hook = _hook()
    text = hook.cli_reference()
    for name in ("run", "list", "profile", "report", "compare", "ab", "bisect", "env"):
        assert f"## `jitbench {name}`" in text
        assert f"Usage: jitbench {name} [OPTIONS]" in text
    assert "--allow-inconclusive" in text and "--rev" in text and "--setting" in text
    page = hook.on_page_markdown("# x\n\n<!-- generated: schema-changelog -->\n")
    assert "1.0: first version." in page and "<!-- generated" not in page


def test_every_validation_page_says_how_its_figures_were_made() -> None:
    for page in sorted((DOCS / "validation").glob("*.md")):
        if page.name == "index.md":
            continue
        head = page.read_text(encoding="utf-8")[:2500]
        missing = [f for f in VALIDATION_FIELDS if f not in head]
        assert not missing, f"{page.name} lacks {missing} at the top"


def test_the_readme_is_a_front_page_that_links_into_the_docs() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    links = set(re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", readme))
    assert links and all((REPO / link).is_file() for link in links), links
    for page in ("quick-start", "workloads", "ci-gate", "python"):  # one click each
        assert f"docs/guide/{page}.md" in links
    assert "docs/reference/python-api.md" in links
