"""Runs for the gate's tests, built from the real result types (no timing here).

Every run goes through the real JSON form and schema, as `jitbench compare` reads it.
"""

from __future__ import annotations

import json
from dataclasses import replace

from jitbench.results import (
    Case,
    CompileInfo,
    ErrorInfo,
    Measurement,
    Mode,
    Run,
    Status,
    dump_run,
    run_from_dict,
)

ENV = {
    "host": "box",
    "machine": "x86_64",
    "cpu": "cpu",
    "cpu_count": 2,
    "backend": "cpu",
    "devices": [{"id": 0, "platform": "cpu", "kind": "cpu", "label": "cpu:0"}],
    "x64": False,
    "versions": {"jax": "0.10.2", "numpy": "2.0"},
    "env": {},
    "git": {"commit": "abc", "dirty": False},
}


def spread(center: float, n: int, rel: float = 0.01) -> tuple[float, ...]:
    """n deterministic samples evenly spread ±rel around center."""
    if n == 1:
        return (center,)
    return tuple(center * (1 - rel + 2 * rel * i / (n - 1)) for i in range(n))


def meas(
    workload: str = "w",
    mode: Mode = Mode.JIT,
    samples: tuple[float, ...] = (),
    status: Status = Status.OK,
    compile_s: float | None = None,
    size: str = "S",
    params: dict | None = None,
) -> Measurement:
    compile_info = None
    if compile_s is not None:
        compile_info = CompileInfo(
            trace_s=compile_s / 2,
            lower_s=compile_s / 4,
            compile_s=compile_s / 4,
            first_call_s=compile_s,
        )
    return Measurement(
        case=Case(
            workload=workload, size=size, device="cpu:0", dtype="float32", params=params or {}
        ),
        mode=mode,
        status=status,
        samples_s=samples,
        calls_per_sample=10,
        compile=compile_info,
        error=ErrorInfo(type="ValueError", message="boom") if status is Status.ERROR else None,
    )


def make_run(
    *measurements: Measurement,
    run_id: str = "r",
    env: dict | None = None,
    config: dict | None = None,
) -> Run:
    run = Run(
        run_id=run_id,
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:01:00+00:00",
        complete=True,
        environment=env or ENV,
        config=config or {"plan": {"budget_s": 2.0}},
        measurements=tuple(measurements),
    )
    # Round-trip through the real JSON form and schema, as `jitbench compare` would.
    return run_from_dict(json.loads(dump_run(run)))


def only(cmp, workload="w", mode=Mode.JIT):
    return next(e for e in cmp.entries if e.workload == workload and e.mode is mode)


def runs_at_levels(levels_by_case: dict[str, list[float]], tag: str) -> list[Run]:
    """One run per position in the level lists; each case's 8 samples sit tightly (±0.5 %)
    around 1 ms × its level in that run, as samples of one run do on a real machine."""
    n_runs = len(next(iter(levels_by_case.values())))
    return [
        make_run(
            *(
                meas(workload=w, samples=spread(1e-3 * levels[i], 8, 0.005))
                for w, levels in levels_by_case.items()
            ),
            run_id=f"{tag}{i}",
        )
        for i in range(n_runs)
    ]


#: Run-to-run levels of steady cases (about ±3 %), the same for both sides.
STEADY = {
    f"u{i}": [1.0, 1.03, 0.97, 1.01][i % 4 :] + [1.0, 1.03, 0.97, 1.01][: i % 4] for i in range(8)
}


def with_program_text(run: Run, text: str, mode: Mode = Mode.JIT) -> Run:
    """`run` with `mode`'s measurements holding `text` as their program's text (held in
    memory only, so set after `make_run`'s round trip)."""
    return replace(
        run,
        measurements=tuple(
            replace(m, compile=replace(m.compile, program_text=text))
            if m.mode is mode and m.compile is not None
            else m
            for m in run.measurements
        ),
    )
