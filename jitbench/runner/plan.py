"""Plan a run: the cases a configuration asks for, how they group, and what a resumed run
finishes with (its recorded settings; its workloads: `suite.selection`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, replace

import jax

from jitbench.config import PLAN_OPTIONS, RunConfig, SamplingPlan
from jitbench.errors import ConfigError
from jitbench.measure.devices import device_label
from jitbench.measure.opening import PlannedCase
from jitbench.results import Run
from jitbench.runner.events import FloatWidthChosen
from jitbench.suite.discovery import unknown_name_message
from jitbench.suite.selection import workload_list
from jitbench.suite.workload import Workload

CaseKey = tuple[str, str, str, str]


def suite_float_width(
    workloads: Sequence[Workload], config: RunConfig
) -> tuple[RunConfig, FloatWidthChosen | None]:
    """`config` with `x64` decided where it was left unset (None): float64 where a selected
    workload's suite declares it (`Workload.float_width`; NPBench does), else float32; and
    the event that says so, or None where there is nothing to say (set, or float32 by
    default)."""
    workloads = workload_list(workloads)  # refused here, as plan_cases would, if not a list
    if config.x64 is not None:
        return config, None
    wide = [w for w in workloads if w.float_width == "float64"]
    if not wide:
        return replace(config, x64=False), None
    suites = tuple(dict.fromkeys(w.origin or w.source.split(":")[0] or w.name for w in wide))
    return replace(config, x64=True), FloatWidthChosen(
        "float64", suites, declared=len(wide), total=len(workloads)
    )


def plan_cases(
    workloads: Sequence[Workload], config: RunConfig, devices: Sequence[jax.Device]
) -> list[PlannedCase]:
    """Every workload × size × device × dtype the config asks for.

    Each workload is measured at the requested sizes it defines. Raises ConfigError when
    a requested size exists in none of the workloads, unless the sizes are the defaults
    (`RunConfig.default_sizes`): those fail only when no workload defines any of them, so
    a suite whose workloads define only S runs without `--sizes S`.
    """
    workloads = workload_list(workloads)
    dtype = "float64" if config.x64 else "float32"
    if not config.sweep and workloads:
        known = {s for w in workloads for s in w.sizes}
        missing = [size for size in config.sizes if size not in known]
        if missing and (not config.default_sizes or len(missing) == len(config.sizes)):
            raise ConfigError(unknown_name_message("size", missing[0], sorted(known)))
        # The defaults go where a workload defines them; one that defines none of them
        # would vanish from the run without a word.
        left = [
            w for w in workloads if config.default_sizes and not set(config.sizes) & set(w.sizes)
        ]
        if left:
            w = left[0]
            raise ConfigError(
                f"workload {w.name!r} defines none of the default sizes "
                f"{', '.join(config.sizes)} (it has {', '.join(w.sizes)}); pass the sizes to "
                f"measure, e.g. --sizes {','.join(dict.fromkeys([*config.sizes, *w.sizes]))}."
            )
    planned = []
    for wl in {w.name: w for w in workloads}.values():  # each workload once
        if config.sweep and wl.sweep:
            sizes = [(label, dict(p)) for label, p in zip(wl.sweep_labels, wl.sweep, strict=True)]
        else:
            sizes = [(s, dict(wl.sizes[s])) for s in config.sizes if s in wl.sizes]
        for size, params in sizes:
            for device in devices:
                planned.append(PlannedCase(wl, size, params, device, wl.case_dtype(dtype)))
    return planned


def workloads_left_out(
    workloads: Sequence[Workload], cases: Sequence[PlannedCase]
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The workloads `plan_cases` planned no case of (none of the sizes asked for), each
    with the sizes it defines: what a run says it left out."""
    planned = {pc.workload.name for pc in cases}
    by_name = {w.name: w for w in workloads}
    return tuple((name, tuple(w.sizes)) for name, w in by_name.items() if name not in planned)


