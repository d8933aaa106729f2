"""The changed programs' diffs of a comparison: which entries get one, and their text.

The texts are those a run keeps of its jit and sharded programs (`CompileInfo.program_text`,
stored beside the run file: `results.files.save_programs`), so a diff shows the program's
own changes, never a renamed variable or a moved source line.
"""

from __future__ import annotations

from collections.abc import Mapping

from jitbench.gate.model import Comparison, Entry
from jitbench.gate.program import program_diff
from jitbench.results import program_key


def entry_program_key(entry: Entry) -> str:
    """The key of an entry's program in a run's programs (`results.program_key`)."""
    return program_key(entry.key, entry.mode.value)


def program_diffs(
    cmp: Comparison, base_programs: Mapping[str, str], new_programs: Mapping[str, str]
) -> dict[str, str]:
    """The diff of each entry whose program changed (`Entry.program`), where both sides'
    texts are known, by `entry_program_key`; entries whose texts are the same (a change
    that is recompiles during calls alone) have none."""
    diffs: dict[str, str] = {}
    for entry in cmp.entries:
        if entry.program is None or not entry.program.changed:
            continue
        key = entry_program_key(entry)
        base, new = base_programs.get(key), new_programs.get(key)
        if base is None or new is None:
            continue
        label = f"{entry.workload} {entry.size} {entry.device} {entry.dtype} {entry.mode.value}"
        diff = program_diff(base, new, base_label=f"base {label}", new_label=f"new {label}")
        if diff:
            diffs[key] = diff
    return diffs
