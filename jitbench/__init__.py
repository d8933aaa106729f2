"""jitbench: NumPy vs JAX eager vs JAX jit, measured under one honest protocol."""

from __future__ import annotations

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
from jitbench.runner.scheduler import run_workloads
from jitbench.suite.discovery import Registry, discover
from jitbench.suite.workload import Workload, workload

__version__ = "0.1.0"

__all__ = [
    "Case",
    "Comparison",
    "CompileInfo",
    "ConfigError",
    "Diagnostic",
    "JitbenchError",
    "Measurement",
    "Mode",
    "OutputError",
    "Registry",
    "ResultsFormatError",
    "Run",
    "RunConfig",
    "SamplingPlan",
    "Status",
    "SuiteError",
    "Thresholds",
    "Workload",
    "WorkloadError",
    "__version__",
    "compare",
    "discover",
    "load_run",
    "load_side",
    "run",
    "run_workloads",
    "save_run",
    "workload",
]
