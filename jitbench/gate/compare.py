"""The regression gate: match two runs case by case and classify every change.

A timing change is a regression only when it is both large (new/base median ratio beyond
`threshold`) and significant (two-sided Mann–Whitney U on the raw samples, p < `alpha`
after the Benjamini–Hochberg adjustment over every timing test of the comparison: a
60-case suite tested at 0.01 each would otherwise flag something in ~45 % of A/A pairs).
Compile time has one sample per run, so it is judged by a looser factor plus an absolute
floor. Everything here is pure: it returns a frozen `Comparison` and never prints.
"""

from __future__ import annotations

import enum
import math
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from jitbench import stats
from jitbench.errors import ConfigError, ResultsFormatError
from jitbench.results import Measurement, Mode, Run, load_run

COMPARISON_SCHEMA_ID = "jitbench.comparison"
COMPARISON_SCHEMA_VERSION = "1.0"

CaseKey = tuple[str, str, str, str]


class Verdict(str, enum.Enum):
    """How one case × mode changed from the base run to the new run."""

    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    UNCHANGED = "unchanged"
    INCONCLUSIVE = "inconclusive"  # a large change the sample counts cannot test at `alpha`
    NEW = "new"
    REMOVED = "removed"
    NOW_FAILING = "now failing"
    FIXED = "fixed"
    STILL_FAILING = "still failing"
    NOT_COMPARED = "not compared"  # skipped, or ok without samples, on either side


class SignificanceTest(str, enum.Enum):
    """How a run-time change was tested for significance."""

    SAMPLES = "mann-whitney"  # two-sided Mann–Whitney U on the raw samples (one run per side)
    # Pooled runs: a moderated t-test on each run's median and Mann–Whitney on the samples,
    # both significant (`compare_runs`).
    RUNS = "run t-test + mann-whitney"


#: Prior degrees of freedom of a case's between-run variance in the run-level test: the
#: suite's typical spread counts as ten runs' worth of evidence (see `compare_runs`).
RUN_PRIOR_DF = 10.0

#: Fewest runs per side with which the run-level test found a 30 % slowdown every time on a
#: shared 2-vCPU VM (with two it found 5 of 12); fewer earn a warning in the report.
MIN_RUNS_PER_SIDE = 3

#: Multiple-comparison adjustments of the timing p-values ("bh": Benjamini–Hochberg).
P_ADJUST_METHODS = ("bh", "none")

#: Verdicts that make the gate fail (exit 1).
FAILING_VERDICTS = frozenset({Verdict.REGRESSION, Verdict.NOW_FAILING})


@dataclass(frozen=True, kw_only=True)
class Thresholds:
    """What counts as a change.

    Attributes:
        threshold: run-time factor; new/base median beyond it (or below 1/threshold) is large.
        alpha: significance level of the two-sided Mann–Whitney U test on the raw samples.
        p_adjust: "bh" adjusts the p-values for the number of timing tests in the comparison
            (Benjamini–Hochberg, which bounds the chance of any false alarm in an A/A
            comparison by `alpha`); "none" tests each case at `alpha` on its own.
        compile_threshold: compile-time factor (jit trace + lower + compile seconds).
        compile_floor_s: a compile change must also exceed this many seconds in absolute terms.
        compile_gates: whether a compile-time regression fails the gate (it is always reported).
    """

    threshold: float = 1.10
    alpha: float = 0.01
    compile_threshold: float = 1.25
    compile_floor_s: float = 0.020
    compile_gates: bool = True
    p_adjust: str = "bh"

    def __post_init__(self) -> None:
        if self.p_adjust not in P_ADJUST_METHODS:
            raise ConfigError(
                f"--p-adjust is one of {', '.join(P_ADJUST_METHODS)}, got {self.p_adjust!r}."
            )
        if not (self.threshold > 1 and math.isfinite(self.threshold)):
            raise ConfigError(
                f"--threshold is a factor above 1 such as 1.10 (10 % slower), got {self.threshold}."
            )
        if not 0 < self.alpha < 1:
            raise ConfigError(f"--alpha is a p-value level such as 0.01, got {self.alpha}.")
        if not (self.compile_threshold > 1 and math.isfinite(self.compile_threshold)):
            raise ConfigError(
                "--compile-threshold is a factor above 1 such as 1.25, "
                f"got {self.compile_threshold}."
            )
        if not (self.compile_floor_s >= 0 and math.isfinite(self.compile_floor_s)):
            raise ConfigError(
                f"--compile-floor is seconds >= 0 such as 0.02, got {self.compile_floor_s}."
            )


