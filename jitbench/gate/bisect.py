"""Which commit changed it? The bisection's decisions and its state, without git or timers.

`jitbench bisect GOOD BAD` walks the first-parent commits after GOOD up to BAD. It first
measures GOOD against BAD (the endpoints) to learn which cases changed and by how much
(`Target`); then each step classifies one midpoint as good or bad:

- by its compiled programs (`program_side`) where every changed case's jit program differs
  between GOOD and BAD: the midpoint's program equal to GOOD's is good, equal to BAD's is
  bad; anything else (a third program, some of each) falls back to timing;
- by timing otherwise (`timing_side`): the midpoint measured against GOOD in the same
  window; its change's interval lies wholly past the halfway point (in log terms) between
  GOOD and BAD, or wholly short of it, or the step is inconclusive.

An inconclusive step measures again with more (its `attempt` grows) up to a cap, and then
stops with the commits it could not tell apart: it never guesses. `bisect` drives the
steps through an evaluator the caller passes (the real one measures revisions: `api`);
`BisectState` records every step as JSON after each one, so an interrupted bisection
resumes where it stopped.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jitbench import formatting as fmt
from jitbench.errors import ConfigError, JitbenchError, ResultsFormatError

STATE_SCHEMA_ID = "jitbench.bisect"
STATE_VERSION = 1
#: The state file's name in the bisection's output folder.
STATE_FILE = ".jitbench-bisect.json"

GOOD = "good"
BAD = "bad"
UNCLEAR = "inconclusive"
SIDES = (GOOD, BAD, UNCLEAR)
#: How a step was decided.
BY_PROGRAM = "program"
BY_TIMING = "timing"


class BisectInconclusive(JitbenchError):
    """The bisection cannot say: GOOD and BAD measure alike for the selection. Exit 4,
    as an inconclusive gate."""

    exit_code = 4


@dataclass(frozen=True, kw_only=True)
class Commit:
    sha: str
    subject: str = ""

    @property
    def short(self) -> str:
        return self.sha[:10]


@dataclass(frozen=True, kw_only=True)
class StepResult:
    """What one measurement of a midpoint says: `side` (good, bad or inconclusive), how
    it was decided (`by`), the evidence as a line, and the seconds it took."""

    side: str
    by: str
    evidence: str
    seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.side not in SIDES:
            raise ValueError(f"a step's side is one of {SIDES}, got {self.side!r}")


@dataclass(frozen=True, kw_only=True)
class Step:
    """One measurement of one commit; `attempt` counts from 1 (an inconclusive one is
    measured again with more)."""

    commit: Commit
    attempt: int
    result: StepResult


@dataclass(frozen=True, kw_only=True)
class Target:
    """One case × mode that changed between GOOD and BAD: the ratio BAD/GOOD with its
    interval, and each endpoint's jit program fingerprint for the case (None: none
    recorded)."""

    workload: str
    size: str
    device: str
    dtype: str
    mode: str
    ratio: float
    low: float | None = None
    high: float | None = None
    good_program: str | None = None
    bad_program: str | None = None

    @property
    def case(self) -> tuple[str, str, str, str]:
        return (self.workload, self.size, self.device, self.dtype)

    @property
    def label(self) -> str:
        return f"{self.workload}[{self.size}] {self.mode}"

    @property
    def program_changed(self) -> bool:
        return bool(self.good_program and self.bad_program) and (
            self.good_program != self.bad_program
        )

    @property
    def change(self) -> str:
        """'+14.8 % [+9.1 %, +21 %]'."""
        return fmt.change_ci(self.ratio, self.low, self.high)


@dataclass(frozen=True, kw_only=True)
class Endpoints:
    """What GOOD against BAD showed: the cases that changed (`targets`), how the midpoints
    will be decided (`by`) and the seconds it took."""

    targets: tuple[Target, ...]
    by: str
    seconds: float = 0.0

    @property
    def by_program(self) -> bool:
        return self.by == BY_PROGRAM


@dataclass(kw_only=True)
class BisectState:
    """A bisection as far as it went: GOOD, BAD, the commits after GOOD up to BAD (first
    parent, oldest first), what selects the cases, the endpoints' finding and each step."""

    good: Commit
    bad: Commit
    commits: tuple[Commit, ...]
    selection: dict[str, Any] = field(default_factory=dict)
    endpoints: Endpoints | None = None
    steps: list[Step] = field(default_factory=list)
    #: the first bad commit that programs found, timed against its parent (`confirm`)
    confirmations: list[Step] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.commits or self.commits[-1].sha != self.bad.sha:
            raise ConfigError(
                f"BAD ({self.bad.short}) is not a first-parent descendant of GOOD "
                f"({self.good.short}); pass an older GOOD, or swap them."
            )

    def matches(self, good: str, bad: str, selection: Mapping[str, Any]) -> bool:
        """Whether this state is of the same bisection (endpoints and case selection)."""
        return (self.good.sha, self.bad.sha) == (good, bad) and self.selection == dict(selection)

    def to_dict(self) -> dict[str, Any]:
        def commit(c: Commit) -> dict[str, str]:
            return {"sha": c.sha, "subject": c.subject}

        return {
            "schema": STATE_SCHEMA_ID,
            "version": STATE_VERSION,
            "good": commit(self.good),
            "bad": commit(self.bad),
            "commits": [commit(c) for c in self.commits],
            "selection": self.selection,
            "endpoints": None
            if self.endpoints is None
            else {
                "by": self.endpoints.by,
                "seconds": self.endpoints.seconds,
                "targets": [vars(t) for t in self.endpoints.targets],
            },
            "steps": [_step_dict(s) for s in self.steps],
            "confirmations": [_step_dict(s) for s in self.confirmations],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BisectState:
        """The state `to_dict` wrote.

        Raises:
            ValueError, KeyError, TypeError: not such a state (`load` says so in one line).
        """
        if data.get("schema") != STATE_SCHEMA_ID or data.get("version") != STATE_VERSION:
            raise ValueError(f"not a {STATE_SCHEMA_ID} state of version {STATE_VERSION}")

        def commit(d: Mapping[str, Any]) -> Commit:
            return Commit(sha=str(d["sha"]), subject=str(d.get("subject", "")))

        ends = data.get("endpoints")
        endpoints = (
            None
            if ends is None
            else Endpoints(
                by=str(ends["by"]),
                seconds=float(ends.get("seconds", 0.0)),
                targets=tuple(Target(**t) for t in ends["targets"]),
            )
        )
        return cls(
            good=commit(data["good"]),
            bad=commit(data["bad"]),
            commits=tuple(commit(c) for c in data["commits"]),
            selection=dict(data.get("selection", {})),
            endpoints=endpoints,
            steps=[_step_of(s) for s in data.get("steps", [])],
            confirmations=[_step_of(s) for s in data.get("confirmations", [])],
        )

    @classmethod
    def load(cls, path: Path) -> BisectState:
        """The state saved at `path`.

        Raises:
            ResultsFormatError: unreadable or not a bisection's state (exit 2), with what
                to do.
        """
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            return cls.from_dict(data)
        except (OSError, ValueError, KeyError, TypeError, ConfigError) as exc:
            raise ResultsFormatError(
                f"the bisection state {str(path)!r} cannot be read ({type(exc).__name__}: "
                f"{exc}); delete it, or pass --restart to start the bisection over."
            ) from None

    def save(self, path: Path) -> None:
        """Write the state atomically (a crash leaves the previous one)."""
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=1) + "\n", encoding="utf-8")
        os.replace(tmp, path)


