"""The compiled program's verdict: did the code XLA runs change between base and new?

A jit program is deterministic where its timing is not: the same code compiles to the
same optimised HLO on any load. `program_change_of` compares two measurements' programs
by their fingerprint modulo names and metadata (`CompileInfo.program_fingerprint`) and
says which of its metrics moved (instructions by opcode, XLA's flops and bytes, the
memory analysis, compiles during timing). A change beyond the tolerances is a program
regression, which fails the gate with `--fail-on program`.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from jitbench import formatting as fmt
from jitbench.results import CompileInfo, Measurement, Mode

#: Memory-analysis figures judged, and how each is named.
_MEMORY = (("temp_bytes", "temp memory"), ("peak_bytes", "peak memory"))


@dataclass(frozen=True, kw_only=True)
class ProgramChange:
    """One case's compiled program, base vs new.

    `changed`: the fingerprints differ, or the new side recompiled during timing where
    the base did not. `moved`: what moved, as people read it ('+2 fusion', 'bytes
    accessed +31 %', 'temp memory +4 MiB', '1 new recompile'). `regressed`: a move past
    the tolerances (more bytes accessed or flops, more memory, new recompiles, more
    fusions: kernels)."""

    changed: bool
    moved: tuple[str, ...] = ()
    regressed: bool = False

    @property
    def text(self) -> str:
        if not self.changed:
            return "program unchanged"
        return "program changed" + (f": {', '.join(self.moved)}" if self.moved else "")


def _ratio_moves(base: CompileInfo, new: CompileInfo, tolerance: float) -> tuple[list[str], bool]:
    moved, worse = [], False
    for name, a, b in (
        ("bytes accessed", base.bytes_accessed, new.bytes_accessed),
        ("flops", base.flops, new.flops),
    ):
        if a is None or b is None or a == b:
            continue
        change = (b - a) / a if a > 0 else float("inf")
        moved.append(f"{name} {change:+.0%}".replace("%", " %") if a > 0 else f"{name} new")
        worse = worse or change > tolerance
    return moved, worse


def _memory_moves(
    base: Mapping[str, int] | None, new: Mapping[str, int] | None, tolerance: float
) -> tuple[list[str], bool]:
    moved, worse = [], False
    for key, name in _MEMORY:
        a, b = (base or {}).get(key), (new or {}).get(key)
        if a is None or b is None or a == b:
            continue
        sign = "+" if b > a else "−"
        moved.append(f"{name} {sign}{fmt.bytes_(abs(b - a))}")
        worse = worse or (b > a * (1 + tolerance))
    return moved, worse


def _opcode_moves(base: Mapping[str, int], new: Mapping[str, int]) -> tuple[list[str], bool]:
    deltas = {op: new.get(op, 0) - base.get(op, 0) for op in set(base) | set(new)}
    shown = sorted(((d, op) for op, d in deltas.items() if d), key=lambda x: (-abs(x[0]), x[1]))
    return [f"{d:+d} {op}" for d, op in shown[:4]], deltas.get("fusion", 0) > 0


def program_change_of(
    base: Measurement, new: Measurement, *, tolerance: float = 0.05, memory_tolerance: float = 0.10
) -> ProgramChange | None:
    """The program verdict of two measurements of one case and mode; None where either
    side recorded no compile (NumPy, a failed mode). Eager mode has no one program to
    fingerprint (one per primitive): its verdict is its compiles during calls alone, as
    it is for files before schema 1.8."""
    b, n = base.compile, new.compile
    if b is None or n is None:
        return None
    return compile_change_of(
        b, n, eager=base.mode is Mode.EAGER, tolerance=tolerance, memory_tolerance=memory_tolerance
    )


def compile_change_of(
    b: CompileInfo,
    n: CompileInfo,
    *,
    eager: bool = False,
    tolerance: float = 0.05,
    memory_tolerance: float = 0.10,
) -> ProgramChange | None:
    """`program_change_of` on the two sides' compile figures (`eager`: the mode has no
    one program); the history page explains a run's program change with it too."""
    recompiles = n.timed_compile_count - b.timed_compile_count
    if not (b.program_fingerprint and n.program_fingerprint):
        if recompiles <= 0:
            return ProgramChange(changed=False) if eager else None
        many = f"{recompiles} new recompile{'s' if recompiles != 1 else ''}"
        return ProgramChange(changed=True, moved=(many,), regressed=True)
    same = b.program_fingerprint == n.program_fingerprint
    if same and recompiles <= 0:
        return ProgramChange(changed=False)
    moved: list[str] = []
    worse = False
    if b.hlo_opcodes is not None and n.hlo_opcodes is not None:
        ops, more_kernels = _opcode_moves(b.hlo_opcodes, n.hlo_opcodes)
        moved += ops
        worse = worse or more_kernels
    ratios, ratios_worse = _ratio_moves(b, n, tolerance)
    memory, memory_worse = _memory_moves(b.memory, n.memory, memory_tolerance)
    moved += ratios + memory
    if recompiles > 0:
        moved.append(f"{recompiles} new recompile{'s' if recompiles != 1 else ''}")
    if not same and not moved:
        moved.append("the same counts, other instructions")
    return ProgramChange(
        changed=True,
        moved=tuple(moved),
        regressed=worse or ratios_worse or memory_worse or recompiles > 0,
    )


def explain(
    timing_regressed: bool,
    timing_improved: bool,
    program: ProgramChange | None,
    *,
    timed: bool = True,
) -> str:
    """What the timing and the program verdicts say together, for the entry's note
    (`timed` False: only the programs were compared)."""
    if program is None:
        return ""
    if not timed:
        return program.text if program.changed else ""
    if timing_regressed:
        if program.changed:
            return f"slower, and the {program.text} (why it is slower)"
        return "slower, but the program is unchanged: look at the environment (env diff) or noise"
    if program.changed and not timing_improved:
        return f"{program.text}, with no timing change (worth a look)"
    return program.text if program.changed else ""


#: Lines of a program diff a terminal shows under `--format wide` (the file has them all).
DIFF_PREVIEW_LINES = 20


def program_diff(
    base_text: str, new_text: str, *, base_label: str = "base", new_label: str = "new"
) -> str:
    """A unified diff (difflib, three lines of context) of two programs' texts as stored
    (`CompileInfo.program_text`: names and metadata aside, so a renamed variable or a
    moved source line shows no line); empty when they are the same."""
    lines = difflib.unified_diff(
        base_text.splitlines(keepends=True),
        new_text.splitlines(keepends=True),
        fromfile=f"jitbench program {base_label}",
        tofile=f"jitbench program {new_label}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)
