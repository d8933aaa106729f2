"""The compiled program's verdict in every comparison: deterministic, and explained."""

from __future__ import annotations

from dataclasses import replace

import pytest

from jitbench.errors import ConfigError
from jitbench.gate import Thresholds, compare
from jitbench.gate.program import program_change_of
from jitbench.results import CompileInfo, Mode
from tests.gate.builders import make_run, meas, spread

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
