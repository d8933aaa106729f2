"""The HLO normalisation (`compilation.program_text` and the fingerprints): the output
pinned for small programs (`programs/`, as it was before the rewrite that made it linear),
and the work it does bounded by the text's size. No compile: the texts are on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jitbench.measure import compilation as jcompile

PROGRAMS = Path(__file__).parent / "programs"
EXPECTED = json.loads((PROGRAMS / "expected.json").read_text())

#: `program_text` of `programs/tricky.hlo`, as it was made before the rewrite: every token
#: that is a name is renamed wherever it stands (an opcode named like an instruction too).
TRICKY = """\
HloModule m, is_scheduled=true, entry_computation_layout={(f32[4]{0})->(f32[4]{0}, f32[])}


%v0 (%v1: f32[], %v2: f32[]) -> f32[] {
  %v1 = f32[] parameter(0)
  %v2 = f32[] parameter(1)
  ROOT %v3 = f32[] %v1(%v1, %v2)
}

%v4 (%v5: f32[4]) -> f32[4] {
  %v5 = f32[4]{0} parameter(0)
  %v6 = f32[] constant(2)
  %v7 = f32[4]{0} %v7(%v6), dimensions={}
  ROOT %v8 = f32[4]{0} multiply(%v5, %v7)
}

ENTRY %v9 (%v10: f32[4]) -> (f32[4], f32[]) {
  %v10 = f32[4]{0} parameter(0)
  %v11 = f32[4]{0} %v11(%v10), kind=kLoop, calls=%v4
  %v12 = f32[] constant(0)
  %v13 = f32[] reduce(%v10, %v12), dimensions={0}, to_apply=%v0
  %v14 = f32[] custom-call(%v13), custom_call_target="a%%v14", backend_config={%v1=1}
  %v15 = (f32[4]{0}, f32[]) tuple(%v11, %v14)
  ROOT %v16 = (f32[4]{0}, f32[]) copy(%v15)
}"""


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_normalised_program_is_as_pinned(name: str) -> None:
    text = (PROGRAMS / f"{name}.hlo").read_text()
    expected = EXPECTED[name]
    normalised = jcompile.program_text(text)
    assert len(normalised) == expected["program_text_chars"]
    assert jcompile.fingerprint_of_program_text(normalised) == expected["program_fingerprint"]
    assert jcompile.program_fingerprint(text) == expected["program_fingerprint"]
    assert jcompile.hlo_fingerprint(text) == expected["hlo_fingerprint"]
    assert jcompile.while_loop_count(text) == expected["while_loop_count"]
    assert jcompile.opcode_counts(text) == expected["opcodes"]


def test_the_tricky_programs_text_is_as_pinned() -> None:
    assert jcompile.program_text((PROGRAMS / "tricky.hlo").read_text()) == TRICKY


def _chain(lines: int) -> str:
    """A synthetic HLO text of `lines` instructions, each with a new name (as an unrolled
    loop's program has), with metadata to drop."""
    body = "\n".join(
        f'  %add.{i} = f32[] add(%add.{i - 1}, %p.{i}), metadata={{op_name="jit(f)/add"}}'
        for i in range(1, lines)
    )
    head = "HloModule jit_f\n\nENTRY %main (add.0: f32[]) -> f32[] {\n  %add.0 = f32[] parameter(0)"
    return f"{head}\n{body}\n}}\n"


def test_a_program_of_20k_names_is_renamed_without_a_pattern_of_its_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The renaming builds no regular expression from the program: one of every name, as
    it was, tried each name at every character (8.7 s for 5,000 of these lines on a busy
    2-core VM, growing as the square; minutes for these 20,000)."""
    import re

    compiled: list[str] = []
    real = re._compile  # type: ignore[attr-defined]

    def spy(pattern, flags):  # type: ignore[no-untyped-def]
        compiled.append(str(pattern)[:80])
        return real(pattern, flags)

    text = _chain(20_000)
    monkeypatch.setattr(re, "_compile", spy)
    texts = jcompile.program_texts(text)
    monkeypatch.undo()
    assert compiled == []  # the module's own patterns, compiled at import, are all it uses
    lines = texts.program_text.splitlines()
    assert lines[0] == "HloModule m" and lines[2] == "ENTRY %v0 (%v1: f32[]) -> f32[] {"
    assert lines[-2] == "  %v39998 = f32[] add(%v39996, %v39999)"  # add.19999, p.19999
    assert texts.opcodes == {"add": 19_999, "parameter": 1}
    assert texts.program_fingerprint == jcompile.program_fingerprint(text)


def test_metadata_is_dropped_as_the_pattern_of_a_character_at_a_time_dropped_it() -> None:
    """The metadata pattern takes runs of plain characters whole (faster); on random
    lines of the characters that matter it drops what the old pattern dropped."""
    import random
    import re

    old = re.compile(r',\s*metadata=\{(?:[^{}"]|"(?:[^"\\]|\\.)*")*\}')
    pieces = [", metadata={", ",metadata={", "{", "}", '"', "\\", "a", " ", ", ", "x=1"]
    rng = random.Random(5)
    for _ in range(3000):
        line = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 14)))
        assert jcompile._METADATA_RE.sub("", line) == old.sub("", line), line