def _step_dict(step: Step) -> dict[str, Any]:
    return {
        "commit": {"sha": step.commit.sha, "subject": step.commit.subject},
        "attempt": step.attempt,
        **vars(step.result),
    }


def _step_of(d: Mapping[str, Any]) -> Step:
    return Step(
        commit=Commit(sha=str(d["commit"]["sha"]), subject=str(d["commit"].get("subject", ""))),
        attempt=int(d["attempt"]),
        result=StepResult(
            side=str(d["side"]),
            by=str(d["by"]),
            evidence=str(d["evidence"]),
            seconds=float(d.get("seconds", 0.0)),
        ),
    )


def bounds(state: BisectState) -> tuple[int, int]:
    """(lo, hi): indices into `state.commits` of the last commit known good (-1: GOOD
    itself) and the first known bad (the last index: BAD), from the decisive steps."""
    index = {c.sha: i for i, c in enumerate(state.commits)}
    lo, hi = -1, len(state.commits) - 1
    for step in state.steps:
        i = index.get(step.commit.sha)
        if i is None:
            continue
        if step.result.side == GOOD and i > lo:
            lo = i
        elif step.result.side == BAD and i < hi:
            hi = i
    if lo >= hi:
        raise ResultsFormatError(
            "the recorded steps contradict each other (a commit is both after a bad one and "
            "good): the change is not monotone along the history; pass --restart, or bisect "
            "a shorter range."
        )
    return lo, hi


