"""The run's versioned JSON form: to and from dicts, schema validation, load and dump.

Schema changelog (bump MINOR for additive changes, MAJOR when old readers would misread):
- 1.0: first version.
- 1.1: compile.while_loop_count (while loops in the optimised HLO; XLA's flops and bytes
  count a loop body once).
- 1.2: compile.compile_repeats_s (several cold compile measurements, spread over a run
  with sampling rounds).
- 1.3: no new field; the modes of a case are sampled in lockstep rounds, so sample i of
  every mode comes from the same round and speedups are paired (`Run.paired`).
- 1.4: case.input_dtypes (each argument's dtype as the NumPy side got it) and
  measurement.time_split (host dispatch vs device execution from a profiler trace), both
  optional.
- 1.5: mode "sharded" and measurement.sharding (device_count, mesh_shape, split_axes; only
  on sharded measurements). A sharded measurement also carries a derived "scaling" object
  (speedup over jit on one device, efficiency), written for readers and ignored on load.
- 1.6: measurement.transfer_back_s and transfer_back_bytes (the copy of a JAX mode's
  output back to the host, timed on its own once per case and device; null in older
  files).
- 1.7: measurement.device_peak_bytes and device_peak_exact (the device allocator's
  high-water mark over the case, above what was resident before it; exact false: an
  upper bound; null on CPU and in older files).
- 1.8: compile.program_fingerprint (the optimised HLO modulo names and metadata, hashed),
  compile.hlo_opcodes (its instructions by opcode) and compile.code_bytes (generated
  machine code, where the backend says): what `compare` judges a program by.

Keys added inside the free-form "environment" and "config" objects are not versioned (the
schema does not constrain them, and every reader takes them as optional): environment
"threads", "machine_before", "machine_after"; config "threads" (a config without it
was measured with the libraries' own thread pools and reads back as threads None), config
"label" (`jitbench run --label`; null or absent: no label), config
"selection[].suite_sha256" (the suite file's SHA-256 as imported; a resume refuses a
changed file; absent in older files, which resume unchecked) and config "interleaved"
(`jitbench ab`: which side the run was and its partner run's id).

Beyond the schema, a run holds one measurement per case and mode (a file with more is
refused) and strict JSON (no NaN or Infinity; samples finite).
"""

from __future__ import annotations

import enum
import functools
import json
import math
import os
from collections import Counter
from collections.abc import Callable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jitbench.errors import ResultsFormatError, short_repr
from jitbench.results import validated
from jitbench.results.model import (
    SCHEMA_ID,
    SCHEMA_VERSION,
    Case,
    CompileInfo,
    Diagnostic,
    ErrorInfo,
    Measurement,
    Mode,
    RecordedConfig,
    Run,
    Severity,
    ShardingInfo,
    Status,
    TimeSplit,
)
from jitbench.results.safe_io import FileTooBig, NotRegularFile, read_regular

if TYPE_CHECKING:
    from fastjsonschema import JsonSchemaValueException

    from jitbench.results.analysis import RunAnalysis

# ---------------------------------------------------------------------------------------
# JSON form


def _enum_value(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def _finite_or_none(value: float | None) -> float | None:
    if value is None or math.isnan(value) or math.isinf(value):
        return None
    return value


#: CompileInfo fields never in a run's JSON: the program's text is stored compressed
#: beside the run file (`files.save_programs`).
_IN_MEMORY_ONLY = ("program_text",)


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
            **({"input_dtypes": dict(m.case.input_dtypes)} if m.case.input_dtypes else {}),
        },
        "mode": m.mode.value,
        "status": m.status.value,
        "samples_s": list(m.samples_s),
        "calls_per_sample": m.calls_per_sample,
        "transfer_s": m.transfer_s,
        "transfer_bytes": m.transfer_bytes,
        "transfer_back_s": m.transfer_back_s,
        "transfer_back_bytes": m.transfer_back_bytes,
        "device_peak_bytes": m.device_peak_bytes,
        "device_peak_exact": m.device_peak_exact,
        "compile": None
        if m.compile is None
        else {
            k: (dict(v) if isinstance(v, Mapping) else v)
            for k, v in m.compile.__dict__.items()
            if k not in _IN_MEMORY_ONLY
        },
        "error": None if m.error is None else dict(m.error.__dict__),
        "diagnostics": [{k: _enum_value(v) for k, v in d.__dict__.items()} for d in m.diagnostics],
        **({"run_sample_counts": list(m.run_sample_counts)} if m.run_sample_counts else {}),
        **({"time_split": dict(vars(m.time_split))} if m.time_split is not None else {}),
        **({"sharding": _sharding_to_dict(m.sharding)} if m.sharding is not None else {}),
        # Derived, written for readers such as jq; ignored on load (recomputed).
        "summary": None if s is None else {k: _finite_or_none(v) for k, v in s.as_dict().items()},
    }


