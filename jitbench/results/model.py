"""Result types: Case, Measurement, Run and what they carry.

Results are frozen and keep every raw sample; summaries are derived from the samples, so an
old file can always be re-analysed. Their JSON form lives in `jitbench.results.codec`.
"""

from __future__ import annotations

import datetime as _dt
import enum
import itertools
import math
import secrets
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import Any

from jitbench import stats
from jitbench.config import Mode, RunConfig
from jitbench.errors import ConfigError

SCHEMA_ID = "jitbench.run"
SCHEMA_VERSION = "1.8"
#: From this schema version on, the modes of a case are sampled in lockstep rounds.
PAIRED_SINCE = (1, 3)


class Status(str, enum.Enum):
    """Outcome of one measurement."""

    OK = "ok"
    ERROR = "error"
    MISMATCH = "mismatch"
    SKIPPED = "skipped"
    TIMEOUT = "timeout"


class Severity(str, enum.Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


FAILED_STATUSES = frozenset({Status.ERROR, Status.MISMATCH, Status.TIMEOUT})


@dataclass(frozen=True, kw_only=True)
class Case:
    """One workload × size × device × dtype. `key` identifies it across runs."""

    workload: str
    size: str
    device: str
    dtype: str
    params: Mapping[str, Any] = field(default_factory=dict)
    platform: str = ""
    device_kind: str = ""
    input_elements: int | None = None
    input_bytes: int | None = None
    # The dtype of each argument as the NumPy side got it, e.g. {"A": "float32",
    # "idx": "int64"}; None in files written before it was recorded.
    input_dtypes: Mapping[str, str] | None = None

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.workload, self.size, self.device, self.dtype)

    @property
    def label(self) -> str:
        return f"{self.workload}[{self.size}] {self.device} {self.dtype}"


@dataclass(frozen=True, kw_only=True)
class Diagnostic:
    """A pitfall or caveat jitbench noticed. `code` is stable across versions."""

    code: str
    severity: Severity
    message: str
    hint: str = ""


@dataclass(frozen=True, kw_only=True)
class ErrorInfo:
    """An exception raised by a workload, kept as text."""

    type: str
    message: str
    hint: str = ""


#: HLO opcodes (and their -start/-done halves) that move data between devices.
COLLECTIVES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
    "collective-broadcast",
)


@dataclass(frozen=True, kw_only=True)
class CompileInfo:
    """Cold compilation figures of one JAX mode. Fields a backend cannot give are None.

    For jit, `first_call_s` is the cold first call (caches cleared: trace + lower + compile
    + run), and `trace_s`, `lower_s` and `compile_s` are the seconds JAX's compile events
    give each stage of that one call (the program is compiled once; earlier jitbench
    versions timed the AOT stages in a second compile of their own). For eager, only
    `first_call_s` and `compile_count` are set. `compile_count` counts
    backend compiles seen during the cold first call; `timed_compile_count` counts those
    seen during warm-up-free timed sampling (should be zero). `compile_repeats_s` holds
    trace + lower + compile seconds of every cold compile measured when there were several
    (a run with sampling rounds repeats the cold first call after the last round); the stage
    figures are then those of the repeat with the median total.
    """

    first_call_s: float | None = None
    compile_count: int = 0
    trace_s: float | None = None
    lower_s: float | None = None
    compile_s: float | None = None
    jaxpr_eqn_count: int | None = None
    flops: float | None = None
    transcendentals: float | None = None
    bytes_accessed: float | None = None
    memory: Mapping[str, int] | None = None
    hlo_fingerprint: str | None = None
    timed_compile_count: int = 0
    while_loop_count: int | None = None
    compile_repeats_s: tuple[float, ...] = ()
    #: The optimised HLO modulo names and metadata, hashed: equal for the same program
    #: whatever its function, variables or source lines are called (schema 1.8 on).
    program_fingerprint: str | None = None
    #: Instructions of the optimised HLO by opcode (every computation, fused ones too).
    hlo_opcodes: Mapping[str, int] | None = None
    #: Machine code the backend generated, where it says (None on JAX's CPU backend).
    code_bytes: int | None = None
    #: The optimised HLO modulo names and metadata as text (what the fingerprint hashes),
    #: held in memory only: `results.files.save_run` stores it compressed beside the run
    #: file (`programs_path`), never in the run's JSON; None once loaded from a file.
    program_text: str | None = field(default=None, compare=False, repr=False)

    @property
    def fusion_count(self) -> int | None:
        """Fusions in the optimised program (each a kernel on a GPU)."""
        return None if self.hlo_opcodes is None else self.hlo_opcodes.get("fusion", 0)

    @property
    def custom_call_count(self) -> int | None:
        """Custom calls (library kernels: cuBLAS, LAPACK, …) in the optimised program."""
        return None if self.hlo_opcodes is None else self.hlo_opcodes.get("custom-call", 0)

    @property
    def collective_count(self) -> int | None:
        """Collectives (all-reduce, all-gather, …; sharded mode) in the optimised program."""
        if self.hlo_opcodes is None:
            return None
        return sum(n for op, n in self.hlo_opcodes.items() if op.startswith(COLLECTIVES))

    @property
    def has_loops(self) -> bool:
        """True when the compiled program has while loops: XLA's flops and bytes then
        count each loop body once (per iteration), not per call."""
        return bool(self.while_loop_count)

    @property
    def total_compile_s(self) -> float | None:
        """Trace + lower + compile seconds, or None when the AOT breakdown is missing."""
        parts = (self.trace_s, self.lower_s, self.compile_s)
        if any(p is None for p in parts):
            return None
        return float(sum(p for p in parts if p is not None))


