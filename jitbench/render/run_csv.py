"""A run as CSV: one row per case, raw numbers (seconds, bytes, ratios), for a spreadsheet
or pandas. `jitbench run --format csv` prints it."""

from __future__ import annotations

import io
import math
from collections.abc import Collection

from jitbench.config import ALL_MODES, JAX_MODES
from jitbench.formatting import SafeCsvWriter
from jitbench.render.run_table import (
    FOOTER_CODES,
    case_notes,
    cases_of_sizes,
    transfer_back_of,
    transfer_of,
)
from jitbench.results import Mode, Run
from jitbench.results.analysis import analyse

COLUMNS = (
    "workload",
    "size",
    "device",
    "dtype",
    *(f"{m.value}_s" for m in ALL_MODES),
    *(f"{m.value}_status" for m in ALL_MODES),
    *(f"{m.value}_{part}" for m in JAX_MODES for part in ("speedup", "low", "high")),
    "jit_compile_s",
    "break_even_calls",
    "transfer_s",
    "transfer_bytes",
    "transfer_back_s",
    "transfer_back_bytes",
    "device_peak_bytes",
    "device_peak_exact",
    "notes",
    # Appended after the first columns, so readers by position keep working:
    *(f"{m.value}_headline" for m in JAX_MODES),
    *(f"{m.value}_process_speedups" for m in JAX_MODES),
    # What the speedups and break-even are over: numpy, or eager (a JAX-only case).
    "speedup_over",
)


def _number(value: float | None) -> str:
    """Full precision (repr); '' for unknown, 'inf' for a break-even that never comes."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return repr(float(value)) if not isinstance(value, int) else str(value)


def run_csv(run: Run, *, sizes: Collection[str] = ()) -> str:
    """The run's cases (only those of `sizes` where given) as CSV text with a header row
    (`COLUMNS`)."""
    buffer = io.StringIO()
    writer = SafeCsvWriter(buffer)
    writer.writerow(COLUMNS)
    figures = analyse(run)
    for case in cases_of_sizes(run, sizes):
        c = figures.case(case)
        assert c is not None
        by_mode = {m: run.get(case.key, m) for m in ALL_MODES}
        shown = {m: c.get(m) for m in ALL_MODES}
        times = [
            _number(f.time.value if f is not None and f.ok and f.time is not None else None)
            for f in shown.values()
        ]
        statuses = [m.status.value if m is not None else "" for m in by_mode.values()]
        ratios: list[str] = []
        headline, apart = [], []
        for mode in JAX_MODES:
            f = shown[mode]
            r = f.speedup if f is not None else None
            parts = (r.value, r.low, r.high) if r is not None else (None, None, None)
            ratios += [_number(x) for x in parts]
            headline.append("" if r is None else str(bool(f and f.headline)).lower())
            apart.append(";".join(_number(x) for x in (f.process_speedups if f else ())))
        jit = shown[Mode.JIT]
        compile_s = jit.compile_s if jit else None
        transfer_s, transfer_bytes = transfer_of(run, case.key)
        back_s, back_bytes = transfer_back_of(run, case.key)
        peak = run.device_peak(case.key)
        writer.writerow(
            [
                case.workload,
                case.size,
                case.device,
                case.dtype,
                *times,
                *statuses,
                *ratios,
                _number(compile_s),
                _number(c.break_even_calls),
                _number(transfer_s),
                _number(transfer_bytes),
                _number(back_s),
                _number(back_bytes),
                _number(peak[0] if peak else None),
                "" if peak is None else str(peak[1]).lower(),
                case_notes(by_mode.values(), skip=FOOTER_CODES),
                *headline,
                *apart,
                c.baseline.value,
            ]
        )
    return buffer.getvalue()
