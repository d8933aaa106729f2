"""Figure builders return plain plotly.js dicts; the tests read them through plotly.py,
which validates every property (a misspelled one fails) and gives attribute access."""

from __future__ import annotations

import json

import plotly.graph_objects as go

from jitbench.report import pages
from jitbench.report.figures import Figure


def checked(fig: Figure | None) -> go.Figure:
    """`fig` as the page embeds it (its JSON), validated by plotly.py's `go.Figure`."""
    assert fig is not None, "the builder returned no figure"
    return go.Figure(json.loads(pages.figure_json(fig)))
