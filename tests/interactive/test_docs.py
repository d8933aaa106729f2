"""The Python API's documented examples run: the docs' pytest blocks (`<!-- runnable:
pytest -->`, run by pytest with the plugin, in this process; tests/test_docs.py runs the script
blocks) and the docstrings' doctests."""

from __future__ import annotations

import doctest
import re
from importlib.metadata import entry_points
from pathlib import Path

import pytest

import jitbench.interactive.one_call
from tests.interactive.test_pytest_plugin import LOAD

pytest_plugins = ["pytester"]

README = Path(__file__).resolve().parents[2] / "docs" / "guide" / "python.md"
_BLOCK = re.compile(
    r"<!-- runnable(?::\s*(?P<how>[^>]*?))?\s*-->\n```python\n(?P<code>.*?)\n```", re.S
)


def runnable_blocks() -> list[tuple[str, str]]:
    """(how, code) of each fenced python block after a `<!-- runnable... -->` line:
    "pytest" for a test file, else a script."""
    return [
        ("pytest" if (m["how"] or "").strip() == "pytest" else "script", m["code"])
        for m in _BLOCK.finditer(README.read_text(encoding="utf-8"))
    ]


def test_the_docs_have_a_pytest_block() -> None:
    assert [how for how, _ in runnable_blocks()].count("pytest") >= 1


@pytest.mark.parametrize(
    "code", [c for how, c in runnable_blocks() if how == "pytest"], ids=lambda c: c.split("\n")[0]
)
@pytest.mark.usefixtures("extension_modules_loaded")
def test_a_readme_pytest_block_passes(code: str, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_readme=code)
    # In this process; -p of a module already imported warns that its asserts are not
    # rewritten: none to.
    quiet = ("-W", "ignore::pytest.PytestAssertRewriteWarning")
    result = pytester.runpytest(*LOAD, *quiet, "-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=code.count("\ndef test_") + code.startswith("def test_"))


def test_the_docstring_examples_run() -> None:
    for module in (jitbench.interactive.one_call,):
        failures, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert tried > 0 and failures == 0, module.__name__


def test_the_plugin_is_found_by_entry_point_or_name() -> None:
    """The pytest blocks load the plugin as an install would (or by name in a checkout)."""
    names = {ep.name for ep in entry_points(group="pytest11")}
    assert "jitbench" in names or LOAD == ("-p", "jitbench.interactive.pytest_plugin")
