"""The run's versioned JSON form: to and from dicts, schema validation, load and dump.

Schema changelog (bump MINOR for additive changes, MAJOR when old readers would misread):
- 1.0: first version.
- 1.1: compile.while_loop_count (while loops in the optimised HLO; XLA's flops and bytes
  count a loop body once).
- 1.2: compile.compile_repeats_s (several cold compile measurements, spread over a run
  with sampling rounds).
- 1.3: no new field; the modes of a case are sampled in lockstep rounds, so sample i of
  every mode comes from the same round and speedups are paired (`Run.paired`).
- (next): case.input_dtypes, optional (each argument's dtype as the NumPy side got it).

Keys added inside the free-form "environment" and "config" objects are not versioned (the
schema does not constrain them, and every reader takes them as optional): environment
"threads", "machine_before", "machine_after" and config "threads" (a config without it
was measured with the libraries' own thread pools and reads back as threads None).
"""

from __future__ import annotations

import enum
import json
import math
import os
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from jitbench.errors import ResultsFormatError
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
    Status,
)

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
            **({"input_dtypes": dict(m.case.input_dtypes)} if m.case.input_dtypes else {}),
        },
        "mode": m.mode.value,
        "status": m.status.value,
        "samples_s": list(m.samples_s),
        "calls_per_sample": m.calls_per_sample,
        "transfer_s": m.transfer_s,
        "transfer_bytes": m.transfer_bytes,
        "compile": None
        if m.compile is None
        else {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in m.compile.__dict__.items()},
        "error": None if m.error is None else dict(m.error.__dict__),
        "diagnostics": [{k: _enum_value(v) for k, v in d.__dict__.items()} for d in m.diagnostics],
        **({"run_sample_counts": list(m.run_sample_counts)} if m.run_sample_counts else {}),
        # Derived, written for readers such as jq; ignored on load (recomputed).
        "summary": None if s is None else {k: _finite_or_none(v) for k, v in s.as_dict().items()},
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
        "config": run.config.to_dict(),
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
            input_dtypes=c.get("input_dtypes"),
        ),
        mode=Mode(d["mode"]),
        status=Status(d["status"]),
        samples_s=tuple(float(x) for x in d.get("samples_s", ())),
        calls_per_sample=int(d.get("calls_per_sample", 0)),
        transfer_s=d.get("transfer_s"),
        transfer_bytes=d.get("transfer_bytes"),
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
    text = resources.files("jitbench").joinpath("results/schema/run.schema.json").read_text("utf-8")
    return json.loads(text)


def run_from_dict(data: Any, *, source: str = "<data>") -> Run:
    """Build a Run from its JSON form, validating it first.

    Raises:
        ResultsFormatError: not a jitbench run, a newer major schema, or invalid content.
    """
    import jsonschema

    if not isinstance(data, dict) or data.get("schema") != SCHEMA_ID:
        raise ResultsFormatError(
            f'{source} is not a jitbench run (no "schema": "{SCHEMA_ID}" field); '
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
        config=RecordedConfig.from_dict(data.get("config") or {}),
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
