"""The analysis layer: what readers show of a run, computed once from its raw samples.

`measure` records; this package interprets; renderers (terminal, CSV, markdown, HTML,
`compare`, `profile`, asv, the Python API) only format its figures. Figures shown side by
side agree by construction: a speedup is the quotient of the two times shown beside it,
and break-even follows from the same times.
"""

from jitbench.results.analysis.estimates import PROCESS_PRIOR_DF, Estimate, time_ratio
from jitbench.results.analysis.figures import (
    PROCESS_SPLIT_FACTOR,
    WIDE_FACTOR,
    CaseAnalysis,
    GeoMeanSpeedup,
    ModeFigure,
    RunAnalysis,
    Scaling,
    analyse,
    analyse_case,
)
from jitbench.results.analysis.machine import ProcessSpread

__all__ = [
    "PROCESS_PRIOR_DF",
    "PROCESS_SPLIT_FACTOR",
    "WIDE_FACTOR",
    "CaseAnalysis",
    "Estimate",
    "GeoMeanSpeedup",
    "ModeFigure",
    "ProcessSpread",
    "RunAnalysis",
    "Scaling",
    "analyse",
    "analyse_case",
    "time_ratio",
]
