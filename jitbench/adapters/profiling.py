"""One workload in depth: every mode measured, the jit compile taken apart, diagnostics.

`profile_workload` measures one case (workload × size × device × dtype) with the same
protocol as `jitbench run` (it calls `opening.measure_case`), and can keep the jaxpr and
the optimised HLO text. `profile_to_dict` is its JSON form. Nothing here prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import jax

from jitbench.config import RunConfig, SamplingPlan
from jitbench.measure import compilation as jcompile
from jitbench.measure import (
    devices,
    environment,
    faults,
    modes,
    opening,
    session,
    timeline,
)
from jitbench.measure.threads import limited_threads
from jitbench.results import (
    Case,
    CompileInfo,
    Diagnostic,
    ErrorInfo,
    Measurement,
    Mode,
    Run,
    measurement_to_dict,
)
from jitbench.results.analysis import CaseAnalysis, ModeFigure, analyse, judgement
from jitbench.results.model import RecordedConfig, new_run_id, utc_now
from jitbench.stats import Ratio
from jitbench.suite.workload import Workload

# `jitbench run`'s sampling rules and precision target (±1 %), with half a second of
# sampling for all modes together (one case, so it can afford more than a run's case): a
# whole profile takes a few seconds, and its figures compare with a run's.
PROFILE_PLAN = replace(SamplingPlan(), budget_s=0.5)


@dataclass(frozen=True, kw_only=True)
class Profile:
    """What `profile_workload` learnt about one case.

    `run` holds the case's measurements (one per mode) as a one-case Run, so the usual
    derived figures (speedups, break-even calls) apply. `jaxpr_text` / `hlo_text` are set
    only when asked for and when jit could trace / compile the function.
    """

    workload: Workload
    run: Run
    jaxpr_text: str | None = None
    hlo_text: str | None = None
    text_error: ErrorInfo | None = None

    @property
    def case(self) -> Case:
        return self.run.measurements[0].case

    def get(self, mode: Mode) -> Measurement | None:
        return self.run.get(self.case.key, mode)

    @property
    def jit_compile(self) -> CompileInfo | None:
        jit = self.get(Mode.JIT)
        return jit.compile if jit else None

    @property
    def eager_compile(self) -> CompileInfo | None:
        eager = self.get(Mode.EAGER)
        return eager.compile if eager else None

    @property
    def figures(self) -> CaseAnalysis:
        """The case's figures as every table shows them (`jitbench.results.analysis`)."""
        found = analyse(self.run).case(self.case)
        assert found is not None
        return found

    def figure(self, mode: Mode) -> ModeFigure | None:
        return self.figures.get(mode)

    def speedup(self, mode: Mode) -> Ratio | None:
        """`mode`'s speedup over NumPy with its interval (None unless both are ok)."""
        f = self.figures.get(mode)
        return f.speedup if f is not None else None

    def time(self, mode: Mode) -> Ratio | None:
        """The time per call of `mode` with its interval (seconds)."""
        f = self.figures.get(mode)
        return f.time if f is not None else None

    @property
    def break_even_calls(self) -> float | None:
        """Calls to pay back jit's compile versus NumPy; inf when jit is not faster."""
        return self.figures.break_even_calls

    @property
    def transfer_s(self) -> float | None:
        """Seconds `jax.device_put` took to stage the inputs (timed on its own)."""
        return next((m.transfer_s for m in self.run.measurements if m.transfer_s is not None), None)

    @property
    def transfer_bytes(self) -> int | None:
        """Bytes of the staged inputs."""
        return next(
            (m.transfer_bytes for m in self.run.measurements if m.transfer_bytes is not None),
            None,
        )

    @property
    def transfer_back_s(self) -> float | None:
        """Seconds the copy of jit's cold first output (eager's where jit failed) back to
        the host took (timed on its own); None when no JAX output was copied."""
        return next(
            (m.transfer_back_s for m in self.run.measurements if m.transfer_back_s is not None),
            None,
        )

    @property
    def transfer_back_bytes(self) -> int | None:
        """Bytes of that output."""
        return next(
            (
                m.transfer_back_bytes
                for m in self.run.measurements
                if m.transfer_back_bytes is not None
            ),
            None,
        )

    @property
    def device_peak(self) -> tuple[int, bool] | None:
        """(bytes, exact): the device allocator's high-water mark over the case (GPU and
        TPU; `Measurement.device_peak_bytes`); None where the device keeps no figures."""
        return self.run.device_peak(self.case.key)

    @property
    def diagnostics(self) -> list[tuple[Mode, Diagnostic]]:
        return [(m.mode, d) for m in self.run.measurements for d in m.diagnostics]

    @property
    def failures(self) -> list[Measurement]:
        """The modes that failed (an error, a timeout or a mismatch), in mode order: a
        profile with any is a failed one, as a run with any is under `--strict`."""
        return [m for m in self.run.measurements if m.failed]


