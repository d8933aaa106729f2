"""jitbench: NumPy vs JAX eager vs JAX jit, measured under one honest protocol.

The names below are the public API. They are imported on first use (PEP 562), so
`import jitbench` (and `from jitbench import workload` in a suite file, or the command
line's `--help`) does not pay for importing JAX: only measuring does.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jitbench.api import run
    from jitbench.config import RunConfig, SamplingPlan
    from jitbench.errors import (
        ConfigError,
        JitbenchError,
        OutputError,
        ResultsFormatError,
        SuiteError,
        WorkloadError,
    )
    from jitbench.gate import Comparison, Thresholds, compare, load_side
    from jitbench.interactive import BenchResult, bench
    from jitbench.results import (
        Case,
        CompileInfo,
        Diagnostic,
        Measurement,
        Mode,
        Run,
        Status,
        load_run,
        save_run,
    )
    from jitbench.results.analysis import Estimate, RunAnalysis, analyse
    from jitbench.runner.scheduler import run_workloads
    from jitbench.suite.discovery import Registry, discover
    from jitbench.suite.workload import Arguments, Workload, workload

__version__ = "0.1.0"

# Public name -> the module that defines it (one place; `__all__` is derived from it).
_EXPORTS: dict[str, str] = {
    "run": "jitbench.api",
    "RunConfig": "jitbench.config",
    "SamplingPlan": "jitbench.config",
    "ConfigError": "jitbench.errors",
    "JitbenchError": "jitbench.errors",
    "OutputError": "jitbench.errors",
    "ResultsFormatError": "jitbench.errors",
    "SuiteError": "jitbench.errors",
    "WorkloadError": "jitbench.errors",
    "Comparison": "jitbench.gate",
    "Thresholds": "jitbench.gate",
    "compare": "jitbench.gate",
    "load_side": "jitbench.gate",
    "Case": "jitbench.results",
    "CompileInfo": "jitbench.results",
    "Diagnostic": "jitbench.results",
    "Measurement": "jitbench.results",
    "Mode": "jitbench.results",
    "Run": "jitbench.results",
    "Status": "jitbench.results",
    "load_run": "jitbench.results",
    "bench": "jitbench.interactive",
    "BenchResult": "jitbench.interactive",
    "analyse": "jitbench.results.analysis",
    "RunAnalysis": "jitbench.results.analysis",
    "Estimate": "jitbench.results.analysis",
    "save_run": "jitbench.results",
    "run_workloads": "jitbench.runner.scheduler",
    "Registry": "jitbench.suite.discovery",
    "discover": "jitbench.suite.discovery",
    "Arguments": "jitbench.suite.workload",
    "Workload": "jitbench.suite.workload",
    "workload": "jitbench.suite.workload",
}

# Written out (not derived from _EXPORTS) so tools can read it; a test keeps them equal.
__all__ = [
    "Arguments",
    "BenchResult",
    "Case",
    "Comparison",
    "CompileInfo",
    "ConfigError",
    "Diagnostic",
    "Estimate",
    "JitbenchError",
    "Measurement",
    "Mode",
    "OutputError",
    "Registry",
    "ResultsFormatError",
    "Run",
    "RunAnalysis",
    "RunConfig",
    "SamplingPlan",
    "Status",
    "SuiteError",
    "Thresholds",
    "Workload",
    "WorkloadError",
    "__version__",
    "analyse",
    "bench",
    "compare",
    "discover",
    "load_run",
    "load_side",
    "run",
    "run_workloads",
    "save_run",
    "workload",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module the first time the name is used."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'jitbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext jitbench` in IPython or Jupyter: the `%jitbench f(x)` line magic and the
    `%%jitbench` cell magic (`jitbench.interactive.magics`)."""
    from jitbench.interactive.magics import load_ipython_extension as load

    load(ipython)


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