def _sharding_to_dict(info: ShardingInfo) -> dict[str, Any]:
    return {
        "device_count": info.device_count,
        "mesh_shape": dict(info.mesh_shape),
        "split_axes": dict(info.split_axes),
    }


def _with_figures(figures: RunAnalysis, m: Measurement) -> dict[str, Any]:
    """A measurement's JSON form with the figures every reader shows of it ("figures":
    the time per call and the speedup over NumPy with their intervals, each process's
    own, jit's compile figure; a sharded one also "scaling"), written for readers such
    as jq and ignored on load: they are recomputed from the samples by
    `jitbench.results.analysis`."""
    d = measurement_to_dict(m)
    case = figures.case(m.case.key)
    shown = case.get(m.mode) if case is not None else None
    if shown is not None and shown.time is not None:
        d["figures"] = {
            "time_s": _ratio_dict(shown.time),
            "process_times_s": [_finite_or_none(x) for x in shown.process_times],
            "speedup": None if shown.speedup is None else _ratio_dict(shown.speedup),
            # numpy, or eager for jit in a JAX-only case (`ModeFigure.over`)
            "speedup_over": None if shown.speedup is None else shown.over.value,
            "process_speedups": [_finite_or_none(x) for x in shown.process_speedups],
            "headline": shown.headline,
        }
        if shown.compile_s is not None:  # jit's (and sharded's): the tables' compile column
            d["figures"]["compile_s"] = _finite_or_none(shown.compile_s)
    scaling = case.scaling if case is not None and m.mode is Mode.SHARDED else None
    if scaling is not None:
        d["scaling"] = {
            "device_count": scaling.device_count,
            "speedup": _ratio_dict(scaling.speedup),
            "efficiency": _ratio_dict(scaling.efficiency),
        }
    return d


def _ratio_dict(r: Any) -> dict[str, float | None]:
    return {k: _finite_or_none(getattr(r, k)) for k in ("value", "low", "high")}


def run_to_dict(run: Run, *, figures: bool = True) -> dict[str, Any]:
    """`run`'s JSON form; with `figures`, each measurement carries the figures readers show
    of it (`_with_figures`), which loading ignores."""
    from jitbench.results.analysis import analyse

    shown = analyse(run) if figures else None
    return {
        "schema": run.schema,
        "schema_version": run.schema_version,
        "run_id": run.run_id,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "complete": run.complete,
        "environment": dict(run.environment),
        "config": run.config.to_dict(),
        "measurements": [
            measurement_to_dict(m) if shown is None else _with_figures(shown, m)
            for m in run.measurements
        ],
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
            input_dtypes=c.get("input_dtypes"),
        ),
        mode=Mode(d["mode"]),
        status=Status(d["status"]),
        samples_s=_samples(d.get("samples_s", [])),
        calls_per_sample=int(d.get("calls_per_sample", 0)),
        transfer_s=d.get("transfer_s"),
        transfer_bytes=d.get("transfer_bytes"),
        transfer_back_s=d.get("transfer_back_s"),
        transfer_back_bytes=d.get("transfer_back_bytes"),
        device_peak_bytes=d.get("device_peak_bytes"),
        device_peak_exact=d.get("device_peak_exact"),
        compile=None if compile_d is None else _compile_from_dict(compile_d),
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
        time_split=TimeSplit(**d["time_split"]) if d.get("time_split") else None,
        sharding=_sharding_from_dict(d["sharding"]) if d.get("sharding") else None,
    )


def _sharding_from_dict(d: Mapping[str, Any]) -> ShardingInfo:
    return ShardingInfo(
        device_count=int(d["device_count"]),
        mesh_shape={str(k): int(v) for k, v in d.get("mesh_shape", {}).items()},
        split_axes=dict(d.get("split_axes", {})),
    )


