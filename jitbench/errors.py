"""The one family of errors jitbench raises for problems a user can act on.

Each message names the thing, shows the bad value and says what to do; the CLI maps every
`JitbenchError` to a one-line message and the exit code in `exit_code`.
"""

from __future__ import annotations


class JitbenchError(Exception):
    """Base of all errors meant for the user. `exit_code` is what the CLI exits with."""

    exit_code: int = 2


class SuiteError(JitbenchError):
    """A suite path, suite file or workload name is wrong."""


class WorkloadError(JitbenchError):
    """A workload definition is invalid (bad preset, bad static name, bad inputs)."""


class ConfigError(JitbenchError):
    """A run option is invalid (unknown mode, size or device, bad budget)."""


class ResultsFormatError(JitbenchError):
    """A results file is missing, unreadable, not a jitbench run, or of a newer schema."""


class OutputError(JitbenchError):
    """An output location cannot be written."""
