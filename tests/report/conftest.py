"""The report's tests share one real measured run per test process (it takes seconds)."""

from __future__ import annotations

import pytest

from jitbench.results import Run
from tests.report.builders import real_run


@pytest.fixture(scope="session")
def run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return real_run(tmp_path_factory.mktemp("suite"))
