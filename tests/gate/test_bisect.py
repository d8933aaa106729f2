"""The bisection's decisions and state with fake step evaluators: no git, no measuring."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from jitbench.errors import ConfigError, ResultsFormatError
from jitbench.gate.bisect import (
    BAD,
    BY_PROGRAM,
    BY_TIMING,
    GOOD,
    UNCLEAR,
    BisectState,
    Commit,
    Endpoints,
    Measured,
    StepResult,
    Target,
    bisect,
    confirm,
    program_side,
    timing_side,
)

COMMITS = tuple(Commit(sha=f"{i:040x}", subject=f"commit {i}") for i in range(1, 16))


def _state(**kwargs) -> BisectState:
    return BisectState(
        good=Commit(sha="0" * 40, subject="good"),
        bad=COMMITS[-1],
        commits=COMMITS,
        selection={"keyword": "selu", "sizes": ["S"]},
        **kwargs,
    )


def _monotone(first_bad: int, calls: list[str] | None = None):
    def evaluate(commit: Commit, attempt: int) -> StepResult:
        if calls is not None:
            calls.append(commit.sha)
        i = COMMITS.index(commit)
        return StepResult(side=BAD if i >= first_bad else GOOD, by=BY_TIMING, evidence="fake")

    return evaluate


@pytest.mark.parametrize("first_bad", range(len(COMMITS)))
def test_a_monotone_change_is_found_in_at_most_log2_steps(first_bad: int) -> None:
    state = _state()
    outcome = bisect(state, _monotone(first_bad))
    assert outcome.first_bad == COMMITS[first_bad]
    assert outcome.inconclusive is None
    assert len(outcome.steps) <= math.ceil(math.log2(len(COMMITS)))


def test_an_inconclusive_step_is_measured_again_with_more_then_decided() -> None:
    seen: list[tuple[str, int]] = []

    def evaluate(commit: Commit, attempt: int) -> StepResult:
        seen.append((commit.sha, attempt))
        if attempt == 1:
            return StepResult(side=UNCLEAR, by=BY_TIMING, evidence="interval spans the middle")
        return _monotone(9)(commit, attempt)

    outcome = bisect(_state(), evaluate)
    assert outcome.first_bad == COMMITS[9]
    # Every commit was measured twice: the first time inconclusive, never a guessed side.
    shas = [s for s, _ in seen]
    assert all(shas.count(s) == 2 for s in shas)
    assert [a for _, a in seen] == [1, 2] * (len(seen) // 2)


def test_a_step_that_stays_inconclusive_stops_with_the_commits_left() -> None:
    def evaluate(commit: Commit, attempt: int) -> StepResult:
        i = COMMITS.index(commit)
        if i < 4:
            return StepResult(side=GOOD, by=BY_TIMING, evidence="fake")
        if i >= 6:
            return StepResult(side=BAD, by=BY_TIMING, evidence="fake")
        return StepResult(side=UNCLEAR, by=BY_TIMING, evidence="noise")

    outcome = bisect(_state(), evaluate, max_attempts=2)
    assert outcome.first_bad is None
    assert outcome.inconclusive is not None and "after 2 measurements" in outcome.inconclusive
    # 6 was bad, 2 good, 4 twice inconclusive: 3 to 6 are left, none chosen.
    assert outcome.candidates == COMMITS[3:7]
    assert sum(1 for s in outcome.steps if s.result.side == UNCLEAR) == 2


def test_an_interrupted_bisection_resumes_from_its_state_file(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    state = _state(
        endpoints=Endpoints(
            by=BY_PROGRAM,
            targets=(
                Target(
                    workload="selu",
                    size="S",
                    device="cpu",
                    dtype="float32",
                    mode="jit",
                    ratio=1.15,
                    low=1.1,
                    high=1.2,
                    good_program="a",
                    bad_program="b",
                ),
            ),
        )
    )
    calls: list[str] = []
    inner = _monotone(11, calls)

    def interrupted(commit: Commit, attempt: int) -> StepResult:
        if len(calls) == 2:
            raise KeyboardInterrupt
        return inner(commit, attempt)

    with pytest.raises(KeyboardInterrupt):
        bisect(state, interrupted, on_step=lambda _step, s: s.save(path))
    assert len(calls) == 2
    resumed = BisectState.load(path)
    assert resumed.endpoints == state.endpoints
    assert resumed.matches(state.good.sha, state.bad.sha, {"keyword": "selu", "sizes": ["S"]})
    assert not resumed.matches(state.good.sha, state.bad.sha, {"keyword": "gelu"})
    more: list[str] = []
    outcome = bisect(resumed, _monotone(11, more))
    assert outcome.first_bad == COMMITS[11]
    assert not set(more) & set(calls)  # the steps done before are not measured again
    assert len(outcome.steps) == len(calls) + len(more) <= 4


@pytest.mark.parametrize(
    "text",
    ["{not json", "[]", json.dumps({"schema": "other"}), json.dumps({"schema": "jitbench.bisect"})],
)
def test_a_corrupt_state_file_is_one_clear_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "state.json"
    path.write_text(text)
    with pytest.raises(ResultsFormatError, match="--restart") as info:
        BisectState.load(path)
    assert info.value.exit_code == 2
    assert "\n" not in str(info.value)


def test_bad_must_follow_good() -> None:
    with pytest.raises(ConfigError, match="not a first-parent descendant"):
        BisectState(good=COMMITS[0], bad=COMMITS[0], commits=())


def _target(**kwargs) -> Target:
    fields = {"workload": "selu", "size": "S", "device": "cpu", "dtype": "float32"}
    return Target(**{**fields, "mode": "jit", "ratio": 1.15, **kwargs})


def test_the_program_settles_a_step_only_when_it_is_one_endpoints() -> None:
    t = _target(good_program="g", bad_program="b")
    case = t.case
    assert program_side([t], {case: "g"}).side == GOOD  # type: ignore[union-attr]
    bad = program_side([t], {case: "b"})
    assert bad is not None and bad.side == BAD and "BAD's" in bad.evidence
    assert program_side([t], {case: "third"}) is None  # timing decides
    assert program_side([t], {}) is None
    other = _target(workload="gelu", good_program="g2", bad_program="b2")
    assert program_side([t, other], {case: "g", other.case: "b2"}) is None  # some of each


@pytest.mark.parametrize(
    ("measured", "side"),
    [
        (Measured(1.15, 1.12, 1.18), BAD),
        (Measured(1.0, 0.98, 1.02), GOOD),
        (Measured(1.07, 1.0, 1.14), UNCLEAR),  # the interval spans the halfway point
    ],
)
def test_timing_places_the_midpoint_between_good_and_bad(measured: Measured, side: str) -> None:
    result = timing_side([_target()], {"selu[S] jit": measured})
    assert result.side == side
    assert result.by == BY_TIMING
    assert "selu[S] jit" in result.evidence


def test_timing_of_an_improvement_is_placed_the_same_way() -> None:
    t = _target(ratio=0.8)
    assert timing_side([t], {t.label: Measured(0.81, 0.78, 0.83)}).side == BAD
    assert timing_side([t], {t.label: Measured(1.0, 0.97, 1.03)}).side == GOOD


def test_targets_that_disagree_are_inconclusive() -> None:
    a, b = _target(), _target(mode="numpy")
    result = timing_side([a, b], {a.label: Measured(1.15, 1.12, 1.18), b.label: Measured(1, 1, 1)})
    assert result.side == UNCLEAR and "disagree" in result.evidence
    assert timing_side([a], {}).side == UNCLEAR


def _by_program(first_bad: int):
    def evaluate(commit: Commit, attempt: int) -> StepResult:
        side = BAD if COMMITS.index(commit) >= first_bad else GOOD
        return StepResult(side=side, by=BY_PROGRAM, evidence="program")

    return evaluate


def _timed(*sides: str, calls: list[int] | None = None):
    def evaluate(commit: Commit, attempt: int) -> StepResult:
        if calls is not None:
            calls.append(attempt)
        return StepResult(side=sides[min(attempt, len(sides)) - 1], by=BY_TIMING, evidence="t")

    return evaluate


def test_a_commit_programs_found_is_named_once_timing_against_its_parent_agrees() -> None:
    state = _state()
    found = bisect(state, _by_program(6))
    calls: list[int] = []
    outcome = confirm(found, state, _timed(UNCLEAR, BAD, calls=calls))
    assert outcome.first_bad == COMMITS[6] and outcome.inconclusive is None
    assert calls == [1, 2]  # inconclusive once: measured again with more
    assert outcome.confirmation is not None and outcome.confirmation.result.side == BAD
    # Recorded: a resumed bisection does not measure it again.
    again = BisectState.from_dict(json.loads(json.dumps(state.to_dict())))
    more: list[int] = []
    assert confirm(bisect(again, _by_program(6)), again, _timed(BAD, calls=more)).first_bad
    assert more == []


def test_a_commit_that_does_not_carry_the_change_is_not_named() -> None:
    state = _state()
    outcome = confirm(bisect(state, _by_program(6)), state, _timed(GOOD))
    assert outcome.first_bad is None
    assert outcome.inconclusive is not None and "--timing-only" in outcome.inconclusive


def test_a_confirmation_that_stays_inconclusive_leaves_the_programs_answer() -> None:
    state = _state()
    outcome = confirm(bisect(state, _by_program(6)), state, _timed(UNCLEAR), max_attempts=2)
    assert outcome.first_bad == COMMITS[6]
    assert len(state.confirmations) == 2
    assert outcome.confirmation is not None and outcome.confirmation.result.side == UNCLEAR


def test_a_bisection_timing_decided_needs_no_confirmation() -> None:
    state = _state()
    found = bisect(state, _monotone(6))
    calls: list[int] = []
    assert confirm(found, state, _timed(GOOD, calls=calls)) == found
    assert calls == []
