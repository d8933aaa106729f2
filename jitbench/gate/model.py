"""The gate's result model: verdicts, thresholds, one `Entry` per case × mode and the
`Comparison` that holds them, with its JSON form (`Comparison.to_dict`).

Nothing here judges anything: `judge` fills these frozen types in, renderers read them.
"""

from __future__ import annotations

import enum
import json
import math
import numbers
from dataclasses import dataclass
from typing import Any

from jitbench.errors import ConfigError
from jitbench.gate.program import ProgramChange
from jitbench.results import Measurement, Mode
from jitbench.results.analysis import time_ratio

COMPARISON_SCHEMA_ID = "jitbench.comparison"
# 1.1: compile count and p_value; 1.2: each entry's base_s/new_s (the figures its ratio
# is of) and each pooling note's "mixed"; 1.3: that flag is "warns" (it marks every note
# that warns, not only runs of mixed settings); 1.4: "inconclusive", why the gate could not
# vouch for the new run (untestable changes, a partial run on either side); 1.5: each
# entry's "program" (changed, moved, regressed) and the program thresholds; 1.6: a
# compile verdict "inconclusive" (too few cold compiles to test) and "compile_untested";
# 1.7: each entry's base_median_s/new_median_s dropped (the pooled samples' medians, which
# no table shows): base_s/new_s, the times the runs show, are its one figure a side
COMPARISON_SCHEMA_VERSION = "1.7"

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
    # Both sides sampled in the same rounds (`jitbench ab`): Wilcoxon signed-rank
    # on the per-round log ratios (`gate.paired`).
    PAIRED = "paired rounds: signed-rank"


class GateOutcome(str, enum.Enum):
    """What a gate concludes, the one rule `compare`, `ab` and the
    pytest plugin share (`Comparison.outcome`); the CLI maps it to its exit code."""

    PASS = "pass"  # exit 0
    FAILED = "failed"  # exit 1: a regression or a case now failing
    NOTHING_COMPARED = "nothing compared"  # exit 2: it checked nothing
    INCONCLUSIVE = "inconclusive"  # exit 4: it cannot vouch for the new run


#: Multiple-comparison adjustments of the timing p-values ("bh": Benjamini–Hochberg).
P_ADJUST_METHODS = ("bh", "none")

#: Verdicts that make the gate fail (exit 1).
FAILING_VERDICTS = frozenset({Verdict.REGRESSION, Verdict.NOW_FAILING})


@dataclass(frozen=True, kw_only=True)
class Thresholds:
    """What counts as a change: the gate's options, validated when constructed and with
    their defaults written here once (the CLI's defaults are read from this class).

    Attributes:
        threshold: run-time factor; new/base median beyond it (or below 1/threshold) is large.
        alpha: significance level of the two-sided Mann–Whitney U test on the raw samples
            (and, with pooled runs, of the t-test on the runs' medians).
        p_adjust: "bh" adjusts the p-values for the number of timing tests in the comparison
            (Benjamini–Hochberg, which bounds the chance of any false alarm in an A/A
            comparison by `alpha`); "none" tests each case at `alpha` on its own.
        compile_threshold: compile-time factor (jit trace + lower + compile seconds).
        compile_floor_s: a compile change must also exceed this many seconds in absolute terms.
        compile_gates: whether a compile-time regression fails the gate (it is always reported).
        program_gates: whether a compiled-program regression fails the gate (`--fail-on
            program`; always reported): more bytes accessed or flops than
            `program_tolerance` allows, more temp or peak memory than `memory_tolerance`,
            new recompiles during timing, or more fusions.

    Raises:
        ConfigError: an option of the wrong type, out of range, NaN or infinite; the message
            names its command-line flag, shows the value and gives a value that works.
    """

    threshold: float = 1.10
    alpha: float = 0.01
    compile_threshold: float = 1.25
    compile_floor_s: float = 0.020
    compile_gates: bool = True
    p_adjust: str = "bh"
    program_gates: bool = False
    program_tolerance: float = 0.05
    memory_tolerance: float = 0.10

    def __post_init__(self) -> None:
        if not (isinstance(self.p_adjust, str) and self.p_adjust in P_ADJUST_METHODS):
            raise ConfigError(
                f"--p-adjust is one of {', '.join(P_ADJUST_METHODS)}, got {self.p_adjust!r}."
            )
        if not (_is_real(self.threshold) and self.threshold > 1 and math.isfinite(self.threshold)):
            raise ConfigError(
                "--threshold is a finite factor above 1 such as 1.10 (10 % slower), "
                f"got {self.threshold!r}."
            )
        if not (_is_real(self.alpha) and 0 < self.alpha < 1):
            raise ConfigError(
                f"--alpha is a significance level between 0 and 1 such as 0.01, got {self.alpha!r}."
            )
        if not (
            _is_real(self.compile_threshold)
            and self.compile_threshold > 1
            and math.isfinite(self.compile_threshold)
        ):
            raise ConfigError(
                "--compile-threshold is a finite factor above 1 such as 1.25, "
                f"got {self.compile_threshold!r}."
            )
        if not (
            _is_real(self.compile_floor_s)
            and self.compile_floor_s >= 0
            and math.isfinite(self.compile_floor_s)
        ):
            raise ConfigError(
                "--compile-floor is a finite number of seconds >= 0 such as 0.02, "
                f"got {self.compile_floor_s!r}."
            )
        for name, tol in (
            ("program_tolerance", self.program_tolerance),
            ("memory_tolerance", self.memory_tolerance),
        ):
            if not (_is_real(tol) and tol >= 0 and math.isfinite(tol)):
                raise ConfigError(f"{name} is a fraction >= 0 such as 0.05, got {tol!r}.")
        if not isinstance(self.program_gates, bool):
            raise ConfigError(f"program_gates is True or False, got {self.program_gates!r}.")
        if not isinstance(self.compile_gates, bool):
            raise ConfigError(
                "--compile-gate/--no-compile-gate is on or off (compile_gates=True or False), "
                f"got {self.compile_gates!r}."
            )


