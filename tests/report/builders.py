"""Runs for the report's tests: one real measured run (the tiny suite plus a swept
workload, quick settings) and what a results file from elsewhere could hold (hostile text,
another machine's device, a label, a changed environment)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from jitbench import RunConfig, discover, run_workloads
from jitbench.results import Case, Measurement, Mode, Run, Status
from jitbench.results.analysis import judgement
from tests.conftest import TINY_SUITE

SWEEP_WORKLOAD = '''

@workload(inputs=vec, sizes={"S": {"n": 64}}, sweep=[{"n": 16}, {"n": 1024}, {"n": 65536}],
          tags=("tiny", "sweep"))
def affine(xp, x):
    """An affine map, measured over a size sweep."""
    return 3 * x + 1
'''
EVIL = (
    '<a href="//x.invalid">a</a><b>b</b>'
    '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
)


def real_run(folder: Path) -> Run:
    """A real measured run of the tiny suite plus a swept workload (quick settings): `double`
    at S, `wrong_in_jit` (jit and eager mismatch), `value_branch` (jit error) and `affine`
    at three sweep sizes."""
    suite = folder / "report_suite.py"
    suite.write_text(TINY_SUITE + SWEEP_WORKLOAD)
    workloads = discover([suite]).select((), None)
    config = RunConfig.quick_settings(sweep=True)
    # Six paired rounds at least: the fewest with a distribution-free 95 % speedup interval.
    plan = replace(config.plan, min_samples=6, floor_samples=6, max_samples=8)
    return run_workloads(workloads, replace(config, plan=plan))


def crafted_evil(run: Run) -> Run:
    """`run` with hostile text where a results file from an untrusted artifact could put it."""
    ms = []
    for m in run.measurements:
        case = replace(m.case, workload=f"{EVIL}{m.case.workload}", size=f"{m.case.size}<b>")
        err = m.error and replace(m.error, type="Oops</script>", message=EVIL, hint=EVIL)
        ms.append(replace(m, case=case, error=err))
    env = {**run.environment, "host": EVIL}
    config = {**run.config_record(), "label": EVIL}
    return replace(run, run_id="evil-run", measurements=tuple(ms), environment=env, config=config)


def relabelled(run: Run, *, device: str, kind: str, host: str, run_id: str) -> Run:
    """`run` as if measured on another machine's device (for comparison pages)."""
    ms = tuple(
        replace(
            m, case=replace(m.case, device=device, device_kind=kind, platform=device.split(":")[0])
        )
        for m in run.measurements
    )
    env = {
        **run.environment,
        "host": host,
        "devices": [{"id": 0, "platform": device.split(":")[0], "kind": kind, "label": device}],
    }
    return replace(
        run, run_id=run_id, measurements=ms, environment=env, started_at="2030-01-01T00:00:00+00:00"
    )


def labelled(run: Run, label: str, **changes: Any) -> Run:
    """`run` with a `--label` (and other fields replaced)."""
    settings = run.config.settings
    assert settings is not None
    config = replace(run.config, settings=replace(settings, label=label))
    return replace(run, config=config, **changes)


def slower(run: Run, workload: str, factor: float, *, run_id: str) -> Run:
    """`run` with every JAX sample of `workload` `factor` times slower (a regression)."""
    ms = tuple(
        replace(m, samples_s=tuple(s * factor for s in m.samples_s))
        if m.case.workload == workload and m.mode is not Mode.NUMPY
        else m
        for m in run.measurements
    )
    return replace(run, run_id=run_id, measurements=ms)


def _gemm(size: str, mode: Mode, median: float, nbytes: int) -> Measurement:
    samples = tuple(median * (1 - 0.01 + 0.02 * i / 11) for i in range(12))
    case = Case(workload="gemm", size=size, device="cpu:0", dtype="float32", input_bytes=nbytes)
    return Measurement(
        case=case, mode=mode, status=Status.OK, samples_s=samples, calls_per_sample=1
    )


def seed_run(environment: dict[str, object] | None = None) -> Run:
    """Issue 14's seed: gemm NumPy at S 49.5 ms (a BLAS stall) slower than at M 45.6 ms,
    which made S look like an 11× jit win; plus a healthy workload."""
    ms = [
        _gemm("S", Mode.NUMPY, 49.5e-3, 980_000),
        _gemm("S", Mode.JIT, 4.5e-3, 980_000),
        _gemm("M", Mode.NUMPY, 45.6e-3, 3_920_000),
        _gemm("M", Mode.JIT, 22.8e-3, 3_920_000),
    ]
    run = Run(
        run_id="seed",
        started_at="2030-01-01T00:00:00+00:00",
        finished_at="2030-01-01T00:01:00+00:00",
        complete=True,
        environment=environment or {"host": "vm"},
        config={},
        measurements=tuple(ms),
    )
    return judgement.run_diagnostics(run)


def stepped_runs(commits: bool = True) -> list[Run]:
    """Eight runs of the 1.8 fixture (commits c0 … c7), jit 30 % slower from the fifth."""
    from jitbench.results import load_run

    fixture = Path(__file__).resolve().parents[1] / "results" / "fixtures" / "run-schema-1.8.json"
    base = load_run(fixture)
    runs = []
    for i in range(8):
        slower = 1.3 if i >= 4 else 1.0
        git = {"git": {"commit": f"c{i}", "dirty": False}} if commits else {}
        env = {k: v for k, v in base.environment.items() if k != "git"}
        runs.append(
            replace(
                base,
                run_id=f"r{i}",
                started_at=f"2026-12-0{i + 1}T00:00:00+00:00",
                environment={**env, **git},
                measurements=tuple(
                    replace(m, samples_s=tuple(x * slower for x in m.samples_s))
                    if m.mode is Mode.JIT
                    else m
                    for m in base.measurements
                ),
            )
        )
    return runs


def program_changed_runs() -> list[Run]:
    """`stepped_runs`, with double S's jit program changed from the fifth run on (another
    fingerprint, one more fusion, 30 % more bytes accessed)."""
    runs = stepped_runs()
    out = []
    for i, run in enumerate(runs):
        if i < 4:
            out.append(run)
            continue
        changed = []
        for m in run.measurements:
            if m.mode is Mode.JIT and m.case.workload == "double" and m.compile is not None:
                c = m.compile
                ops = dict(c.hlo_opcodes or {})
                ops["fusion"] = ops.get("fusion", 0) + 1
                m = replace(
                    m,
                    compile=replace(
                        c,
                        program_fingerprint="f" * 16,
                        hlo_opcodes=ops,
                        bytes_accessed=(c.bytes_accessed or 0) * 1.3,
                    ),
                )
            changed.append(m)
        out.append(replace(run, measurements=tuple(changed)))
    return out