def attempts_at(state: BisectState, sha: str) -> int:
    """How many times `sha` was measured so far."""
    return sum(1 for s in state.steps if s.commit.sha == sha)


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """Where the bisection ended: the first bad commit, or (`inconclusive` says why) the
    commits it could not tell apart; every step taken (resumed ones included)."""

    first_bad: Commit | None
    candidates: tuple[Commit, ...]
    steps: tuple[Step, ...]
    inconclusive: str | None = None
    #: the first bad commit timed against its parent, where programs found it
    confirmation: Step | None = None


def bisect(
    state: BisectState,
    evaluate: Callable[[Commit, int], StepResult],
    *,
    max_attempts: int = 3,
    on_step: Callable[[Step, BisectState], None] | None = None,
) -> Outcome:
    """Bisect from where `state` stands: measure the midpoint of the commits left with
    `evaluate(commit, attempt)`, record the step (then `on_step`, e.g. to save the state),
    narrow, and repeat until one commit is left. An inconclusive step is measured again
    (attempt + 1) up to `max_attempts`; then the bisection stops inconclusive, never
    guessing a side."""
    if max_attempts < 1:
        raise ConfigError(f"--attempts is at least 1, got {max_attempts!r}.")
    while True:
        lo, hi = bounds(state)
        left = state.commits[lo + 1 : hi + 1]
        if hi - lo <= 1:
            return Outcome(first_bad=state.commits[hi], candidates=left, steps=tuple(state.steps))
        mid = state.commits[(lo + hi) // 2]
        attempt = attempts_at(state, mid.sha) + 1
        if attempt > max_attempts:
            return Outcome(
                first_bad=None,
                candidates=left,
                steps=tuple(state.steps),
                inconclusive=(
                    f"{mid.short} stayed inconclusive after {max_attempts} measurements; "
                    f"the first bad commit is one of the {len(left)} from {left[0].short} "
                    f"to {left[-1].short}"
                ),
            )
        step = Step(commit=mid, attempt=attempt, result=evaluate(mid, attempt))
        state.steps.append(step)
        if on_step is not None:
            on_step(step, state)


def confirm(
    outcome: Outcome,
    state: BisectState,
    evaluate: Callable[[Commit, int], StepResult],
    *,
    max_attempts: int = 3,
    on_step: Callable[[Step, BisectState], None] | None = None,
) -> Outcome:
    """Time a first bad commit that programs found against its parent
    (`evaluate(commit, attempt)`, as a timing step: bad means it carries more than half
    the change). A program can change in one commit and the time in another; where the
    commit does not carry the change (good), the outcome turns inconclusive instead of
    naming it. Still inconclusive after `max_attempts`: the commit stays named (its
    programs decided it), the confirmation says it could not tell. Outcomes that no
    program step decided are returned as they are."""
    first = outcome.first_bad
    if first is None or not any(s.result.by == BY_PROGRAM for s in outcome.steps):
        return outcome
    done = [s for s in state.confirmations if s.commit.sha == first.sha]
    while not done or (done[-1].result.side == UNCLEAR and len(done) < max_attempts):
        step = Step(commit=first, attempt=len(done) + 1, result=evaluate(first, len(done) + 1))
        state.confirmations.append(step)
        done.append(step)
        if on_step is not None:
            on_step(step, state)
    last = done[-1]
    if last.result.side == GOOD:
        return Outcome(
            first_bad=None,
            candidates=outcome.candidates,
            steps=outcome.steps,
            confirmation=last,
            inconclusive=(
                f"the programs point at {first.short}, but timed against its parent it does "
                "not carry the change (another commit changed the time); bisect again with "
                "--timing-only"
            ),
        )
    return Outcome(
        first_bad=first, candidates=outcome.candidates, steps=outcome.steps, confirmation=last
    )


# --- progress, for the caller to show (the library never prints) -----------------------


@dataclass(frozen=True)
class BisectStarted:
    state: BisectState
    resumed: int  # steps recorded before this call


@dataclass(frozen=True)
class EndpointsMeasured:
    endpoints: Endpoints


@dataclass(frozen=True)
class Measuring:
    commit: Commit
    attempt: int
    by: str  # "endpoints", BY_PROGRAM, BY_TIMING or "confirm"


@dataclass(frozen=True)
class StepDone:
    step: Step
    left: int  # commits still to tell apart


@dataclass(frozen=True)
class Confirmed:
    step: Step  # the first bad commit timed against its parent (`confirm`)


BisectEvent = BisectStarted | EndpointsMeasured | Measuring | StepDone | Confirmed


# --- the decisions -----------------------------------------------------------------------


def program_side(
    targets: Sequence[Target], programs: Mapping[tuple[str, str, str, str], str | None]
) -> StepResult | None:
    """A midpoint decided by its jit programs (`programs`: case → fingerprint): every
    changed case's program equal to GOOD's is good, every one equal to BAD's bad; None
    where that does not settle it (a third program, some of each, none recorded)."""
    cases = {t.case: t for t in targets}
    said = set()
    for case, t in cases.items():
        fp = programs.get(case)
        if fp and fp == t.good_program:
            said.add(GOOD)
        elif fp and fp == t.bad_program:
            said.add(BAD)
        else:
            return None
    if len(said) != 1:
        return None
    side = said.pop()
    whose = "GOOD's" if side == GOOD else "BAD's"
    names = ", ".join(sorted({f"{w}[{s}]" for (w, s, _d, _t) in cases}))
    return StepResult(side=side, by=BY_PROGRAM, evidence=f"program = {whose} ({names} fingerprint)")


@dataclass(frozen=True)
class Measured:
    """A midpoint's change against GOOD for one target: ratio and its interval."""

    ratio: float
    low: float | None
    high: float | None


def timing_side(targets: Sequence[Target], measured: Mapping[str, Measured]) -> StepResult:
    """A midpoint decided by its timing against GOOD (`measured`: target label → its
    ratio). For each target, the midpoint's change is placed between GOOD (0) and BAD (1)
    in log terms: an interval wholly above one half says bad, wholly below good. The
    targets that decide must agree; none deciding is inconclusive."""
    said: dict[str, list[str]] = {GOOD: [], BAD: [], UNCLEAR: []}
    for t in targets:
        m = measured.get(t.label)
        if m is None or m.low is None or m.high is None or not t.ratio > 0 or t.ratio == 1:
            said[UNCLEAR].append(f"{t.label} not measured")
            continue
        scale = math.log(t.ratio)
        ends = sorted((math.log(m.low) / scale, math.log(m.high) / scale))
        side = BAD if ends[0] > 0.5 else GOOD if ends[1] < 0.5 else UNCLEAR
        said[side].append(
            f"{t.label} {fmt.change_ci(m.ratio, m.low, m.high)} (BAD {fmt.change(t.ratio)})"
        )
    if said[GOOD] and said[BAD]:
        side = UNCLEAR
        lines = [*said[BAD], *said[GOOD]]
        lines.append("the cases disagree")
    elif said[GOOD] or said[BAD]:
        side = GOOD if said[GOOD] else BAD
        lines = said[side] + said[UNCLEAR]
    else:
        side = UNCLEAR
        lines = said[UNCLEAR]
    return StepResult(side=side, by=BY_TIMING, evidence="; ".join(lines))