_NUMBER_TYPES = frozenset({float, int})


#: The range of a sample (seconds per call) a run file may hold, besides 0: a femtosecond
#: is below one clock cycle, a million seconds is eleven days a call. Beyond it a value is
#: no measurement, and the statistics it would enter (logs, products of ratios) overflow
#: or underflow.
MIN_SAMPLE_S = 1e-15
MAX_SAMPLE_S = 1e6


def _samples(values: Any) -> tuple[float, ...]:
    """`samples_s`, checked in bulk: numbers (not booleans), 0 or more, finite. The
    schema's rule for its items is left to this check (`_validator`): samples are most of
    a big file, and builtins looping in C check them about ten times faster."""
    if not isinstance(values, list):
        raise ValueError("samples_s is not a list of numbers")
    if not set(map(type, values)) <= _NUMBER_TYPES:
        raise ValueError("samples_s holds a value that is not a number")
    samples = tuple(map(float, values))
    if not samples:
        return samples
    # sum: one C loop; NaN, Infinity or an overflowing 1e999 make it non-finite.
    if min(samples) < 0 or not math.isfinite(sum(samples)):
        raise ValueError("samples_s holds a value that is not a finite number of seconds ≥ 0")
    low, high = min(samples), max(samples)
    if low == 0:  # zeros are refused by nothing else; the smallest other value is checked
        low = min((x for x in samples if x > 0), default=MIN_SAMPLE_S)
    if high > MAX_SAMPLE_S or low < MIN_SAMPLE_S:
        odd = high if high > MAX_SAMPLE_S else low
        raise ValueError(
            f"samples_s holds {odd!r} s, not a time per call anything measures (0, or "
            f"{MIN_SAMPLE_S:g} to {MAX_SAMPLE_S:g} s); was the file edited?"
        )
    return samples


def _compile_from_dict(d: Mapping[str, Any]) -> CompileInfo:
    known = set(CompileInfo.__dataclass_fields__) - set(_IN_MEMORY_ONLY)
    kwargs: dict[str, Any] = {k: v for k, v in d.items() if k in known}
    kwargs["compile_repeats_s"] = tuple(float(x) for x in kwargs.get("compile_repeats_s", ()))
    return CompileInfo(**kwargs)


def measurement_from_dict(d: Mapping[str, Any]) -> Measurement:
    """Build a Measurement from `measurement_to_dict` output (used across processes)."""
    return _measurement_from_dict(d)


def _schema() -> dict[str, Any]:
    text = resources.files("jitbench").joinpath("results/schema/run.schema.json").read_text("utf-8")
    return json.loads(text)


@functools.cache
def _validator() -> tuple[Callable[[Any], Any], type[JsonSchemaValueException]]:
    """The schema compiled to Python code once per process (fastjsonschema): a 50 MB run
    validates in about a second, where interpreting the schema (jsonschema) took 40 s.
    With the exception class the compiled code raises: fastjsonschema imported again later
    (a host that restores `sys.modules`, as pytester's in-process runs do) has a class of
    its own, which would not catch it."""
    import fastjsonschema

    schema = _schema()
    # The items of samples_s ({"type": "number", "minimum": 0}) are checked by `_samples`.
    del schema["$defs"]["measurement"]["properties"]["samples_s"]["items"]
    return fastjsonschema.compile(schema), fastjsonschema.JsonSchemaValueException


def validate_run_dict(data: Any, *, source: str = "<data>") -> None:
    """Check a run's JSON form against the schema (after the checks of `run_from_dict`).

    Raises:
        ResultsFormatError: the first place the data breaks the schema, and how.
    """
    validate, invalid = _validator()
    try:
        validate(data)
    except invalid as exc:
        where = "/".join(str(p) for p in exc.path[1:]) or "<root>"
        message = exc.message.removeprefix(f"{exc.name} ")
        raise ResultsFormatError(
            f"{source} is not a valid jitbench run: at {where}: {message}"
        ) from None


#: The schema of what `jitbench compare --json` writes (`gate.model`), a file often left
#: beside runs: named, so that its refusal says what it is.
_COMPARISON_SCHEMA = "jitbench.comparison"


