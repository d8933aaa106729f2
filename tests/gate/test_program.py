"""The compiled program's verdict in every comparison: deterministic, and explained."""

from __future__ import annotations

from dataclasses import replace

import pytest

from jitbench.errors import ConfigError
from jitbench.gate import Thresholds, compare
from jitbench.gate.diffs import entry_program_key, program_diffs
from jitbench.gate.program import program_change_of, program_diff
from jitbench.results import CompileInfo, Mode, run_programs
from tests.gate.builders import make_run, meas, spread, with_program_text

OPS = {"add": 1, "exponential": 1, "fusion": 1, "multiply": 2, "parameter": 2}


def program(fingerprint: str = "aaaa", **changes: object) -> CompileInfo:
    base = CompileInfo(
        trace_s=0.01,
        lower_s=0.01,
        compile_s=0.01,
        first_call_s=0.05,
        program_fingerprint=fingerprint,
        hlo_opcodes=OPS,
        bytes_accessed=8000.0,
        flops=3000.0,
        memory={"temp_bytes": 0, "peak_bytes": 8000},
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def jit(samples: tuple[float, ...], compile_info: CompileInfo):
    return replace(meas(samples=samples), compile=compile_info)


def test_the_same_program_is_unchanged_whatever_the_timing() -> None:
    a, b = jit(spread(1e-3, 20), program()), jit(spread(2e-3, 20), program())
    change = program_change_of(a, b)
    assert change is not None and not change.changed and change.text == "program unchanged"


def test_a_changed_program_names_what_moved_and_regresses_past_the_tolerances() -> None:
    defeated = program(
        "bbbb",
        hlo_opcodes={**OPS, "fusion": 3, "copy": 1},
        bytes_accessed=10_480.0,
        memory={"temp_bytes": 4 * 2**20, "peak_bytes": 8000},
    )
    change = program_change_of(jit(spread(1e-3, 20), program()), jit(spread(1e-3, 20), defeated))
    assert change is not None and change.changed and change.regressed
    assert change.moved[:2] == ("+2 fusion", "+1 copy")
    assert "bytes accessed +31 %" in change.moved and "temp memory +4 MiB" in change.moved
    renamed = program_change_of(
        jit((1e-3,), program()), jit((1e-3,), program(timed_compile_count=0))
    )
    assert renamed is not None and not renamed.changed
    recompiling = program_change_of(
        jit((1e-3,), program()), jit((1e-3,), program(timed_compile_count=3))
    )
    assert recompiling is not None and recompiling.regressed
    assert recompiling.moved == ("3 new recompiles",)


def test_files_without_programs_give_no_program_verdict() -> None:
    old = replace(program(), program_fingerprint=None)
    assert program_change_of(jit((1e-3,), old), jit((1e-3,), program())) is None


def test_the_comparison_explains_timing_with_the_program_and_gates_on_request() -> None:
    base = make_run(jit(spread(1e-3, 30), program()))
    slower_same = make_run(jit(spread(2e-3, 30), program()))
    [e] = [e for e in compare(base, slower_same).entries if e.mode is Mode.JIT]
    assert e.program is not None and not e.program.changed
    assert "program is unchanged: look at the environment" in e.note
    changed = make_run(jit(spread(1e-3, 30), program("cccc", bytes_accessed=9000.0)))
    passing = compare(base, changed)
    [e] = [e for e in passing.entries if e.mode is Mode.JIT]
    assert "program changed: bytes accessed +12 %, with no timing change" in e.note
    assert not passing.has_regression  # reported, not gating, by default
    gated = compare(base, changed, thresholds=Thresholds(program_gates=True))
    assert gated.has_regression
    assert gated.to_dict()["entries"][0]["program"]["regressed"] is True


def test_program_tolerances_are_validated() -> None:
    with pytest.raises(ConfigError, match="program_tolerance"):
        Thresholds(program_tolerance=-1)


def test_a_diff_of_programs_shows_real_changes_not_renames() -> None:
    """The stored text is `program_text`: a renamed function with a moved line diffs to
    nothing; a float16 round trip shows its converts."""
    import jax
    import jax.numpy as jnp

    from jitbench.measure import compilation as jcompile

    def selu(x, alpha=1.67, lmbda=1.05):  # type: ignore[no-untyped-def]
        return lmbda * jnp.where(x > 0, x, alpha * jnp.exp(x) - alpha)

    def renamed(y, alpha=1.67, lmbda=1.05):  # type: ignore[no-untyped-def]
        # the same program under other names
        return lmbda * jnp.where(y > 0, y, alpha * jnp.exp(y) - alpha)

    def narrowed(x, alpha=1.67, lmbda=1.05):  # type: ignore[no-untyped-def]
        h = x.astype(jnp.float16)
        return (lmbda * jnp.where(h > 0, h, alpha * jnp.exp(h) - alpha)).astype(jnp.float32)

    x = jnp.ones(16)
    texts = [
        jcompile.program_text(jax.jit(f).trace(x).lower().compile().as_text())
        for f in (selu, renamed, narrowed)
    ]
    assert program_diff(texts[0], texts[1]) == ""
    diff = program_diff(texts[0], texts[2], base_label="base selu", new_label="new selu")
    assert diff.startswith("--- jitbench program base selu\n+++ jitbench program new selu\n")
    assert any(line.startswith("+") and "convert(" in line for line in diff.splitlines())
    # What a run keeps is what the fingerprint hashes.
    assert jcompile.fingerprint_of_program_text(texts[0]) == jcompile.program_fingerprint(
        jax.jit(selu).trace(x).lower().compile().as_text()
    )


def test_program_diffs_are_for_changed_programs_with_both_texts() -> None:
    text = "HloModule m\n\nENTRY %v0 {\n  ROOT %v1 = f32[] add(%v2, %v3)\n}\n"
    other = text.replace("add", "multiply")
    base = with_program_text(make_run(jit(spread(1e-3, 30), program())), text)
    new = with_program_text(make_run(jit(spread(1e-3, 30), program("cccc"))), other)
    cmp = compare(base, new)
    [e] = [e for e in cmp.entries if e.mode is Mode.JIT]
    key = entry_program_key(e)
    assert key == "w|S|cpu:0|float32|jit"
    diffs = program_diffs(cmp, run_programs(base), run_programs(new))
    assert list(diffs) == [key] and "-  ROOT %v1 = f32[] add" in diffs[key]
    assert "+  ROOT %v1 = f32[] multiply" in diffs[key]
    assert program_diffs(cmp, run_programs(base), {}) == {}  # the new side kept none
    same = compare(base, with_program_text(make_run(jit(spread(1e-3, 30), program())), text))
    assert program_diffs(same, run_programs(base), run_programs(base)) == {}


def test_pooled_processes_keep_the_first_processes_program_text() -> None:
    """Workers' runs come back as JSON, without texts: the pooled run keeps the first
    process's, whichever process's compile figure is the median."""
    from jitbench.results.merge import pool_runs

    first = with_program_text(make_run(jit(spread(1e-3, 10), program(compile_s=0.5))), "p")
    workers = [make_run(jit(spread(1e-3, 10), program(compile_s=s))) for s in (0.02, 0.03)]
    pooled = pool_runs([first, *workers])
    assert run_programs(pooled) == {"w|S|cpu:0|float32|jit": "p"}


def test_a_diffs_preview_sends_no_terminal_control() -> None:
    from jitbench.render.comparison import program_diff_lines

    text = "HloModule m\n  %v0 = f32[] add()\n"
    base = with_program_text(make_run(jit(spread(1e-3, 30), program())), text)
    new = with_program_text(
        make_run(jit(spread(1e-3, 30), program("cccc"))), text + "  \x1b[2J evil\n"
    )
    cmp = compare(base, new)
    diffs = program_diffs(cmp, run_programs(base), run_programs(new))
    lines = program_diff_lines(cmp, {k: "d.diff" for k in diffs}, diffs=diffs, preview=20)
    assert lines[0] == "program diff of w S cpu:0 float32 jit: d.diff"
    assert not any("\x1b" in line for line in lines)
    assert any("\\x1b[2J evil" in line for line in lines)
