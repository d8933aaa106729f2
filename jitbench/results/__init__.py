"""The result model, its versioned JSON form and the files it lives in.

`model` holds the frozen types every stage speaks (Case, Measurement, Run, …), `codec` the
JSON form and its schema (with the version changelog), `files` atomic writes and the output
folder layout. The names below are the package's public surface.
"""

from __future__ import annotations

from jitbench.results.codec import (
    SCHEMA_ID,
    SCHEMA_VERSION,
    dump_run,
    load_run,
    measurement_from_dict,
    measurement_to_dict,
    run_from_dict,
    run_to_dict,
)
from jitbench.results.files import (
    OutputLayout,
    check_replaceable,
    check_run_copies,
    check_run_copy,
    ensure_writable_dir,
    load_programs,
    program_diff_folder,
    program_key,
    programs_path,
    run_file_lock,
    run_programs,
    safe_file_stem,
    save_run,
    side_programs,
    write_program_diffs,
    write_text_atomic,
)
from jitbench.results.model import (
    FAILED_STATUSES,
    Case,
    CompileInfo,
    Diagnostic,
    ErrorInfo,
    Measurement,
    Mode,
    Run,
    Severity,
    ShardingInfo,
    Status,
    TimeSplit,
    is_cpu_device,
    is_host_copy,
)

__all__ = [
    "FAILED_STATUSES",
    "SCHEMA_ID",
    "SCHEMA_VERSION",
    "Case",
    "CompileInfo",
    "Diagnostic",
    "ErrorInfo",
    "Measurement",
    "Mode",
    "OutputLayout",
    "Run",
    "Severity",
    "ShardingInfo",
    "Status",
    "TimeSplit",
    "check_replaceable",
    "check_run_copies",
    "check_run_copy",
    "dump_run",
    "ensure_writable_dir",
    "is_cpu_device",
    "is_host_copy",
    "load_programs",
    "load_run",
    "measurement_from_dict",
    "measurement_to_dict",
    "program_diff_folder",
    "program_key",
    "programs_path",
    "run_file_lock",
    "run_from_dict",
    "run_programs",
    "run_to_dict",
    "safe_file_stem",
    "save_run",
    "side_programs",
    "write_program_diffs",
    "write_text_atomic",
]
