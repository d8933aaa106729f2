"""What `jitbench bisect` prints and writes, from a made-up state (nothing measured)."""

from __future__ import annotations

import json

from jitbench.gate.bisect import (
    BY_PROGRAM,
    BY_TIMING,
    GOOD,
    BisectState,
    Commit,
    Endpoints,
    Outcome,
    Step,
    StepResult,
    Target,
)
from jitbench.render import bisect as render

COMMITS = (Commit(sha="a" * 40, subject="notes"), Commit(sha="b" * 40, subject="selu | slower"))
TARGET = Target(
    workload="selu", size="S", device="cpu", dtype="float32", mode="jit",
    ratio=1.148, low=1.09, high=1.21, good_program="g", bad_program="b",
)  # fmt: skip


def _state() -> BisectState:
    return BisectState(
        good=Commit(sha="0" * 40, subject="good"),
        bad=COMMITS[-1],
        commits=COMMITS,
        endpoints=Endpoints(targets=(TARGET,), by=BY_PROGRAM),
        steps=[
            Step(
                commit=COMMITS[0],
                attempt=2,
                result=StepResult(side=GOOD, by=BY_TIMING, evidence="selu[S] jit +1 %", seconds=3),
            )
        ],
    )


def test_each_step_is_one_line_with_its_evidence() -> None:
    line = render.step_line(1, _state().steps[0])
    assert line.startswith("step 1  aaaaaaaaaa  notes")
    assert "good" in line and "selu[S] jit +1 %" in line and "(attempt 2)" in line
    assert "\n" not in line


def test_the_outcome_names_the_commit_the_change_and_the_steps() -> None:
    state = _state()
    outcome = Outcome(first_bad=COMMITS[1], candidates=COMMITS[1:], steps=tuple(state.steps))
    lines = render.outcome_lines(outcome, state.endpoints, seconds=12.5, resumed=1)
    assert lines[0] == f"first bad commit: {'b' * 40} selu | slower"
    assert lines[1] == "change (GOOD → BAD): selu[S] jit +14.8 % [+9.0 %, +21.0 %]"
    assert "1 step(s) (0 by program, 1 by timing)" in lines[2] and "resumed" in lines[2]
    data = json.loads(render.outcome_json(outcome, state, seconds=12.5, resumed=1))
    assert data["first_bad"]["sha"] == "b" * 40
    assert BisectState.from_dict(data["state"]).steps == state.steps
    md = render.outcome_markdown(outcome, state, seconds=12.5, resumed=1)
    assert md.startswith("## First bad commit: `bbbbbbbbbb` selu \\| slower")


def test_an_inconclusive_outcome_lists_the_commits_left() -> None:
    state = _state()
    outcome = Outcome(
        first_bad=None, candidates=COMMITS, steps=(), inconclusive="aaaaaaaaaa stayed inconclusive"
    )
    lines = render.outcome_lines(outcome, None, seconds=1.0, resumed=0)
    assert lines[0] == "no first bad commit: aaaaaaaaaa stayed inconclusive: aaaaaaaaaa, bbbbbbbbbb"
    assert render.outcome_markdown(outcome, state, seconds=1, resumed=0).startswith(
        "## Bisection inconclusive"
    )