def _is_real(value: object) -> bool:
    """A real number (int, float, NumPy scalar) that is not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


@dataclass(frozen=True, kw_only=True)
class CompileChange:
    """Cold jit compile time (trace + lower + compile seconds) of one case, base vs new.

    `base_s`/`new_s` are each side's judged figure (the median of its cold compiles).
    Interleaved comparisons measure several cold compiles per side in pairs: `count` pairs,
    `paired_ratio` the median of their ratios and `p_value` a t-test on their logs. Pooled
    sides with enough cold compiles for Mann–Whitney to reach alpha: `count` the fewer
    side's compiles and `p_value` that test's (`judge.compare_compile`). Either p-value is
    adjusted over the comparison's compile tests; without a test those stay unset.
    """

    base_s: float
    new_s: float
    # REGRESSION, IMPROVEMENT, UNCHANGED, or INCONCLUSIVE: beyond the factor and floor,
    # but too few cold compiles a side to test (reported, never failing)
    verdict: Verdict
    count: int = 1
    paired_ratio: float | None = None
    p_value: float | None = None

    @property
    def ratio(self) -> float:
        if self.paired_ratio is not None:
            return self.paired_ratio
        return self.new_s / self.base_s if self.base_s > 0 else math.inf

    @property
    def delta_s(self) -> float:
        return self.new_s - self.base_s


@dataclass(frozen=True, kw_only=True)
class Entry:
    """One case × mode present in either run, with its verdict.

    Timing fields are None unless both sides are ok with samples. `base_s`/`new_s` are
    the times per call each run shows (`results.analysis`: a JAX mode's is NumPy's time ÷
    its speedup), None for a side that is missing or not ok. `ratio` is new / base of
    those times (above 1 is slower), except with paired rounds (`jitbench ab`), which
    take it round by round; `ratio_low`/`ratio_high` its 95 % CI; `p_value` the two-sided
    p-value of `test` (with pooled runs, the larger of the run t-test's and
    Mann–Whitney's) and `p_adjusted` the same after the comparison-wide adjustment (the
    one the verdict used). With several processes a side, the t-test is on each
    process's part of the shown time (`ModeFigure.shown_process_times`), whose CI it
    gives; with one, the interval is the bootstrap CI of the ratio of the medians, moved
    to the ratio of the shown times.
    """

    workload: str
    size: str
    device: str
    dtype: str
    mode: Mode
    verdict: Verdict
    base: Measurement | None = None
    new: Measurement | None = None
    base_s: float | None = None
    new_s: float | None = None
    ratio: float | None = None
    ratio_low: float | None = None
    ratio_high: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    test: SignificanceTest | None = None
    compile: CompileChange | None = None
    note: str = ""
    compile_gates: bool = True
    #: the compiled program's verdict (jit and sharded modes, schema 1.8 on), else None
    program: ProgramChange | None = None
    program_gates: bool = False

    @property
    def key(self) -> CaseKey:
        return (self.workload, self.size, self.device, self.dtype)

    @property
    def shown_ratio(self) -> float | None:
        """new / base of the times the runs show (`results.analysis.time_ratio`, the
        figure a comparison page quotes where the gate judged nothing): `ratio` itself
        unless paired rounds decide (`jitbench ab`). None without both times."""
        return time_ratio(self.base_s, self.new_s)

    @property
    def p_judged(self) -> float | None:
        """The p-value the verdict was reached with (adjusted when there is one)."""
        return self.p_adjusted if self.p_adjusted is not None else self.p_value

    @property
    def label(self) -> str:
        return f"{self.workload}[{self.size}] {self.device} {self.dtype} {self.mode.value}"

    @property
    def checked(self) -> bool:
        """Whether the gate judged this entry: a timing or failure verdict on both sides,
        or a program verdict that gates. A skipped or unsampled side checks nothing."""
        if self.verdict in (Verdict.NEW, Verdict.REMOVED):
            return False
        if self.verdict is not Verdict.NOT_COMPARED:
            return True
        return self.program_gates and self.program is not None

    @property
    def fails_gate(self) -> bool:
        """True for a run-time regression, a case now failing, or a compile regression."""
        return (
            self.verdict in FAILING_VERDICTS
            or (self.program_gates and self.program is not None and self.program.regressed)
            or (
                self.compile_gates
                and self.compile is not None
                and self.compile.verdict is Verdict.REGRESSION
            )
        )


@dataclass(frozen=True, kw_only=True)
class GeoMeanRatio:
    """Geometric mean of new/base median ratios over the cases compared in one mode/device:
    above 1 is slower. Not a speedup (`jitbench.report.data.GeoMeanSpeedup` is one:
    NumPy ÷ mode)."""

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


@dataclass(frozen=True)
class PoolingNote:
    """One line on how a side's runs were pooled; `left_out` when it drops a run, `warns`
    when the side is not what it seems otherwise (a run measured unlike the side's first:
    other commit, settings, versions or machine; a run given in several files)."""

    text: str
    left_out: bool = False
    warns: bool = False

    @property
    def stands_out(self) -> bool:
        """Whether a reader must see it: the side is not what it seems."""
        return self.left_out or self.warns


@dataclass(frozen=True, kw_only=True)
class Comparison:
    """The result of comparing two runs. `entries` follow the new run's order, then removed."""

    base_run_id: str
    new_run_id: str
    #: Runs on both sides (by id): a side compared with itself in part.
    shared_runs: tuple[str, ...] = ()
    thresholds: Thresholds
    entries: tuple[Entry, ...]
    geomeans: tuple[GeoMeanRatio, ...] = ()  # JSON key "geomeans"
    environment_differences: tuple[EnvDifference, ...] = ()
    base_commit: str | None = None
    new_commit: str | None = None
    pooling: tuple[PoolingNote, ...] = ()  # how folders of runs were pooled (`merge_runs`)
    #: A side that is a partial run (interrupted: `complete` false), one line each: the
    #: cases it did not measure were not checked.
    incomplete: tuple[str, ...] = ()

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
    def warnings(self) -> tuple[str, ...]:
        """What makes this comparison say less than it seems, one line each: a run
        compared with itself, or runs on both sides (`nothing_compared` is worse)."""
        found = []
        if self.base_run_id == self.new_run_id:
            found.append(
                f"base and new are the same run ({self.base_run_id}), so nothing can have "
                "changed; compare the run under test with a baseline run."
            )
        elif self.shared_runs:
            found.append(
                f"base and new both hold run(s) {', '.join(self.shared_runs)}, so they are "
                "partly the same samples and a change is harder to see; keep each run on "
                "one side."
            )
        if untested := self.compile_untested:
            found.append(
                f"{len(untested)} compile-time change(s) beyond ×"
                f"{self.thresholds.compile_threshold:g} were not tested: a side has too few "
                "cold compiles for a test (one each without pooled runs), so they do not "
                "fail the gate; pool several runs a side, or measure with `jitbench ab`, "
                "to test them."
            )
        return tuple(found)

    @property
    def nothing_compared(self) -> str | None:
        """Why nothing was compared, else None: no case × mode on both sides, or none of
        those in common judged (each skipped or ok without samples on a side, and no
        gating program verdict). A gate that compared nothing has checked nothing: the
        CLI exits 2, not 0."""
        common = [e for e in self.entries if e.base is not None and e.new is not None]
        # JAX code is what a gate checks: NumPy alone compared is nothing compared.
        jax = [e for e in common if e.mode is not Mode.NUMPY]
        if any(e.checked for e in jax or common):
            return None
        if common:
            what = f"{len(jax)} JAX case(s) and mode(s)" if jax else f"{len(common)} case(s)"
            done = "only NumPy was" if any(e.checked for e in common) else "nothing was"
            first = next((e for e in jax or common if e.note), None)
            why = f"; {first.label}: {first.note}" if first is not None else ""
            return (
                f"none of the {what} in common was timed on both sides (skipped, no samples "
                f"or a zero median{why}), so {done} compared; measure them with samples on "
                "both sides (or gate on programs: --fail-on program)."
            )
        base_n = sum(1 for e in self.entries if e.base is not None)
        new_n = sum(1 for e in self.entries if e.new is not None)
        return (
            f"base ({base_n} measurement(s)) and new ({new_n}) have no case and mode in "
            "common, so nothing was compared; measure the same workloads, sizes, devices "
            "and dtypes on both sides."
        )

    @property
    def inconclusive(self) -> tuple[str, ...]:
        """Why the gate cannot vouch for the new run, one line each (empty when it can): a
        partial run on either side, large changes too few samples could test. A CI gate
        must not read such a comparison as a pass (the CLI exits 4)."""
        found = list(self.incomplete)
        if untested := self.count(Verdict.INCONCLUSIVE):
            found.append(
                f"{untested} large change(s) could not be tested with so few samples; rerun "
                "both sides with more samples (--min-samples)."
            )
        return tuple(found)

    def outcome(self, *, allow_inconclusive: bool = False) -> GateOutcome:
        """The gate's conclusion: nothing compared first (it checked nothing), then a
        regression, then inconclusive (a pass only with `allow_inconclusive`)."""
        if self.nothing_compared is not None:
            return GateOutcome.NOTHING_COMPARED
        if self.has_regression:
            return GateOutcome.FAILED
        if self.inconclusive and not allow_inconclusive:
            return GateOutcome.INCONCLUSIVE
        return GateOutcome.PASS

    @property
    def compile_regressions(self) -> tuple[Entry, ...]:
        return tuple(
            e for e in self.entries if e.compile and e.compile.verdict is Verdict.REGRESSION
        )

    @property
    def compile_untested(self) -> tuple[Entry, ...]:
        """Compile changes beyond the factor and floor that too few cold compiles a side
        could test (one a side without pooled runs or repeats): reported, not gating."""
        return tuple(
            e for e in self.entries if e.compile and e.compile.verdict is Verdict.INCONCLUSIVE
        )

    @property
    def compile_improvements(self) -> tuple[Entry, ...]:
        return tuple(
            e for e in self.entries if e.compile and e.compile.verdict is Verdict.IMPROVEMENT
        )

    def to_json(self) -> str:
        """The comparison as strict JSON text (what `jitbench compare --json` writes)."""
        return json.dumps(self.to_dict(), indent=1, allow_nan=False)

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
                "program_gates": self.thresholds.program_gates,
                "program_tolerance": self.thresholds.program_tolerance,
                "memory_tolerance": self.thresholds.memory_tolerance,
            },
            "pooling": [
                {"text": n.text, "left_out": n.left_out, "warns": n.warns} for n in self.pooling
            ],
            "has_regression": self.has_regression,
            "inconclusive": list(self.inconclusive),
            "warnings": [*self.warnings, *filter(None, [self.nothing_compared])],
            "regressed_workloads": list(self.regressed_workloads),
            "counts": {v.value: self.count(v) for v in Verdict},
            "compile_regressions": len(self.compile_regressions),
            "compile_untested": len(self.compile_untested),
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
        "base_s": e.base_s,
        "new_s": e.new_s,
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
            "count": e.compile.count,
            "p_value": e.compile.p_value,
        },
        "note": e.note,
        "program": None
        if e.program is None
        else {
            "changed": e.program.changed,
            "moved": list(e.program.moved),
            "regressed": e.program.regressed,
        },
    }
