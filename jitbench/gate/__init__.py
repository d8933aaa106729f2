"""The regression gate: compare two runs (or pooled sides) case by case.

`model` holds the result types and their JSON form, `judge` the verdicts (`compare`),
`pooling` one side as a run file or a folder of runs (`load_side`, `merge_runs`) and
`envdiff` what differs between the runs' environments. The names below are the gate's
public surface.
"""

from __future__ import annotations

from jitbench.gate.envdiff import environment_differences
from jitbench.gate.judge import (
    MIN_RUNS_PER_SIDE,
    RUN_PRIOR_DF,
    TimingResult,
    adjust_for_multiplicity,
    compare,
    compare_compile,
    compare_measurements,
    compare_runs,
    compare_timing,
    run_spread_of,
)
from jitbench.gate.model import (
    COMPARISON_SCHEMA_ID,
    COMPARISON_SCHEMA_VERSION,
    FAILING_VERDICTS,
    P_ADJUST_METHODS,
    Comparison,
    CompileChange,
    Entry,
    EnvDifference,
    GateOutcome,
    GeoMeanRatio,
    PoolingNote,
    SignificanceTest,
    Thresholds,
    Verdict,
)
from jitbench.gate.paired import INTERLEAVED_THRESHOLD, are_partners, compare_interleaved
from jitbench.gate.pooling import DISTURBED_FACTOR, load_side, merge_runs, pooling_notes, run_levels
from jitbench.results.analysis.estimates import compile_figure

__all__ = [
    "COMPARISON_SCHEMA_ID",
    "COMPARISON_SCHEMA_VERSION",
    "DISTURBED_FACTOR",
    "FAILING_VERDICTS",
    "INTERLEAVED_THRESHOLD",
    "MIN_RUNS_PER_SIDE",
    "P_ADJUST_METHODS",
    "RUN_PRIOR_DF",
    "Comparison",
    "CompileChange",
    "Entry",
    "EnvDifference",
    "GateOutcome",
    "GeoMeanRatio",
    "PoolingNote",
    "SignificanceTest",
    "Thresholds",
    "TimingResult",
    "Verdict",
    "adjust_for_multiplicity",
    "are_partners",
    "compare",
    "compare_compile",
    "compare_interleaved",
    "compare_measurements",
    "compare_runs",
    "compare_timing",
    "compile_figure",
    "environment_differences",
    "load_side",
    "merge_runs",
    "pooling_notes",
    "run_levels",
    "run_spread_of",
]