def run_from_dict(data: Any, *, source: str = "<data>", validated: bool = False) -> Run:
    """Build a Run from its JSON form, validating it first.

    Args:
        validated: the data is known to pass the schema (`load_run`'s validation cache):
            skip that check. Anything the build then trips over is still refused.

    Raises:
        ResultsFormatError: not a jitbench run, a newer major schema, invalid content, or
            more than one measurement of the same case and mode.
    """
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_ID:
        schema = data.get("schema") if isinstance(data, dict) else None
        if schema == _COMPARISON_SCHEMA:
            raise ResultsFormatError(
                f"{source} is a comparison written by `jitbench compare --json`, not a run; "
                "pass run files (a folder of runs must hold run files only: move it out)."
            )
        found = f'"schema": {short_repr(schema)}' if schema is not None else 'no "schema"'
        raise ResultsFormatError(
            f'{source} is not a jitbench run ({found}, not "{SCHEMA_ID}"); pass a file '
            "written by `jitbench run`."
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
    if not validated:
        validate_run_dict(data, source=source)
    try:
        measurements = _measurements(data["measurements"])
        run = Run(
            schema=data["schema"],
            schema_version=version,
            run_id=data["run_id"],
            started_at=data["started_at"],
            finished_at=data.get("finished_at"),
            complete=bool(data.get("complete", False)),
            environment=readable_environment(data.get("environment") or {}),
            config=RecordedConfig.from_dict(data.get("config") or {}),
            measurements=measurements,
        )
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        if validated:  # the cache was wrong about this data: judge it properly
            return run_from_dict(data, source=source)
        # What the schema cannot say, e.g. counts that do not add up.
        raise ResultsFormatError(f"{source} is not a valid jitbench run: {exc}") from None
    _refuse_duplicates(run, source)
    return run


#: The environment fields jitbench writes as containers, with the type of their items
#: (None: any JSON value). The schema lets `environment` hold anything (it is free-form),
#: so a run file may carry these as other types; readers rely on the shapes below.
_ENVIRONMENT_SHAPES: dict[str, tuple[type, type | tuple[type, ...] | None]] = {
    "versions": (dict, (str, type(None))),
    "env": (dict, (str, type(None))),
    "devices": (list, dict),
    "process": (dict, None),
    "git": (dict, None),
    "threads": (dict, None),
    "machine_before": (dict, None),
    "machine_after": (dict, None),
}


def readable_environment(raw: Mapping[str, Any]) -> dict[str, Any]:
    """A run's environment as its readers expect it: a container field of another type
    than jitbench writes (versions as a number, devices as a string) is left out, as if
    not recorded, and so are the items of a container that are not what it holds (a
    device that is no object, a version that is a list). The rest, free-form fields
    included, is kept as it is. Comparing and reporting such a run then works; the
    file itself is not changed."""
    env = dict(raw)
    for key, (container, item) in _ENVIRONMENT_SHAPES.items():
        if key not in env:
            continue
        value = env[key]
        if not isinstance(value, container):
            del env[key]
        elif item is not None and isinstance(value, dict):
            env[key] = {str(k): v for k, v in value.items() if isinstance(v, item)}
        elif item is not None and isinstance(value, list):
            env[key] = [v for v in value if isinstance(v, item)]
    return env


def _measurements(items: list[Any]) -> tuple[Measurement, ...]:
    found = []
    for i, item in enumerate(items):
        try:
            found.append(_measurement_from_dict(item))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            why = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise ValueError(f"at measurements/{i}: {why}") from None
    return tuple(found)


def _refuse_constant(name: str) -> Any:
    raise ValueError(
        f"it holds {name}, which jitbench never writes (a value that was not measured is "
        "null); was the file edited?"
    )


def _refuse_duplicates(run: Run, source: str) -> None:
    """A run holds one measurement per case and mode; a file with more (concatenated or
    edited) would be reported with every copy as its own row."""
    counts = Counter((m.case.key, m.mode) for m in run.measurements)
    extra = sum(n - 1 for n in counts.values())
    if not extra:
        return
    (key, mode), times = counts.most_common(1)[0]
    label = f"{key[0]}[{key[1]}] {key[2]} {key[3]} {mode.value}"
    raise ResultsFormatError(
        f"{source} holds {len(run.measurements):,} measurements but only {len(counts):,} "
        f"distinct case × mode pairs ({extra:,} duplicates; {label} appears {times:,} times); "
        "a run has one measurement per case and mode. Was the file concatenated or edited? "
        "Keep one copy of each, or merge runs with `jitbench compare` folders instead."
    )


def _a_folder(p: Path) -> str:
    """Why a folder is not a run file, and the run files it holds (`jitbench run --out`
    keeps them under runs/; a run id starts with its UTC start, so the last is newest)."""
    runs = sorted((p / "runs").glob("*.json")) or sorted(p.glob("*.json"))
    if not runs:
        return f"{str(p)!r} is a folder with no run files; pass a run file (runs/<run-id>.json)."
    many = f"it holds {len(runs)}, the newest " if len(runs) > 1 else "it holds one, "
    return f"{str(p)!r} is a folder; pass a run file: {many}{str(runs[-1])!r}."


#: The largest run file `load_run` reads (parsed, a run takes several times its size in
#: memory; the biggest real runs are tens of MB).
MAX_RUN_FILE_BYTES = 512 * 2**20


def load_run(path: str | os.PathLike[str]) -> Run:
    """Load and validate a run JSON file.

    Validation is remembered (`results.validated`): a file whose size, modification time
    and inode are those of a file that already passed is not checked against the schema
    again, so refreshing an index does not re-validate every stored run.

    Raises:
        ResultsFormatError: the file is missing, unreadable, not JSON, not a jitbench run,
            of a newer schema, or invalid.
    """
    p = Path(path)
    try:
        raw, st = read_regular(p, limit=MAX_RUN_FILE_BYTES)
        stamp = validated.stamp_of(st)
    except FileNotFoundError:
        raise ResultsFormatError(
            f"results file {str(p)!r} does not exist; pass a run file written by `jitbench "
            "run` (its --out folder's runs/*.json)."
        ) from None
    except IsADirectoryError:
        raise ResultsFormatError(_a_folder(p)) from None
    except NotRegularFile as exc:
        raise ResultsFormatError(
            f"{str(p)!r} is {exc.kind}, not a run file; pass a file written by `jitbench run`."
        ) from None
    except FileTooBig as exc:
        raise ResultsFormatError(
            f"{str(p)!r} holds {exc.size / 2**20:,.0f} MiB, more than a run file may "
            f"({exc.limit / 2**20:,.0f} MiB: reading it would take many times that in "
            "memory); is it a run file? Split a huge run by workload (`-k`) when measuring."
        ) from None
    except OSError as exc:
        raise ResultsFormatError(
            f"cannot read results file {str(p)!r}: {exc.strerror or exc}"
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ResultsFormatError(
            f"{str(p)!r} is not UTF-8 text ({exc.reason} at byte {exc.start}); "
            "pass a file written by `jitbench run`."
        ) from None
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise ResultsFormatError(
            f"{str(p)!r} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "was the run interrupted while writing, or is this another kind of file?"
        ) from None
    except RecursionError:
        raise ResultsFormatError(
            f"{str(p)!r} nests JSON too deeply to be a jitbench run."
        ) from None
    except ValueError as exc:  # NaN or Infinity (`_refuse_constant`)
        raise ResultsFormatError(f"{str(p)!r} is not strict JSON: {exc}.") from None
    known = validated.is_validated(p, stamp)
    run = run_from_dict(data, source=repr(str(p)), validated=known)
    if not known:
        validated.remember(p, stamp)
    return run


def dump_run(run: Run, *, figures: bool = True) -> str:
    """Serialise a run to JSON text (strict JSON: no NaN or Infinity): the run's fields
    indented, each measurement on one line of its own. One line a measurement is what
    `json`'s C encoder writes (indenting goes through its Python one: 4.4-5.2 ms against
    1.6-1.7 ms for the measurements of a default run at S), and a run is written after
    each case it measures (`api.run`'s checkpoints); a diff of two runs still shows which
    measurements changed. Without `figures` the measurements carry none (`run_to_dict`)."""
    fields = []
    for key, value in run_to_dict(run, figures=figures).items():
        if key == "measurements" and value:
            text = "[\n" + ",\n".join("  " + _json_text(m) for m in value) + "\n ]"
        else:
            text = _json_text(value, indent=1).replace("\n", "\n ")
        fields.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(fields) + "\n}"


def _json_text(value: Any, indent: int | None = None) -> str:
    return json.dumps(value, indent=indent, allow_nan=False, default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"cannot serialise {type(value).__name__} to JSON")
