"""No string a run file brings (ids, labels, commits, environment, names, notes) can make
a link, an image or raw HTML in any markdown jitbench writes, or break its tables or
code spans: a pull-request comment is built from CI artifacts anyone can shape."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from markdown_it import MarkdownIt

from jitbench.formatting import md_code, md_escape
from jitbench.gate import compare
from jitbench.gate.bisect import BY_TIMING, GOOD, BisectState, Commit, Outcome, Step, StepResult
from jitbench.render import bisect as bisect_render
from jitbench.render.comparison import comparison_markdown
from jitbench.render.run_markdown import run_markdown
from jitbench.results import Mode
from tests.gate.builders import ENV, make_run, meas, spread

HOSTILE = [
    "b`![p](http://evil.example/b.png)`x",
    '<img src="http://evil.example/i.png">',
    "[click](javascript:alert(1))",
    "www.evil.example and me@evil.example",
    "a|b|c",
    "line\nbreak | x",
    "<!-- -->",
    "```",
    "x\u202eevil\u2066 \x1b[2J",
    "&lt;img&gt; &#60;b&#62;",
    "$\\sqrt{x}$ **bold** _it_ ~~s~~",
]

_MD = MarkdownIt("commonmark").enable("table")
#: What GitHub links by itself, once escapes and code spans are taken out.
_AUTOLINK = re.compile(r"(?i)(https?|ftp|mailto|xmpp|javascript|data):|www\.|(?<!\\)@")


def _check(markdown: str) -> None:
    tokens = _MD.parse(markdown)
    every = [*tokens, *(c for t in tokens for c in t.children or ())]
    own = re.compile(r"(<details><summary>All \d+ comparisons</summary>|</details>)\n?")
    live = [
        (t.type, t.content)
        for t in every
        if t.type in ("html_inline", "html_block", "link_open", "image", "fence")
        and not (t.type == "html_block" and own.fullmatch(t.content))
    ]
    assert not live, live
    rendered = _MD.render(markdown)
    assert "<a " not in rendered and "<img" not in rendered
    outside_code = re.sub(r"`[^`\n]*`", "", markdown)
    assert _AUTOLINK.search(outside_code) is None, _AUTOLINK.search(outside_code)
    assert "\x1b" not in markdown and "\u202e" not in markdown
    rows, cells = [], 0  # each table keeps its columns: a pipe or newline adds no cell
    for t in tokens:
        if t.type == "tr_open":
            cells = 0
        elif t.type in ("td_open", "th_open"):
            cells += 1
        elif t.type == "tr_close":
            rows.append(cells)
        elif t.type == "table_close":
            assert len(set(rows)) == 1, rows
            rows = []


@pytest.mark.parametrize("text", HOSTILE)
def test_escaped_text_and_code_spans_stay_text(text: str) -> None:
    for cell in (md_escape(text), md_code(text)):
        _check(f"| a | b |\n| --- | --- |\n| {cell} | x |\n\nsay {cell} here\n")


def _hostile_runs(text: str):
    env = {
        **ENV,
        "host": text,
        "versions": {"jax": text, "numpy": "2.0"},
        "git": {"commit": text, "dirty": False},
    }
    other = {**env, "versions": {"jax": "0.1", "numpy": text}, "host": "other"}
    ms = (
        meas("w", Mode.NUMPY, samples=spread(1e-3, 20), compile_s=None),
        meas("w", samples=spread(1e-3, 20), compile_s=0.1),
        meas("gone", samples=spread(1e-3, 20)),
    )
    base = make_run(*ms, run_id=text, env=env, config={"label": text})
    new = make_run(
        meas("w", Mode.NUMPY, samples=spread(2e-3, 20)),
        meas("w", samples=spread(3e-3, 20), compile_s=0.5),
        run_id=text + "2",
        env=other,
        config={"label": text},
    )
    new = replace(
        new,
        measurements=tuple(replace(m, case=replace(m.case, size=text)) for m in new.measurements),
    )
    return base, new


@pytest.mark.parametrize("text", HOSTILE)
def test_no_markdown_output_takes_a_hostile_string_live(text: str) -> None:
    base, new = _hostile_runs(text)
    _check(comparison_markdown(compare(base, new), title=text, program_diffs={"k": text}))
    _check(comparison_markdown(compare(base, base)))
    _check(run_markdown(new))
    commit = Commit(sha="b" * 40, subject=text)
    step = Step(
        commit=commit,
        attempt=1,
        result=StepResult(side=GOOD, by=BY_TIMING, evidence=text, seconds=1),
    )
    state = BisectState(
        good=Commit(sha="0" * 40, subject=text), bad=commit, commits=(commit,), steps=[step]
    )
    for outcome in (
        Outcome(first_bad=commit, candidates=(commit,), steps=(step,)),
        Outcome(first_bad=None, candidates=(commit,), steps=(step,), inconclusive=text),
    ):
        _check(bisect_render.outcome_markdown(outcome, state, seconds=1.0, resumed=0))
