"""Result types (Run, Measurement, …), their versioned JSON form and atomic file I/O.

Results are frozen and keep every raw sample; summaries are derived from the samples, so an
old file can always be re-analysed. The JSON layout is checked against
`jitbench/schema/run.schema.json` on load.

Schema changelog (bump MINOR for additive changes, MAJOR when old readers would misread):
- 1.0: first version.
- 1.1: compile.while_loop_count (while loops in the optimised HLO; XLA's flops and bytes
  count a loop body once).
- 1.2: compile.compile_repeats_s (several cold compile measurements, spread over a run
  with sampling rounds).
"""

from __future__ import annotations

import enum
import itertools
import json
import math
import os
import statistics
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any

from jitbench import stats
from jitbench.errors import OutputError, ResultsFormatError

SCHEMA_ID = "jitbench.run"
SCHEMA_VERSION = "1.2"


class Mode(str, enum.Enum):
    """How a workload is executed."""

    NUMPY = "numpy"
    EAGER = "eager"
    JIT = "jit"


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


@dataclass(frozen=True, kw_only=True)
class CompileInfo:
    """Cold compilation figures of one JAX mode. Fields a backend cannot give are None.

    For jit, `trace_s`, `lower_s` and `compile_s` are the AOT stages timed separately with
    caches cleared; `first_call_s` is a separate cold call (trace + compile + run).
    For eager, only `first_call_s` and `compile_count` are set. `compile_count` counts
    backend compiles seen during the cold first call; `timed_compile_count` counts those
    seen during warm-up-free timed sampling (should be zero). `compile_repeats_s` holds
    trace + lower + compile seconds of every cold AOT measurement when there were several
    (a run with sampling rounds repeats it, spread over the run); the stage figures are then
    those of the repeat with the median total.
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


@dataclass(frozen=True, kw_only=True)
class Measurement:
    """One case × one mode: status, raw samples (seconds per call) and what was learnt."""

    case: Case
    mode: Mode
    status: Status
    samples_s: tuple[float, ...] = ()
    calls_per_sample: int = 0
    transfer_s: float | None = None
    transfer_bytes: int | None = None
    compile: CompileInfo | None = None
    error: ErrorInfo | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    # Set only on a measurement pooled from several runs (`compare.merge_runs`): how many of
    # `samples_s`, in order, came from each run, so each run's median stays derivable.
    run_sample_counts: tuple[int, ...] = ()

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
        ends = list(itertools.accumulate(self.run_sample_counts))
        starts = [0, *ends[:-1]]
        return tuple(
            statistics.median(self.samples_s[a:b]) for a, b in zip(starts, ends, strict=True)
        )

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
        if self.diagnostics:
            return f"{self.status.value}: {self.diagnostics[0].message}"
        return self.status.value

    @property
    def hint(self) -> str:
        """The fix to try: the error's hint, else the first diagnostic's, else ''."""
        if self.error is not None and self.error.hint:
            return self.error.hint
        return next((d.hint for d in self.diagnostics if d.hint), "")

    @property
    def achieved_flops_per_s(self) -> float | None:
        """XLA's flop count of the compiled program over the steady-state median time.

        None without a cost analysis or samples, and None for a program with while loops
        (lax.fori_loop, scan), whose body XLA counts once: the rate would be too low.
        """
        c = self.compile
        return _per_second(c.flops if c and not c.has_loops else None, self.median_s)

    @property
    def achieved_bytes_per_s(self) -> float | None:
        """XLA's bytes-accessed estimate over the steady-state median time; None when
        unknown or when the program has while loops (see `achieved_flops_per_s`)."""
        c = self.compile
        return _per_second(c.bytes_accessed if c and not c.has_loops else None, self.median_s)

    def with_diagnostics(self, extra: Iterable[Diagnostic]) -> Measurement:
        """Return a copy with `extra` diagnostics appended (duplicates by code dropped)."""
        seen = {d.code for d in self.diagnostics}
        added = tuple(d for d in extra if d.code not in seen)
        return replace(self, diagnostics=self.diagnostics + added) if added else self


def _per_second(amount: float | None, seconds: float | None) -> float | None:
    if amount is None or seconds is None or not seconds > 0:
        return None
    return amount / seconds


@dataclass(frozen=True, kw_only=True)
class Run:
    """A whole benchmark run: environment, configuration and every measurement."""

    run_id: str
    started_at: str
    finished_at: str | None
    complete: bool
    environment: Mapping[str, Any]
    config: Mapping[str, Any]
    measurements: tuple[Measurement, ...]
    schema: str = SCHEMA_ID
    schema_version: str = SCHEMA_VERSION

    def cases(self) -> list[Case]:
        """Distinct cases in first-seen order."""
        seen: dict[tuple[str, str, str, str], Case] = {}
        for m in self.measurements:
            seen.setdefault(m.case.key, m.case)
        return list(seen.values())

    def get(self, case_key: tuple[str, str, str, str], mode: Mode) -> Measurement | None:
        for m in self.measurements:
            if m.case.key == case_key and m.mode is mode:
                return m
        return None

    def speedup(self, case_key: tuple[str, str, str, str], mode: Mode) -> stats.Ratio | None:
        """Speedup of `mode` over NumPy for one case (NumPy time / mode time) with its CI.

        None when either side is not `ok` (a mismatch is never given a headline speedup).
        """
        base = self.get(case_key, Mode.NUMPY)
        other = self.get(case_key, mode)
        if base is None or other is None or not (base.ok and other.ok):
            return None
        return stats.ratio_of_medians(base.samples_s, other.samples_s)

    def break_even_calls(self, case_key: tuple[str, str, str, str]) -> float | None:
        """Calls after which jit's cold compile is paid back versus NumPy.

        compile seconds / (NumPy median − jit median); `math.inf` when jit is not faster,
        None when the figures are missing.
        """
        base = self.get(case_key, Mode.NUMPY)
        jit = self.get(case_key, Mode.JIT)
        if not (base and jit and base.ok and jit.ok and jit.compile):
            return None
        compile_s = jit.compile.total_compile_s
        if compile_s is None or base.median_s is None or jit.median_s is None:
            return None
        saved = base.median_s - jit.median_s
        return compile_s / saved if saved > 0 else math.inf


# ---------------------------------------------------------------------------------------
# JSON form


def _enum_value(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def _finite_or_none(value: float | None) -> float | None:
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return value


def measurement_to_dict(m: Measurement) -> dict[str, Any]:
    s = m.summary
    return {
        "case": {
            "workload": m.case.workload,
            "size": m.case.size,
            "device": m.case.device,
            "dtype": m.case.dtype,
            "params": dict(m.case.params),
            "platform": m.case.platform,
            "device_kind": m.case.device_kind,
            "input_elements": m.case.input_elements,
            "input_bytes": m.case.input_bytes,
        },
        "mode": m.mode.value,
        "status": m.status.value,
        "samples_s": list(m.samples_s),
        "calls_per_sample": m.calls_per_sample,
        "transfer_s": m.transfer_s,
        "transfer_bytes": m.transfer_bytes,
        "compile": None
        if m.compile is None
        else {
            k: (dict(v) if isinstance(v, Mapping) else v)
            for k, v in m.compile.__dict__.items()
        },
        "error": None if m.error is None else dict(m.error.__dict__),
        "diagnostics": [
            {k: _enum_value(v) for k, v in d.__dict__.items()} for d in m.diagnostics
        ],
        **({"run_sample_counts": list(m.run_sample_counts)} if m.run_sample_counts else {}),
        # Derived, written for readers such as jq; ignored on load (recomputed).
        "summary": None
        if s is None
        else {k: _finite_or_none(v) for k, v in s.as_dict().items()},
    }


def run_to_dict(run: Run) -> dict[str, Any]:
    return {
        "schema": run.schema,
        "schema_version": run.schema_version,
        "run_id": run.run_id,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "complete": run.complete,
        "environment": dict(run.environment),
        "config": dict(run.config),
        "measurements": [measurement_to_dict(m) for m in run.measurements],
    }


def _measurement_from_dict(d: Mapping[str, Any]) -> Measurement:
    c = d["case"]
    compile_d = d.get("compile")
    return Measurement(
        case=Case(
            workload=c["workload"],
            size=c["size"],
            device=c["device"],
            dtype=c["dtype"],
            params=c.get("params") or {},
            platform=c.get("platform", ""),
            device_kind=c.get("device_kind", ""),
            input_elements=c.get("input_elements"),
            input_bytes=c.get("input_bytes"),
        ),
        mode=Mode(d["mode"]),
        status=Status(d["status"]),
        samples_s=tuple(float(x) for x in d.get("samples_s", ())),
        calls_per_sample=int(d.get("calls_per_sample", 0)),
        transfer_s=d.get("transfer_s"),
        transfer_bytes=d.get("transfer_bytes"),
        compile=None
        if compile_d is None
        else _compile_from_dict(compile_d),
        error=None if d.get("error") is None else ErrorInfo(**d["error"]),
        diagnostics=tuple(
            Diagnostic(
                code=x["code"],
                severity=Severity(x["severity"]),
                message=x["message"],
                hint=x.get("hint", ""),
            )
            for x in d.get("diagnostics", ())
        ),
        run_sample_counts=tuple(int(x) for x in d.get("run_sample_counts", ())),
    )


def _compile_from_dict(d: Mapping[str, Any]) -> CompileInfo:
    known = set(CompileInfo.__dataclass_fields__)
    kwargs: dict[str, Any] = {k: v for k, v in d.items() if k in known}
    kwargs["compile_repeats_s"] = tuple(float(x) for x in kwargs.get("compile_repeats_s", ()))
    return CompileInfo(**kwargs)


def measurement_from_dict(d: Mapping[str, Any]) -> Measurement:
    """Build a Measurement from `measurement_to_dict` output (used across processes)."""
    return _measurement_from_dict(d)


def _schema() -> dict[str, Any]:
    text = resources.files("jitbench").joinpath("schema/run.schema.json").read_text("utf-8")
    return json.loads(text)


def run_from_dict(data: Any, *, source: str = "<data>") -> Run:
    """Build a Run from its JSON form, validating it first.

    Raises:
        ResultsFormatError: not a jitbench run, a newer major schema, or invalid content.
    """
    import jsonschema

    if not isinstance(data, dict) or data.get("schema") != SCHEMA_ID:
        raise ResultsFormatError(
            f"{source} is not a jitbench run (no \"schema\": \"{SCHEMA_ID}\" field); "
            "pass a file written by `jitbench run`."
        )
    version = str(data.get("schema_version", ""))
    major = version.split(".")[0]
    if not major.isdigit():
        raise ResultsFormatError(f"{source} has an invalid schema_version {version!r}.")
    ours = int(SCHEMA_VERSION.split(".")[0])
    if int(major) > ours:
        raise ResultsFormatError(
            f"{source} uses run schema {version}, newer than this jitbench reads "
            f"({SCHEMA_VERSION}); upgrade jitbench (`pip install -U jitbench`)."
        )
    try:
        jsonschema.validate(data, _schema())
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "<root>"
        raise ResultsFormatError(
            f"{source} is not a valid jitbench run: at {where}: {exc.message}"
        ) from None
    try:
        measurements = tuple(_measurement_from_dict(m) for m in data["measurements"])
    except ValueError as exc:  # what the schema cannot say, e.g. counts that do not add up
        raise ResultsFormatError(f"{source} is not a valid jitbench run: {exc}") from None
    return Run(
        schema=data["schema"],
        schema_version=version,
        run_id=data["run_id"],
        started_at=data["started_at"],
        finished_at=data.get("finished_at"),
        complete=bool(data.get("complete", False)),
        environment=data.get("environment") or {},
        config=data.get("config") or {},
        measurements=measurements,
    )


def load_run(path: str | os.PathLike[str]) -> Run:
    """Load and validate a run JSON file.

    Raises:
        ResultsFormatError: the file is missing, unreadable, not JSON, not a jitbench run,
            of a newer schema, or invalid.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsFormatError(f"results file {str(p)!r} does not exist.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsFormatError(f"cannot read results file {str(p)!r}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsFormatError(
            f"{str(p)!r} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "was the run interrupted while writing, or is this another kind of file?"
        ) from None
    return run_from_dict(data, source=repr(str(p)))


def dump_run(run: Run) -> str:
    """Serialise a run to JSON text (strict JSON: no NaN or Infinity)."""
    return json.dumps(run_to_dict(run), indent=1, allow_nan=False, default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"cannot serialise {type(value).__name__} to JSON")


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temp file and rename, so readers never see half.

    Raises:
        OutputError: the folder cannot be created or written.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            # mkstemp makes 0600 files; results are meant to be shared like any output.
            os.chmod(tmp, 0o666 & ~_umask())
            # No fsync: the rename protects against an interrupted or killed run (the
            # case that matters here); an fsync per checkpoint cost seconds on slow disks.
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise OutputError(
            f"cannot write {str(path)!r}: {exc.strerror or exc}; choose another folder with --out."
        ) from None


def ensure_writable_dir(folder: str | os.PathLike[str]) -> Path:
    """Create `folder` if needed and check a file can be written there (before measuring).

    Raises:
        OutputError: the folder cannot be created or is not writable.
    """
    p = Path(folder)
    try:
        p.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".jitbench-write-check.", dir=p)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputError(
            f"output folder {str(p)!r} is not writable ({exc.strerror or exc}); "
            "choose another folder with --out."
        ) from None
    return p


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def save_run(run: Run, path: str | os.PathLike[str]) -> Path:
    """Write `run` to `path` atomically and return the path."""
    p = Path(path)
    write_text_atomic(p, dump_run(run))
    return p