@dataclass(frozen=True)
class TimeSplit:
    """Where a call's time goes, from JAX's profiler trace (`measure.timeline`): median
    seconds per call over `calls` traced calls of the wall time, of the host's dispatch
    (until the last program was handed over) and of the device's execution."""

    calls: int
    wall_s: float
    host_s: float
    device_s: float


@dataclass(frozen=True, kw_only=True)
class ShardingInfo:
    """Where a sharded measurement ran: a mesh of `device_count` devices of the case's
    platform (`mesh_shape`: axis name -> devices along it, whose product is
    `device_count`: checked when built), and how each staged input was placed
    (`split_axes`: input name -> the axis split across the mesh, None replicated)."""

    device_count: int
    mesh_shape: Mapping[str, int]
    split_axes: Mapping[str, int | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Both are recorded (the file keeps the mesh's axes), so they must agree.
        in_mesh = math.prod(self.mesh_shape.values())
        if self.device_count < 1 or in_mesh != self.device_count:
            raise ValueError(
                f"sharding.mesh_shape {dict(self.mesh_shape)} holds {in_mesh} device(s), but "
                f"device_count is {self.device_count}"
            )


@dataclass(frozen=True, kw_only=True)
class Measurement:
    """One case × one mode: status, raw samples (seconds per call) and what was learnt."""

    case: Case
    mode: Mode
    status: Status
    samples_s: tuple[float, ...] = ()
    calls_per_sample: int = 0
    # The inputs' copy to the device (`jax.device_put`) and the output's copy back to the
    # host (jit's cold first output, else eager's), each timed on its own; None where
    # unmeasured (NumPy, a failed mode, files before schema 1.6 for the copy back).
    transfer_s: float | None = None
    transfer_bytes: int | None = None
    transfer_back_s: float | None = None
    transfer_back_bytes: int | None = None
    # The device allocator's high-water mark over the case (`Device.memory_stats()`, GPU
    # and TPU; None on CPU, which keeps no statistics), above what was resident before
    # it. JAX cannot reset the mark, so a case that stays below an earlier case's gets
    # that mark as an upper bound: `device_peak_exact` is then False.
    device_peak_bytes: int | None = None
    device_peak_exact: bool | None = None
    compile: CompileInfo | None = None
    error: ErrorInfo | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    # Set only on a measurement pooled from several runs (`gate.merge_runs`): how many of
    # `samples_s`, in order, came from each run, so each run's median stays derivable.
    run_sample_counts: tuple[int, ...] = ()
    time_split: TimeSplit | None = None  # `jitbench profile`: host dispatch vs device
    sharding: ShardingInfo | None = None  # sharded mode: the mesh and the inputs' placement

    def __post_init__(self) -> None:
        counts = self.run_sample_counts
        if counts and (sum(counts) != len(self.samples_s) or min(counts) < 1):
            raise ValueError(
                f"run_sample_counts {counts} do not add up to {len(self.samples_s)} samples "
                "of one or more per run"
            )

    @property
    def run_medians_s(self) -> tuple[float, ...]:
        """Median of each pooled run's samples; one median (of all samples) otherwise."""
        if not self.run_sample_counts:
            return (self.median_s,) if self.median_s is not None else ()
        return tuple(statistics.median(part) for part in self.run_parts)

    @property
    def part_counts(self) -> tuple[int, ...]:
        """How many samples each pooled run (process) took; all of them as one otherwise."""
        return self.run_sample_counts or (len(self.samples_s),)

    @property
    def run_parts(self) -> list[tuple[float, ...]]:
        """The samples cut into each pooled run's (process's) share; one part otherwise."""
        ends = list(itertools.accumulate(self.part_counts))
        return [self.samples_s[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]

    @cached_property
    def summary(self) -> stats.Summary | None:
        """Summary statistics of `samples_s`, or None when nothing was sampled."""
        return stats.summarize(self.samples_s) if self.samples_s else None

    @property
    def median_s(self) -> float | None:
        return self.summary.median if self.summary else None

    @property
    def ok(self) -> bool:
        return self.status is Status.OK and bool(self.samples_s)

    @property
    def failed(self) -> bool:
        """An error, a timeout or a mismatch: shown as such, never given a speedup."""
        return self.status in FAILED_STATUSES

    @property
    def failure_text(self) -> str:
        """One line saying why the measurement has no trustworthy result (not escaped)."""
        if self.error is not None:
            first = self.error.message.splitlines()[0] if self.error.message else ""
            return f"{self.status.value}: {self.error.type}: {first}".rstrip(": ")
        if self.diagnostics:  # the reason (an error) before any note
            reason = next(
                (d for d in self.diagnostics if d.severity is Severity.ERROR), self.diagnostics[0]
            )
            return f"{self.status.value}: {reason.message}"
        return self.status.value

    @property
    def hint(self) -> str:
        """The fix to try: the error's hint, else the first diagnostic's, else ''."""
        if self.error is not None and self.error.hint:
            return self.error.hint
        errors = [d for d in self.diagnostics if d.severity is Severity.ERROR]
        return next((d.hint for d in (*errors, *self.diagnostics) if d.hint), "")

    def with_diagnostics(self, extra: Iterable[Diagnostic]) -> Measurement:
        """Return a copy with `extra` diagnostics appended (duplicates by code dropped)."""
        seen = {d.code for d in self.diagnostics}
        added = tuple(d for d in extra if d.code not in seen)
        return replace(self, diagnostics=self.diagnostics + added) if added else self


@dataclass(frozen=True, kw_only=True)
class Selection:
    """One workload a run selected, and the suite file that defines it; `suite` is None
    for a workload not loaded from a file (such a run cannot be resumed)."""

    workload: str
    suite: str | None = None
    #: SHA-256 of the suite file's bytes when the run imported it; None in files written
    #: before it was recorded. A resume refuses a suite file that has changed since.
    suite_sha256: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"workload": self.workload, "suite": self.suite}
        if self.suite_sha256 is not None:
            d["suite_sha256"] = self.suite_sha256
        return d


_SETTINGS_KEYS = frozenset(f.name for f in fields(RunConfig))


@dataclass(frozen=True, kw_only=True)
class RecordedConfig:
    """What a run file records under "config": the settings the run was measured with and
    where the run came from.

    Attributes:
        settings: the RunConfig; None when the file records none this version can read
            (its keys are then kept in `extra`, so the file is written back unchanged).
        selection: the workloads run, to find them again on resume; None when not recorded.
        resumed_at: UTC times at which the run was resumed, oldest first.
        pooled: set by the gate on a run pooled from several (its layout is the gate's).
        extra: keys this version does not know, kept so a newer file is written back whole.

    The JSON form is `to_dict`/`from_dict`; `Run.config_record()` gives that dict.
    """

    settings: RunConfig | None = None
    selection: tuple[Selection, ...] | None = None
    resumed_at: tuple[str, ...] = ()
    pooled: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the settings' keys, then selection, resumed_at, pooled and the
        unknown keys (the layout `jitbench run` has always written)."""
        d: dict[str, Any] = self.settings.to_dict() if self.settings is not None else {}
        if self.selection is not None:
            d["selection"] = [s.to_dict() for s in self.selection]
        if self.resumed_at:
            d["resumed_at"] = list(self.resumed_at)
        if self.pooled is not None:
            d["pooled"] = self.pooled
        d.update(self.extra)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecordedConfig:
        """Read the JSON form. Never raises: what cannot be read is kept in `extra`.

        Settings missing from the file take their defaults (files written before a setting
        existed); a file with none of the settings' keys has `settings` None.
        """
        extra = {k: v for k, v in data.items() if k not in _SETTINGS_KEYS}
        settings = None
        if any(k in data for k in _SETTINGS_KEYS):
            try:
                settings = RunConfig.from_dict(data)
            except ConfigError:  # kept as found; resuming such a run says why it cannot
                extra = dict(data)
        selection = _selection(extra.pop("selection", None))
        if selection is None and "selection" in data:
            extra["selection"] = data["selection"]
        resumed = extra.pop("resumed_at", [])
        if not (isinstance(resumed, list) and all(isinstance(t, str) for t in resumed)):
            extra["resumed_at"], resumed = resumed, []
        pooled = extra.pop("pooled", None)
        if pooled is not None and not isinstance(pooled, Mapping):
            extra["pooled"], pooled = pooled, None
        return cls(
            settings=settings,
            selection=selection,
            resumed_at=tuple(resumed),
            pooled=pooled,
            extra=extra,
        )


def _selection(value: object) -> tuple[Selection, ...] | None:
    """The recorded selection, or None when it is missing or not in the known form."""
    if not isinstance(value, list):
        return None
    entries = []
    for entry in value:
        if not (isinstance(entry, Mapping) and isinstance(entry.get("workload"), str)):
            return None
        suite = entry.get("suite")
        digest = entry.get("suite_sha256")
        entries.append(
            Selection(
                workload=entry["workload"],
                suite=suite and str(suite),
                suite_sha256=digest if isinstance(digest, str) else None,
            )
        )
    return tuple(entries)


def is_cpu_device(label: str) -> bool:
    """Whether a device label ('cpu:0', 'gpu:1') names a CPU: its work is this process's
    CPU time (`SamplingPlan.clock`)."""
    return label.split(":", 1)[0] == "cpu"


def is_host_copy(m: Measurement, of: Measurement) -> bool:
    """Whether NumPy measurement `m` holds no samples but those of `of`, the same
    workload × size × dtype filed under another device: a run measures NumPy, host code,
    once per case and files that series under each device, and a pooled side whose run
    lacked a device holds a share of the series of a device it had. Such a copy is
    evidence already counted."""
    if m.mode is not Mode.NUMPY or of.mode is not Mode.NUMPY or m is of:
        return False
    same_case = (m.case.workload, m.case.size, m.case.dtype) == (
        of.case.workload,
        of.case.size,
        of.case.dtype,
    )
    if not same_case or not m.samples_s:
        return False
    theirs = of.run_parts
    for part in m.run_parts:
        if part not in theirs:
            return False
        theirs.remove(part)
    return True


@dataclass(frozen=True, kw_only=True, repr=False)
class Run:
    """A whole benchmark run: environment, configuration and every measurement.

    `config` may be given in its JSON dict form too (tests build runs that way); it is
    read with `RecordedConfig.from_dict`.
    """

    run_id: str
    started_at: str
    finished_at: str | None
    complete: bool
    environment: Mapping[str, Any]
    config: RecordedConfig = field(default_factory=RecordedConfig)
    measurements: tuple[Measurement, ...]
    schema: str = SCHEMA_ID
    schema_version: str = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if not isinstance(self.config, RecordedConfig):
            object.__setattr__(self, "config", RecordedConfig.from_dict(self.config))

    def __repr__(self) -> str:
        """One line, not the samples: 'Run(20261126T…-f00e30, 40 cases, 120 measurements,
        complete)'. `jitbench.analyse(run)` gives its figures; `jitbench report` its tables."""
        state = "complete" if self.complete else "incomplete"
        return (
            f"Run({self.run_id}, {len(self.cases())} cases, {len(self.measurements)} "
            f"measurements, {state})"
        )

    def config_record(self) -> dict[str, Any]:
        """The run's "config" as the untyped dict of the JSON file (settings, selection,
        resumed_at, pooled), for code that reads the dict form."""
        return self.config.to_dict()

    def cases(self) -> list[Case]:
        """Distinct cases in first-seen order."""
        seen: dict[tuple[str, str, str, str], Case] = {}
        for m in self.measurements:
            seen.setdefault(m.case.key, m.case)
        return list(seen.values())

    def get(self, case: Case | tuple[str, str, str, str], mode: Mode | str) -> Measurement | None:
        """The measurement of one case and mode (the first, should there be several).

        `case` is a `Case` (as `cases()` and `Measurement.case` hand them out) or its
        `key`; `mode` a `Mode` or its name ("numpy", "eager", "jit", "sharded"). None
        where the run has no such measurement.

        Raises:
            ValueError: `mode` names no mode.
        """
        key = case.key if isinstance(case, Case) else tuple(case)
        return self._by_key.get((key, mode if isinstance(mode, Mode) else Mode(mode)))  # type: ignore[arg-type]

    @cached_property
    def _by_key(self) -> dict[tuple[tuple[str, str, str, str], Mode], Measurement]:
        # A dict built once: readers call `get` per case and mode, and a scan each time
        # made a report of 15,000 workloads quadratic (minutes).
        index: dict[tuple[tuple[str, str, str, str], Mode], Measurement] = {}
        for m in self.measurements:
            index.setdefault((m.case.key, m.mode), m)
        return index

    @property
    def paired(self) -> bool:
        """Whether sample i of every mode of a case comes from the same round (schema 1.3
        on: lockstep rounds), so speedups can be taken round by round."""
        try:
            version = tuple(int(x) for x in self.schema_version.split(".")[:2])
        except ValueError:
            return False
        return version >= PAIRED_SINCE

    def device_peak(self, case: Case | tuple[str, str, str, str]) -> tuple[int, bool] | None:
        """(bytes, exact) of the case's device allocator peak (`case`: a `Case` or its
        key), recorded alike on each of its JAX modes (`Measurement.device_peak_bytes`);
        None where none was recorded."""
        for mode in (Mode.JIT, Mode.EAGER):
            m = self.get(case, mode)
            if m is not None and m.device_peak_bytes is not None:
                return m.device_peak_bytes, bool(m.device_peak_exact)
        return None

    @property
    def matmul_precision(self) -> str:
        """JAX's default matmul precision the run had ("default", "highest", ...); runs
        recorded before the field existed ran at JAX's default."""
        return str(self.environment.get("matmul_precision") or "default")

    @property
    def processes(self) -> int:
        """Worker processes the samples came from (1 unless `--processes` was used)."""
        counts = {len(m.run_sample_counts) for m in self.measurements if m.run_sample_counts}
        return max(counts, default=1)

    @cached_property
    def derived(self) -> dict[str, Any]:
        """Figures other layers derive from this run, kept with it (a run is frozen, so
        they never go stale): `jitbench.results.analysis.analyse` caches its result here."""
        return {}


def new_run_id() -> str:
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{now}-{secrets.token_hex(3)}"


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