def _ir_texts(
    wl: Workload, params: dict[str, Any], device: jax.Device, *, dtype: str, seed: int
) -> tuple[str | None, str | None, ErrorInfo | None]:
    """The jaxpr and optimised HLO of a cold jit compile, or the error that stopped it."""
    try:
        host = wl.make_inputs(params, dtype=dtype, seed=seed)
        staged = modes.stage(host, device)
        aot = jcompile.cold_aot_breakdown(
            wl.jax_fn,
            static_argnames=wl.static_argnames,
            static_argnums=wl.static_argnums,
            args=staged.args,
            kwargs={**staged.kwargs, **staged.static},
            keep_text=True,
        )
    except Exception as exc:
        return None, None, faults.error_info(exc)
    return aot.jaxpr_text, aot.hlo_text, None


def profile_workload(
    wl: Workload,
    *,
    size: str | None = None,
    device: str | None = None,
    x64: bool = False,
    plan: SamplingPlan | None = None,
    seed: int = 0,
    keep_text: bool = False,
    threads: int | None = 1,
    report: session.StepReport | None = None,
) -> Profile:
    """Measure one case of `wl` in every mode and keep the compile analysis.

    Args:
        size: a preset ("S") or sweep label ("n=1000"); default the smallest preset.
        device: "cpu", "gpu" or "gpu:1"; default the first accelerator, else the CPU.
        plan: sampling rules; default `PROFILE_PLAN` (half a second of sampling).
        keep_text: also keep the jaxpr and the optimised HLO (one more cold compile).
        threads: cores and BLAS threads, as `jitbench run --threads` (None: the libraries'
            own defaults); the same default as a run, so the figures compare.
        report: hears each step as it starts (`session.StepReport`), for progress.

    Raises:
        ConfigError: unknown size or device, or more threads than allowed cores.
    """
    label, params = wl.resolve_size(size)
    dtype = wl.case_dtype("float64" if x64 else "float32")
    config = RunConfig(
        sizes=(label,),
        x64=x64,
        seed=seed,
        plan=plan or PROFILE_PLAN,
        threads=threads,
        processes=1,  # a profile measures in this process
    )
    started = utc_now()
    tell = report or (lambda _step, _fraction: None)
    with devices.x64_enabled(x64), limited_threads(config.threads) as thread_state:
        tell("starting JAX", None)
        dev = devices.pick_device(device)
        env = environment.capture(threads=thread_state)
        devices.warm_up_process([dev])
        planned = opening.PlannedCase(wl, label, params, dev, dtype)
        measurements = opening.measure_case(
            planned, config, split_calls=timeline.SPLIT_CALLS, report=report
        )
        jaxpr_text = hlo_text = None
        text_error = None
        if keep_text:
            tell("jaxpr and HLO", None)
            jaxpr_text, hlo_text, text_error = _ir_texts(wl, params, dev, dtype=dtype, seed=seed)
    run = Run(
        run_id=new_run_id(),
        started_at=started,
        finished_at=utc_now(),
        complete=True,
        environment=env,
        config=RecordedConfig(settings=config),
        measurements=tuple(measurements),
    )
    run = judgement.run_diagnostics(run)
    return Profile(
        workload=wl, run=run, jaxpr_text=jaxpr_text, hlo_text=hlo_text, text_error=text_error
    )


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def profile_to_dict(profile: Profile) -> dict[str, Any]:
    """The JSON form: headline figures first, then every measurement in run-file form.

    `break_even_calls` is null both when unknown and when jit never pays off;
    `jit_pays_off` tells the two apart (null when unknown).
    """
    jit = profile.figure(Mode.JIT)
    jc, ec = profile.jit_compile, profile.eager_compile
    be = profile.break_even_calls
    modes_d: dict[str, Any] = {}
    for m in profile.run.measurements:
        t = profile.time(m.mode)
        r = profile.speedup(m.mode) if m.mode is not Mode.NUMPY else None
        modes_d[m.mode.value] = {
            "status": m.status.value,
            "time_s": t.value if t else None,
            "time_low_s": t.low if t else None,
            "time_high_s": t.high if t else None,
            "samples": len(m.samples_s),
            "calls_per_sample": m.calls_per_sample,
            "speedup_vs_numpy": None
            if r is None
            else {"value": r.value, "low": r.low, "high": r.high},
            "error": None if m.error is None else dict(m.error.__dict__),
            "time_split": None if m.time_split is None else dict(vars(m.time_split)),
        }
    wl = profile.workload
    return {
        "workload": {
            "name": wl.name,
            "description": wl.description,
            "source": wl.source,
            "tags": list(wl.tags),
            "static_argnames": list(wl.static_argnames),
            "static_argnums": list(wl.static_argnums),
            "eager": wl.eager,
        },
        "case": {
            "size": profile.case.size,
            "params": dict(profile.case.params),
            "device": profile.case.device,
            "device_kind": profile.case.device_kind,
            "dtype": profile.case.dtype,
            "input_bytes": profile.case.input_bytes,
            "input_dtypes": profile.case.input_dtypes,
        },
        "transfer": {"seconds": profile.transfer_s, "bytes": profile.transfer_bytes},
        "transfer_back": {
            "seconds": profile.transfer_back_s,
            "bytes": profile.transfer_back_bytes,
        },
        "device_peak": None
        if (peak := profile.device_peak) is None
        else {"bytes": peak[0], "exact": peak[1]},
        "jit_compile": None
        if jc is None
        else {
            **{k: (dict(v) if isinstance(v, dict) else v) for k, v in jc.__dict__.items()},
            "total_compile_s": jc.total_compile_s,
        },
        "eager_first_call": None
        if ec is None
        else {
            "first_call_s": ec.first_call_s,
            "compile_count": ec.compile_count,
        },
        "derived": {
            "achieved_flops_per_s": jit.achieved_flops_per_s if jit else None,
            "achieved_bytes_per_s": jit.achieved_bytes_per_s if jit else None,
            "break_even_calls": _finite(be),
            "jit_pays_off": None if be is None else math.isfinite(be),
        },
        "modes": modes_d,
        "failed": [m.mode.value for m in profile.failures],
        "diagnostics": [
            {
                "mode": mode.value,
                "code": d.code,
                "severity": d.severity.value,
                "message": d.message,
                "hint": d.hint,
            }
            for mode, d in profile.diagnostics
        ],
        "jaxpr": profile.jaxpr_text,
        "hlo": profile.hlo_text,
        "ir_error": None if profile.text_error is None else dict(profile.text_error.__dict__),
        "measurements": [measurement_to_dict(m) for m in profile.run.measurements],
        "environment": dict(profile.run.environment),
    }