@dataclass(frozen=True, kw_only=True)
class CompileChange:
    """Cold jit compile time (trace + lower + compile seconds) of one case, base vs new."""

    base_s: float
    new_s: float
    verdict: Verdict  # REGRESSION, IMPROVEMENT or UNCHANGED

    @property
    def ratio(self) -> float:
        return self.new_s / self.base_s if self.base_s > 0 else math.inf

    @property
    def delta_s(self) -> float:
        return self.new_s - self.base_s


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One case × mode present in either run, with its verdict.

    Timing fields are None unless both sides are ok with samples. `ratio` is
    new median / base median (above 1 is slower); `ratio_low`/`ratio_high` its 95 % CI;
    `p_value` the two-sided p-value of `test` (with pooled runs, the larger of the run
    t-test's and Mann–Whitney's) and `p_adjusted` the same after the comparison-wide
    adjustment (the one the verdict used). With pooled runs the ratio is that of the
    geometric means of the runs' medians and the CI is the t-test's; with one run per side
    it is the ratio of medians with a bootstrap CI.
    """

    workload: str
    size: str
    device: str
    dtype: str
    mode: Mode
    verdict: Verdict
    base: Measurement | None = None
    new: Measurement | None = None
    ratio: float | None = None
    ratio_low: float | None = None
    ratio_high: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    test: SignificanceTest | None = None
    compile: CompileChange | None = None
    note: str = ""
    compile_gates: bool = True

    @property
    def key(self) -> CaseKey:
        return (self.workload, self.size, self.device, self.dtype)

    @property
    def p_judged(self) -> float | None:
        """The p-value the verdict was reached with (adjusted when there is one)."""
        return self.p_adjusted if self.p_adjusted is not None else self.p_value

    @property
    def label(self) -> str:
        return f"{self.workload}[{self.size}] {self.device} {self.dtype} {self.mode.value}"

    @property
    def base_median_s(self) -> float | None:
        return self.base.median_s if self.base is not None else None

    @property
    def new_median_s(self) -> float | None:
        return self.new.median_s if self.new is not None else None

    @property
    def fails_gate(self) -> bool:
        """True for a run-time regression, a case now failing, or a compile regression."""
        return self.verdict in FAILING_VERDICTS or (
            self.compile_gates
            and self.compile is not None
            and self.compile.verdict is Verdict.REGRESSION
        )


@dataclass(frozen=True, kw_only=True)
class GeoMean:
    """Geometric mean of new/base median ratios over the cases compared in one mode/device."""

    device: str
    mode: Mode
    ratio: float
    count: int


@dataclass(frozen=True, kw_only=True)
class EnvDifference:
    """An environment or configuration field that differs between the two runs."""

    name: str
    base: Any
    new: Any


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """The result of comparing two runs. `entries` follow the new run's order, then removed."""

    base_run_id: str
    new_run_id: str
    thresholds: Thresholds
    entries: tuple[Entry, ...]
    geomeans: tuple[GeoMean, ...] = ()
    environment_differences: tuple[EnvDifference, ...] = ()
    base_commit: str | None = None
    new_commit: str | None = None
    pooling: tuple[PoolingNote, ...] = ()  # how folders of runs were pooled (`merge_runs`)

    @property
    def failures(self) -> tuple[Entry, ...]:
        """Entries that fail the gate (regression, now failing, compile regression)."""
        return tuple(e for e in self.entries if e.fails_gate)

    @property
    def has_regression(self) -> bool:
        return any(e.fails_gate for e in self.entries)

    @property
    def regressed_workloads(self) -> tuple[str, ...]:
        """Names of workloads with at least one failing entry, in order of appearance."""
        return tuple(dict.fromkeys(e.workload for e in self.failures))

    def count(self, verdict: Verdict) -> int:
        return sum(1 for e in self.entries if e.verdict is verdict)

    @property
    def compile_regressions(self) -> tuple[Entry, ...]:
        return tuple(
            e for e in self.entries if e.compile and e.compile.verdict is Verdict.REGRESSION
        )

    @property
    def compile_improvements(self) -> tuple[Entry, ...]:
        return tuple(
            e for e in self.entries if e.compile and e.compile.verdict is Verdict.IMPROVEMENT
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (strict JSON: infinities and NaN become None)."""
        return {
            "schema": COMPARISON_SCHEMA_ID,
            "schema_version": COMPARISON_SCHEMA_VERSION,
            "base_run_id": self.base_run_id,
            "new_run_id": self.new_run_id,
            "base_commit": self.base_commit,
            "new_commit": self.new_commit,
            "thresholds": {
                "threshold": self.thresholds.threshold,
                "alpha": self.thresholds.alpha,
                "compile_threshold": self.thresholds.compile_threshold,
                "compile_floor_s": self.thresholds.compile_floor_s,
                "compile_gates": self.thresholds.compile_gates,
                "p_adjust": self.thresholds.p_adjust,
            },
            "pooling": [{"text": n.text, "left_out": n.left_out} for n in self.pooling],
            "has_regression": self.has_regression,
            "regressed_workloads": list(self.regressed_workloads),
            "counts": {v.value: self.count(v) for v in Verdict},
            "compile_regressions": len(self.compile_regressions),
            "environment_differences": [
                {"name": d.name, "base": d.base, "new": d.new} for d in self.environment_differences
            ],
            "geomeans": [
                {
                    "device": g.device,
                    "mode": g.mode.value,
                    "ratio": _finite(g.ratio),
                    "count": g.count,
                }
                for g in self.geomeans
            ],
            "entries": [_entry_dict(e) for e in self.entries],
        }


def _finite(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return value


def _entry_dict(e: Entry) -> dict[str, Any]:
    return {
        "workload": e.workload,
        "size": e.size,
        "device": e.device,
        "dtype": e.dtype,
        "mode": e.mode.value,
        "verdict": e.verdict.value,
        "fails_gate": e.fails_gate,
        "base_status": e.base.status.value if e.base else None,
        "new_status": e.new.status.value if e.new else None,
        "base_median_s": e.base_median_s,
        "new_median_s": e.new_median_s,
        "base_n": len(e.base.samples_s) if e.base else 0,
        "new_n": len(e.new.samples_s) if e.new else 0,
        "ratio": _finite(e.ratio),
        "ratio_low": _finite(e.ratio_low),
        "ratio_high": _finite(e.ratio_high),
        "p_value": e.p_value,
        "p_adjusted": e.p_adjusted,
        "test": e.test.value if e.test else None,
        "compile": None
        if e.compile is None
        else {
            "base_s": e.compile.base_s,
            "new_s": e.compile.new_s,
            "ratio": _finite(e.compile.ratio),
            "verdict": e.compile.verdict.value,
        },
        "note": e.note,
    }


# ---------------------------------------------------------------------------------------
# Classification


@dataclass(frozen=True)
class TimingResult:
    """A run-time verdict with the figures it was reached on (see `Entry`)."""

    verdict: Verdict
    ratio: float
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    note: str = ""
    test: SignificanceTest | None = None


def _judge(
    ratio: float,
    low: float | None,
    high: float | None,
    p: float,
    thresholds: Thresholds,
    test: SignificanceTest,
    *,
    sample_counts: tuple[int, int],
) -> TimingResult:
    """Regression / improvement when the ratio is beyond the factor and p < alpha;
    inconclusive when the sample counts can never give Mann–Whitney p < alpha."""
    t = thresholds.threshold
    if not (ratio > t or ratio < 1 / t):
        return TimingResult(Verdict.UNCHANGED, ratio, low, high, p, "", test)
    direction = "slower" if ratio > 1 else "faster"
    n_base, n_new = sample_counts
    if stats.mann_whitney_min_p(n_base, n_new) >= thresholds.alpha:
        note = (
            f"{direction}, but {n_base} vs {n_new} samples cannot reach "
            f"p < {thresholds.alpha:g}; measure at least "
            f"{stats.mann_whitney_samples_needed(thresholds.alpha)} "
            "per side (--min-samples)"
        )
        return TimingResult(Verdict.INCONCLUSIVE, ratio, low, high, p, note, test)
    if p >= thresholds.alpha:
        note = f"{direction} but not significant"
        return TimingResult(Verdict.UNCHANGED, ratio, low, high, p, note, test)
    verdict = Verdict.REGRESSION if ratio > 1 else Verdict.IMPROVEMENT
    return TimingResult(verdict, ratio, low, high, p, "", test)


def compare_timing(
    base_samples: tuple[float, ...] | list[float],
    new_samples: tuple[float, ...] | list[float],
    thresholds: Thresholds,
) -> TimingResult:
    """Classify a run-time change from raw samples (seconds per call) on both sides.

    The verdict is REGRESSION / IMPROVEMENT only when the median ratio is beyond the factor
    *and* the two-sided Mann–Whitney test is significant; a large change that the sample
    counts cannot make significant is INCONCLUSIVE (never a regression); everything else
    is UNCHANGED.
    """
    if not (statistics.median(base_samples) > 0 and statistics.median(new_samples) > 0):
        return TimingResult(Verdict.NOT_COMPARED, math.nan, note="a median is zero")
    r = stats.ratio_of_medians(list(new_samples), list(base_samples))
    p = stats.mann_whitney_p(list(base_samples), list(new_samples))
    return _judge(
        r.value,
        r.low,
        r.high,
        p,
        thresholds,
        SignificanceTest.SAMPLES,
        sample_counts=(len(base_samples), len(new_samples)),
    )


def compare_runs(
    base: Measurement,
    new: Measurement,
    spread: stats.RunSpread,
    prior_variance: float | None,
    thresholds: Thresholds,
) -> TimingResult:
    """Classify a run-time change of pooled runs from each run's median (`run_spread_of`).

    Samples within one run agree far better than runs of the same code do (on a shared VM
    a case's median moves ~5 % from run to run beyond the whole run's level), so with
    several runs per side the run, not the sample, is the unit of evidence: a moderated
    t-test on the log run medians, the case's between-run variance shrunk toward the
    suite's typical one (`prior_variance`) with `RUN_PRIOR_DF` degrees of freedom. The
    Mann–Whitney test on the pooled samples must agree too: the p-value is the larger of
    the two (an intersection–union test, valid at `alpha` for "both are significant").
    The ratio is that of the geometric means of the runs' medians, with the t-test's CI.
    """
    test = stats.moderated_t_test(spread, prior_variance, RUN_PRIOR_DF)
    p = max(test.p_value, stats.mann_whitney_p(list(base.samples_s), list(new.samples_s)))
    return _judge(
        test.ratio,
        test.low,
        test.high,
        p,
        thresholds,
        SignificanceTest.RUNS,
        sample_counts=(len(base.samples_s), len(new.samples_s)),
    )


def run_spread_of(base: Measurement, new: Measurement) -> stats.RunSpread | None:
    """The between-run spread of a case when either side pools several runs, else None
    (one run per side: the samples are all there is)."""
    if not (base.run_sample_counts or new.run_sample_counts):
        return None
    return stats.run_spread(base.run_medians_s, new.run_medians_s)


def compare_compile(
    base_s: float | None, new_s: float | None, thresholds: Thresholds
) -> CompileChange | None:
    """Classify a cold compile-time change: factor and absolute floor, no significance test
    (one compile per run). None when either side lacks the figure."""
    if base_s is None or new_s is None or base_s < 0 or new_s < 0:
        return None
    f, floor = thresholds.compile_threshold, thresholds.compile_floor_s
    if new_s > base_s * f and new_s - base_s > floor:
        verdict = Verdict.REGRESSION
    elif base_s > new_s * f and base_s - new_s > floor:
        verdict = Verdict.IMPROVEMENT
    else:
        verdict = Verdict.UNCHANGED
    return CompileChange(base_s=base_s, new_s=new_s, verdict=verdict)


def _compile_s(m: Measurement) -> float | None:
    """The jit compile figure a comparison judges: the median of every cold compile
    measured (several with rounds or pooled runs), else the one there is."""
    if m.compile is None:
        return None
    if m.compile.compile_repeats_s:
        return statistics.median(m.compile.compile_repeats_s)
    return m.compile.total_compile_s


def _params_note(base: Measurement, new: Measurement) -> str:
    bp, np_ = dict(base.case.params), dict(new.case.params)
    if bp == np_:
        return ""
    changed = [
        f"{k} {bp.get(k, '—')}→{np_.get(k, '—')}"
        for k in sorted(set(bp) | set(np_), key=str)
        if bp.get(k) != np_.get(k)
    ]
    return "size parameters changed: " + ", ".join(changed)


def compare_measurements(
    base: Measurement | None,
    new: Measurement | None,
    thresholds: Thresholds,
    *,
    run_prior_variance: float | None = None,
) -> Entry:
    """Classify one case × mode (either side may be missing). With pooled runs the
    run-time test is `compare_runs`, given the suite's `run_prior_variance`."""
    ref = new if new is not None else base
    assert ref is not None, "at least one side must exist"
    common: dict[str, Any] = {
        "workload": ref.case.workload,
        "size": ref.case.size,
        "device": ref.case.device,
        "dtype": ref.case.dtype,
        "mode": ref.mode,
        "base": base,
        "new": new,
        "compile_gates": thresholds.compile_gates,
    }
    if base is None:
        return Entry(verdict=Verdict.NEW, **common)
    if new is None:
        return Entry(verdict=Verdict.REMOVED, **common)
    compile_change = compare_compile(_compile_s(base), _compile_s(new), thresholds)
    base_failed, new_failed = base.failed, new.failed
    if base_failed and new_failed:
        return Entry(verdict=Verdict.STILL_FAILING, note=f"{new.status.value}", **common)
    if new_failed:
        why = new.error.type if new.error is not None else new.status.value
        return Entry(verdict=Verdict.NOW_FAILING, note=why, **common)
    if base_failed:
        return Entry(
            verdict=Verdict.FIXED, compile=compile_change, note=f"was {base.status.value}", **common
        )
    if not (base.ok and new.ok):
        side = "base" if not base.ok else "new"
        m = base if not base.ok else new
        return Entry(
            verdict=Verdict.NOT_COMPARED,
            compile=compile_change,
            note=f"{side} is {m.status.value} with {len(m.samples_s)} samples",
            **common,
        )
    spread = run_spread_of(base, new)
    if spread is not None:
        timing = compare_runs(base, new, spread, run_prior_variance, thresholds)
    else:
        timing = compare_timing(base.samples_s, new.samples_s, thresholds)
    notes = [n for n in (timing.note, _params_note(base, new)) if n]
    return Entry(
        verdict=timing.verdict,
        ratio=timing.ratio,
        ratio_low=timing.low,
        ratio_high=timing.high,
        p_value=timing.p_value,
        test=timing.test,
        compile=compile_change,
        note="; ".join(notes),
        **common,
    )


#: Verdicts reached by the timing test, so their p-values join the adjustment.
_TESTED_VERDICTS = frozenset({Verdict.REGRESSION, Verdict.IMPROVEMENT, Verdict.UNCHANGED})


def adjust_for_multiplicity(
    entries: tuple[Entry, ...], thresholds: Thresholds
) -> tuple[Entry, ...]:
    """Adjust the timing p-values of all entries together and re-judge significance.

    Each entry's verdict was reached with its own p-value. With `p_adjust="bh"` the
    p-values of every entry that was tested (regression, improvement, unchanged) are
    replaced by Benjamini–Hochberg adjusted ones (`scipy.stats.false_discovery_control`),
    and a large change whose adjusted p is not below `alpha` becomes unchanged. When no
    change is real this bounds the chance of any false regression by `alpha`, however many
    cases the suite has.
    """
    tested = [
        i for i, e in enumerate(entries) if e.p_value is not None and e.verdict in _TESTED_VERDICTS
    ]
    if not tested:
        return entries
    raw = [float(entries[i].p_value or 0.0) for i in tested]  # tested: never None
    adjusted = stats.benjamini_hochberg(raw) if thresholds.p_adjust == "bh" else raw
    out = list(entries)
    for i, q in zip(tested, adjusted, strict=True):
        e = replace(entries[i], p_adjusted=q)
        if e.verdict in (Verdict.REGRESSION, Verdict.IMPROVEMENT) and q >= thresholds.alpha:
            direction = "slower" if e.verdict is Verdict.REGRESSION else "faster"
            note = f"{direction}, but not significant across {len(tested)} tests"
            e = replace(e, verdict=Verdict.UNCHANGED, note="; ".join(filter(None, (note, e.note))))
        out[i] = e
    return tuple(out)


def _geomeans(entries: tuple[Entry, ...]) -> tuple[GeoMean, ...]:
    groups: dict[tuple[str, Mode], list[float]] = {}
    for e in entries:
        if e.ratio is not None and e.verdict is not Verdict.NOT_COMPARED:
            groups.setdefault((e.device, e.mode), []).append(e.ratio)
    mode_order = {m: i for i, m in enumerate(Mode)}
    out = []
    ordered = sorted(groups.items(), key=lambda kv: (kv[0][0], mode_order[kv[0][1]]))
    for (device, mode), ratios in ordered:
        g = stats.geometric_mean(ratios)
        if g is not None:
            out.append(GeoMean(device=device, mode=mode, ratio=g, count=len(ratios)))
    return tuple(out)


def _device_kinds(run: Run) -> str | None:
    devices = run.environment.get("devices") or []
    kinds = sorted({f"{d.get('label')}={d.get('kind')}" for d in devices})
    return ", ".join(kinds) or None


_ENV_FIELDS: tuple[tuple[str, Any], ...] = (
    ("host", lambda r: r.environment.get("host")),
    ("machine", lambda r: r.environment.get("machine")),
    ("cpu", lambda r: r.environment.get("cpu")),
    ("cpu_count", lambda r: r.environment.get("cpu_count")),
    ("cpu_affinity_count", lambda r: r.environment.get("cpu_affinity_count")),
    ("os", lambda r: r.environment.get("os")),
    ("python", lambda r: r.environment.get("python")),
    ("backend", lambda r: r.environment.get("backend")),
    ("devices", _device_kinds),
    ("x64", lambda r: r.environment.get("x64")),
)


def environment_differences(base: Run, new: Run) -> tuple[EnvDifference, ...]:
    """Fields of the environment and the sampling configuration that differ.

    Library versions (jax, jaxlib, numpy, …), host, machine, CPU, devices, the x64 flag,
    XLA/JAX environment variables and the sampling plan are compared; git state is not
    (a different commit is the point of a comparison).
    """
    diffs = [
        EnvDifference(name=name, base=get(base), new=get(new))
        for name, get in _ENV_FIELDS
        if get(base) != get(new)
    ]
    bv = base.environment.get("versions") or {}
    nv = new.environment.get("versions") or {}
    for name in sorted(set(bv) | set(nv)):
        if bv.get(name) != nv.get(name):
            diffs.append(EnvDifference(name=name, base=bv.get(name), new=nv.get(name)))
    be = base.environment.get("env") or {}
    ne = new.environment.get("env") or {}
    for name in sorted(set(be) | set(ne)):
        if be.get(name) != ne.get(name):
            diffs.append(EnvDifference(name=f"${name}", base=be.get(name), new=ne.get(name)))
    bc, nc = _flat(base.config), _flat(new.config)
    for name in sorted(set(bc) | set(nc)):
        if name in ("sizes", "modes", "devices", "seed") or name.startswith("pooled."):
            # what ran, or how runs were pooled: not how they were measured
            continue
        if bc.get(name) != nc.get(name):
            diffs.append(EnvDifference(name=f"config.{name}", base=bc.get(name), new=nc.get(name)))
    return tuple(diffs)


def _flat(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


#: A run of one side whose level across the suite is this many times that of its fastest
#: sibling run was disturbed by the machine (see `run_levels`); 0 keeps every run.
DISTURBED_FACTOR = 1.15

#: Fewest cases two runs must share before their levels are compared at all.
_MIN_CASES_FOR_LEVELS = 5


def run_levels(runs: Sequence[Run]) -> list[float] | None:
    """Each run's speed level: the geometric mean, over the case × modes every run measured,
    of its median ÷ the median of all runs' medians. Runs of the same code differ in level
    only by the machine's state; None when they share fewer than five cases."""
    medians = [
        {(m.case.key, m.mode): m.median_s for m in r.measurements if m.ok and m.median_s}
        for r in runs
    ]
    shared = set.intersection(*(set(d) for d in medians)) if medians else set()
    if len(shared) < _MIN_CASES_FOR_LEVELS:
        return None
    reference = {k: statistics.median(d[k] for d in medians) for k in shared}
    return [
        math.exp(statistics.fmean(math.log(d[k] / reference[k]) for k in shared)) for d in medians
    ]


def _check_disturbed_factor(factor: float) -> None:
    if not (factor == 0 or factor > 1):
        raise ConfigError(
            f"--disturbed-factor is 0 (keep every run) or a factor above 1, got {factor}."
        )


def merge_runs(runs: Sequence[Run], *, disturbed_factor: float = DISTURBED_FACTOR) -> Run:
    """Pool several runs of the same code into one, for rounds that alternate base and new.

    Samples of the same case × mode are concatenated (they are seconds per call, so
    different calls-per-sample counts pool fine). A run whose level across the suite
    (`run_levels`) is more than `disturbed_factor` times its fastest sibling's was slowed
    by the machine as a whole (a busy neighbour for a minute: 7 of 72 runs on a 2-vCPU VM,
    at 1.15–1.42×, while undisturbed siblings stayed within 1.13×); its samples are left
    out and the merged run's `config["pooled"]` says so. Every run's cold compiles pool into
    `compile_repeats_s`, whose median is what `compare` judges; a case that failed in any
    run counts as failed. Environment and configuration come from the first run. One run
    is returned unchanged.

    Raises:
        ValueError: `runs` is empty.
        ConfigError: `disturbed_factor` is neither 0 nor above 1.
    """
    if not runs:
        raise ValueError("no runs to merge")
    _check_disturbed_factor(disturbed_factor)
    if len(runs) == 1:
        return runs[0]
    levels = run_levels(runs) if disturbed_factor > 0 else None
    fastest = min(levels) if levels else 1.0
    disturbed = {i for i, level in enumerate(levels or ()) if level > fastest * disturbed_factor}
    groups: dict[tuple[CaseKey, Mode], list[tuple[int, Measurement]]] = {}
    for i, run in enumerate(runs):
        for m in run.measurements:
            groups.setdefault((m.case.key, m.mode), []).append((i, m))
    merged = []
    for pairs in groups.values():
        ms = [m for _, m in pairs]
        failed = next((m for m in ms if m.failed), None)
        if failed is not None:
            merged.append(failed)
            continue
        ok = [m for m in ms if m.ok]
        if not ok:
            merged.append(ms[0])
            continue
        timed = sorted((c, i) for i, m in enumerate(ok) if (c := _compile_s(m)) is not None)
        keeper = ok[timed[(len(timed) - 1) // 2][1]] if timed else ok[0]
        kept = [m for i, m in pairs if m.ok and i not in disturbed] or ok
        samples = tuple(x for m in kept for x in m.samples_s)
        counts = tuple(c for m in kept for c in (m.run_sample_counts or (len(m.samples_s),)))
        if keeper.compile is not None and timed:
            # Every run's cold compiles count, so the judged figure is their median.
            repeats = tuple(
                x
                for m in ok
                if m.compile is not None
                for x in (m.compile.compile_repeats_s or (_compile_s(m),))
                if x is not None
            )
            keeper = replace(keeper, compile=replace(keeper.compile, compile_repeats_s=repeats))
        merged.append(replace(keeper, samples_s=samples, run_sample_counts=counts))
    first = runs[0]
    pooled = {
        "runs": [r.run_id for r in runs],
        "excluded": [
            {"run_id": runs[i].run_id, "level": (levels or [])[i] / fastest}
            for i in sorted(disturbed)
        ],
    }
    return replace(
        first,
        run_id=f"{first.run_id}+{len(runs) - 1}",
        finished_at=runs[-1].finished_at,
        complete=all(r.complete for r in runs),
        config={**first.config, "pooled": pooled},
        measurements=tuple(merged),
    )


@dataclass(frozen=True)
class PoolingNote:
    """One line on how a side's runs were pooled; `left_out` when it drops a run."""

    text: str
    left_out: bool = False


def pooling_notes(run: Run, side: str) -> tuple[PoolingNote, ...]:
    """Lines saying how a side was pooled and which runs were left out, and why."""
    pooled = run.config.get("pooled")
    if not isinstance(pooled, Mapping):
        return ()
    notes = [PoolingNote(f"{side}: {len(pooled.get('runs', ()))} runs pooled")]
    for x in pooled.get("excluded", ()):
        notes.append(
            PoolingNote(
                f"{side}: run {x['run_id']} left out: {x['level']:.2f}× slower across the suite "
                "than its fastest sibling run of the same code (the machine was disturbed)",
                left_out=True,
            )
        )
    return tuple(notes)


def _run_test_notes(entries: tuple[Entry, ...], prior: float | None) -> tuple[PoolingNote, ...]:
    """A line saying that run time was tested run by run, on how many runs, and against
    what typical spread; it warns when a side has too few runs for the test to have power."""
    run_tested = [e for e in entries if e.test is SignificanceTest.RUNS]
    if not run_tested:
        return ()
    n_base = max(len(e.base.run_medians_s) for e in run_tested if e.base)
    n_new = max(len(e.new.run_medians_s) for e in run_tested if e.new)
    typical = f"{math.expm1(math.sqrt(prior)):.1%}" if prior is not None else "unknown"
    text = (
        f"run time tested run by run: a t-test on each run's median ({n_base} base vs "
        f"{n_new} new runs), each case's spread shrunk toward the suite's typical "
        f"run-to-run spread of {typical}, and Mann–Whitney on the samples"
    )
    if min(n_base, n_new) < MIN_RUNS_PER_SIDE:
        text += (
            f"; with fewer than {MIN_RUNS_PER_SIDE} runs on a side it finds only large "
            "changes: measure 4 per side"
        )
    return (PoolingNote(text),)


def _commit(run: Run) -> str | None:
    git = run.environment.get("git") or {}
    commit = git.get("commit")
    if not commit:
        return None
    return f"{str(commit)[:12]}{' dirty' if git.get('dirty') else ''}"


def compare(
    base: Run,
    new: Run,
    *,
    threshold: float = 1.10,
    alpha: float = 0.01,
    compile_threshold: float = 1.25,
    compile_floor_s: float = 0.020,
    compile_gates: bool = True,
    p_adjust: str = "bh",
) -> Comparison:
    """Compare a new run against a base run, case by case and mode by mode.

    Measurements are matched by workload, size, device, dtype and mode. Run time regresses
    when the new/base ratio exceeds `threshold` and the change is significant at `alpha`
    (after `p_adjust` over all timing tests, see `adjust_for_multiplicity`): by the
    two-sided Mann–Whitney U test on the raw samples and, when either side pools
    several runs (`merge_runs`), also a t-test on each run's median (`compare_runs`). Too
    few samples to ever reach `alpha` give "inconclusive", never a regression. Jit compile
    time (trace + lower + compile) regresses when it grows by more than
    `compile_threshold` and by more than `compile_floor_s` seconds; with
    `compile_gates=False` it is reported but does not fail the gate. A case that was ok
    and now errors or mismatches is "now failing".

    Returns:
        A frozen Comparison; `has_regression` is what a CI gate exits on.

    Raises:
        ConfigError: a threshold or alpha out of range.
    """
    thresholds = Thresholds(
        threshold=threshold,
        alpha=alpha,
        compile_threshold=compile_threshold,
        compile_floor_s=compile_floor_s,
        compile_gates=compile_gates,
        p_adjust=p_adjust,
    )
    base_by_key = {(m.case.key, m.mode): m for m in base.measurements}
    new_keys = [(m.case.key, m.mode) for m in new.measurements]
    new_by_key = dict(zip(new_keys, new.measurements, strict=True))
    prior = stats.typical_run_variance(
        [
            spread
            for k, m in new_by_key.items()
            if (b := base_by_key.get(k)) is not None
            and b.ok
            and m.ok
            and (spread := run_spread_of(b, m)) is not None
        ]
    )
    entries = [
        compare_measurements(
            base_by_key.get(k), new_by_key[k], thresholds, run_prior_variance=prior
        )
        for k in dict.fromkeys(new_keys)
    ]
    entries += [
        compare_measurements(m, None, thresholds)
        for k, m in base_by_key.items()
        if k not in new_by_key
    ]
    result = adjust_for_multiplicity(tuple(entries), thresholds)
    return Comparison(
        base_run_id=base.run_id,
        new_run_id=new.run_id,
        thresholds=thresholds,
        entries=result,
        geomeans=_geomeans(result),
        environment_differences=environment_differences(base, new),
        base_commit=_commit(base),
        new_commit=_commit(new),
        pooling=pooling_notes(base, "base")
        + pooling_notes(new, "new")
        + _run_test_notes(result, prior),
    )


__all__ = [
    "DISTURBED_FACTOR",
    "FAILING_VERDICTS",
    "P_ADJUST_METHODS",
    "RUN_PRIOR_DF",
    "Comparison",
    "CompileChange",
    "Entry",
    "EnvDifference",
    "GeoMean",
    "PoolingNote",
    "SignificanceTest",
    "Thresholds",
    "TimingResult",
    "Verdict",
    "adjust_for_multiplicity",
    "compare",
    "compare_compile",
    "compare_measurements",
    "compare_runs",
    "compare_timing",
    "environment_differences",
    "load_side",
    "merge_runs",
    "pooling_notes",
    "run_levels",
    "run_spread_of",
]


def load_side(path: str | os.PathLike[str], *, disturbed_factor: float = DISTURBED_FACTOR) -> Run:
    """One run file, or a folder of run files (rounds of one side) pooled into one run
    (`merge_runs`, which leaves out runs the machine disturbed as a whole).

    A folder may hold the run files or be a `--out` folder with them under `runs/`.

    Raises:
        ConfigError: a bad `disturbed_factor` (before any file is read).
        ResultsFormatError: a missing, invalid or foreign file, or an empty folder.
    """
    _check_disturbed_factor(disturbed_factor)
    path = Path(path)
    if not path.is_dir():
        return load_run(path)
    files = sorted(path.glob("*.json")) or sorted((path / "runs").glob("*.json"))
    if not files:
        raise ResultsFormatError(
            f"folder {str(path)!r} holds no run JSON files (*.json or runs/*.json); "
            "pass a run file or the --out folder of `jitbench run`."
        )
    return merge_runs([load_run(f) for f in files], disturbed_factor=disturbed_factor)