#: A group of cases measured together: workload, size and dtype (`group_cases`).
GroupKey = tuple[str, str, str]


def group_key(group: Sequence[PlannedCase]) -> GroupKey:
    """A group's workload, size and dtype (`group_cases`)."""
    first = group[0]
    return (first.workload.name, first.size, first.dtype)


def group_cases(cases: Sequence[PlannedCase]) -> list[tuple[PlannedCase, ...]]:
    """The cases measured together: each workload × size × dtype with all its devices, in
    plan order. Their NumPy side is host code, the same on every device, so it is measured
    once and sampled in the same rounds as each device's JAX modes (one shared baseline)."""
    groups: dict[GroupKey, list[PlannedCase]] = {}
    for pc in cases:
        groups.setdefault((pc.workload.name, pc.size, pc.dtype), []).append(pc)
    return [tuple(group) for group in groups.values()]


def case_key(pc: PlannedCase) -> CaseKey:
    """The key of the Case a planned case is recorded as (`Case.key`)."""
    return (pc.workload.name, pc.size, device_label(pc.device), pc.dtype)


# What a resume may not change, as the CLI names it, in the order of `jitbench run --help`.
_SETTING_OPTIONS = (
    ("sizes", "--sizes"),
    ("modes", "--modes"),
    ("devices", "--devices"),
    ("x64", "--x64"),
    ("sweep", "--setting sweep"),
    ("threads", "--threads"),
)
#: Named after the others: a resume keeps the recorded settings whole. More processes, or
#: time splits in some cases only, would make the run unlike the one it started as; a
#: label is recorded (and shown on the partial run's pages) from the start, and another
#: would rename the run half-way.
_RECORDED_OPTIONS = (
    ("processes", "--processes"),
    ("time_split", "--setting time_split"),
    ("label", "--label"),
)


def changed_settings(requested: RunConfig) -> list[str]:
    """The options in `requested` that are not at their defaults, named as on the command
    line (a field with no option by its name), leaving out `--isolate` and `--timeout`:
    those say how to measure, not what. The defaults are those of `--quick` when it is set.
    """
    base = RunConfig.quick_settings() if requested.quick else RunConfig()
    changed = [
        opt for name, opt in _SETTING_OPTIONS if getattr(requested, name) != getattr(base, name)
    ]
    plan_changed = [
        f.name
        for f in fields(SamplingPlan)
        if getattr(requested.plan, f.name) != getattr(base.plan, f.name)
    ]
    if "min_samples" in plan_changed and "max_samples" in plan_changed:
        plan_changed.remove("max_samples")  # --min-samples raises the cap with it
    changed += [opt for name, opt in PLAN_OPTIONS.items() if name in plan_changed]
    changed += [f"--setting {name}" for name in plan_changed if name not in PLAN_OPTIONS]
    if requested.quick:
        changed.append("--quick")
    if requested.seed != base.seed:
        changed.append("--setting seed")
    changed += [
        opt for name, opt in _RECORDED_OPTIONS if getattr(requested, name) != getattr(base, name)
    ]
    return changed


def settings_for_resume(run: Run, requested: RunConfig | None) -> RunConfig:
    """The settings a resumed run is finished with: those recorded in it, measured with
    the requested `isolate` (when set) and `timeout_s` (when given).

    Raises:
        ConfigError: the run records no settings this version can read.
    """
    recorded = run.config.settings
    if recorded is None:
        # Raises the reason when the recorded keys cannot be read.
        RunConfig.from_dict(run.config.extra)
        raise ConfigError(
            f"run {run.run_id} does not record its settings (written by an older jitbench?); "
            "it cannot be resumed, start a new run."
        )
    if requested is None:
        return recorded
    isolate = requested.isolate or recorded.isolate
    timeout_s = requested.timeout_s if requested.timeout_s is not None else recorded.timeout_s
    return replace(recorded, isolate=isolate, timeout_s=timeout_s)
