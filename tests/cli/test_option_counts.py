"""The command line stays one a maintainer can hold in mind (issue 53): `run` and
`compare` keep under their ceilings of options, hidden ones counted, as
`tools/option_counts.py` counts them from the real Typer app."""

from __future__ import annotations

import pytest

from tools.option_counts import command_surfaces

#: Options (not arguments) per command, at most; hidden options count as much as shown ones.
CEILINGS = {"run": 25, "compare": 15}


@pytest.mark.parametrize(("command", "ceiling"), CEILINGS.items())
def test_a_command_keeps_under_its_ceiling_of_options(command: str, ceiling: int) -> None:
    surface = next(s for s in command_surfaces() if s.name == command)
    assert len(surface.options) <= ceiling, surface.options


def test_every_command_is_counted_and_none_hides_an_option() -> None:
    surfaces = {s.name: s for s in command_surfaces()}
    assert {"run", "compare", "ab", "bisect", "report"} <= set(surfaces)
    assert all(not s.hidden for s in surfaces.values()), {n: s.hidden for n, s in surfaces.items()}
    assert "NAMES" in surfaces["run"].arguments and "--x64" in surfaces["run"].options
