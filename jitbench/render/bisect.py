"""What `jitbench bisect` prints: one line a step, the endpoints' finding, the outcome; and
its JSON and markdown forms. Plain text (rich markup escaped by the caller)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from jitbench import formatting as fmt
from jitbench.formatting import md_code, md_escape
from jitbench.gate.bisect import BY_PROGRAM, BisectState, Commit, Endpoints, Outcome, Step

SUBJECT_WIDTH = 40


def _subject(commit: Commit) -> str:
    s = commit.subject
    return s if len(s) <= SUBJECT_WIDTH else s[: SUBJECT_WIDTH - 1] + "…"


def start_line(state: BisectState) -> str:
    return (
        f"bisecting {len(state.commits)} commit(s) after GOOD {state.good.short} "
        f"({_subject(state.good)}) up to BAD {state.bad.short} ({_subject(state.bad)})"
    )


def endpoints_lines(endpoints: Endpoints) -> list[str]:
    lines = [f"changed from GOOD to BAD: {t.label} {t.change}" for t in endpoints.targets]
    if endpoints.by_program:
        lines.append(
            "their jit programs differ: a midpoint's program settles its step where it is "
            "GOOD's or BAD's; timing decides otherwise"
        )
    else:
        lines.append("each step is decided by timing against GOOD, in the same window")
    return lines


def step_line(number: int, step: Step) -> str:
    """'step 2  3f2a1b2c3d  slow selu  bad  program = BAD's (selu[S] fingerprint)  11.2 s'."""
    again = f" (attempt {step.attempt})" if step.attempt > 1 else ""
    r = step.result
    return (
        f"step {number}  {step.commit.short}  {_subject(step.commit):<{SUBJECT_WIDTH}}  "
        f"{r.side:<12}  {r.evidence}{again}  {fmt.seconds(r.seconds, digits=2)}"
    )


def confirm_line(step: Step) -> str:
    """'confirm  158cfa21a0  selu does more work  bad  against its parent …  14 s'."""
    again = f" (attempt {step.attempt})" if step.attempt > 1 else ""
    r = step.result
    verdict = {"bad": "confirmed", "good": "NOT confirmed"}.get(r.side, r.side)
    return (
        f"confirm {step.commit.short}  {_subject(step.commit):<{SUBJECT_WIDTH}}  "
        f"{verdict:<13} {r.evidence}{again}  {fmt.seconds(r.seconds, digits=2)}"
    )


def outcome_lines(
    outcome: Outcome, endpoints: Endpoints | None, *, seconds: float, resumed: int
) -> list[str]:
    lines = []
    if outcome.first_bad is not None:
        lines.append(f"first bad commit: {outcome.first_bad.sha} {outcome.first_bad.subject}")
    else:
        lines.append(
            "no first bad commit: "
            + (outcome.inconclusive or "inconclusive")
            + ": "
            + ", ".join(c.short for c in outcome.candidates)
        )
    if outcome.confirmation is not None:
        r = outcome.confirmation.result
        said = {"bad": "it carries the change", "good": "it does NOT carry the change"}
        verdict = said.get(r.side, "whether it carries the change is inconclusive")
        lines.append(f"{verdict}, timed {r.evidence}")
    if endpoints is not None:
        lines += [f"change (GOOD → BAD): {t.label} {t.change}" for t in endpoints.targets]
    by = sum(1 for s in outcome.steps if s.result.by == BY_PROGRAM)
    tail = f", {resumed} of them recorded before (resumed)" if resumed else ""
    confirming = " and the confirmation" if outcome.confirmation is not None else ""
    lines.append(
        f"{len(outcome.steps)} step(s) ({by} by program, {len(outcome.steps) - by} by timing) "
        f"after GOOD against BAD{confirming}{tail}; {fmt.seconds(seconds, digits=3)} this "
        "bisection"
    )
    return lines


def outcome_dict(
    outcome: Outcome, state: BisectState, *, seconds: float, resumed: int
) -> dict[str, Any]:
    first = outcome.first_bad
    confirmation = outcome.confirmation
    return {
        "first_bad": None if first is None else {"sha": first.sha, "subject": first.subject},
        "confirmation": None if confirmation is None else vars(confirmation.result),
        "inconclusive": outcome.inconclusive,
        "candidates": [c.sha for c in outcome.candidates],
        "steps_taken": len(outcome.steps),
        "resumed_steps": resumed,
        "seconds": seconds,
        "state": state.to_dict(),
    }


def outcome_json(outcome: Outcome, state: BisectState, *, seconds: float, resumed: int) -> str:
    return json.dumps(outcome_dict(outcome, state, seconds=seconds, resumed=resumed), indent=1)


def outcome_markdown(outcome: Outcome, state: BisectState, *, seconds: float, resumed: int) -> str:
    head = (
        f"## First bad commit: {md_code(outcome.first_bad.short)} "
        f"{md_escape(outcome.first_bad.subject)}"
        if outcome.first_bad is not None
        else f"## Bisection inconclusive: {md_escape(outcome.inconclusive or '')}"
    )
    rows = _rows(outcome.steps)
    lines = [head, ""]
    if state.endpoints is not None:
        lines += [
            f"- {md_escape(t.label)}: {md_escape(t.change)} from GOOD to BAD"
            for t in state.endpoints.targets
        ]
        lines.append("")
    lines += ["| step | commit | subject | verdict | evidence |", "| --- | --- | --- | --- | --- |"]
    lines += rows
    lines += ["", md_escape(outcome_lines(outcome, None, seconds=seconds, resumed=resumed)[-1])]
    return "\n".join(lines) + "\n"


def _rows(steps: Sequence[Step]) -> list[str]:
    return [
        f"| {i} | {md_code(s.commit.short)} | {md_escape(s.commit.subject)} | "
        f"{md_escape(s.result.side)} | "
        f"{md_escape(s.result.evidence)} |"
        for i, s in enumerate(steps, 1)
    ]
