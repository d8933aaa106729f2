"""jitbench from Python, notebooks and pytest: `bench(fn, *args)` for one function, the
IPython magics (`%load_ext jitbench`) and the pytest plugin's `jitbench` fixture.

The names are imported on first use, so pytest loading the plugin
(`jitbench.interactive.pytest_plugin`) in every session imports neither NumPy nor JAX.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jitbench.interactive.one_call import GIVEN, BenchResult, bench

__all__ = ["GIVEN", "BenchResult", "bench"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'jitbench.interactive' has no attribute {name!r}")
    return getattr(importlib.import_module("jitbench.interactive.one_call"), name)
