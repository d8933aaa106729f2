"""Fixtures of the tests that run pytest inside their own process (`pytester.runpytest`)."""

from __future__ import annotations

import numpy as np
import pytest
from rich.console import Console


@pytest.fixture(scope="session")
def extension_modules_loaded() -> None:
    """pytester's in-process runs drop the modules a run imported, and an extension module
    (NumPy's, jaxlib's, SciPy's) cannot load twice in a process: a run here imports them
    first, and the comparison's renderer with them."""
    from jitbench import bench
    from jitbench.gate import compare
    from jitbench.render.comparison import comparison_report

    r = bench(lambda x: x * 2, np.ones(8, np.float32), budget=0.01, processes=1)
    Console(file=None, quiet=True).print(comparison_report(compare(r.run, r.run)))
