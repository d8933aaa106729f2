"""`jitbench run`'s options, and the RunConfig they ask for.

An option of its own for what a user sets often; `--setting NAME=VALUE` for every other
field of `RunConfig` and `SamplingPlan` (docs/reference/settings.md says what each does),
so the command stays short without a setting out of reach. Not a command: `cli.run`
imports it.
"""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import Annotated, Any

import typer

from jitbench.cli.common import split_list
from jitbench.cli.options import TableFormat
from jitbench.config import (
    ALL_MODES,
    PLAN_OPTIONS,
    RunConfig,
    SamplingPlan,
    parse_mode,
    parse_threads,
)
from jitbench.errors import ConfigError, unknown_name_message

_PLAN = SamplingPlan()
_QUICK = RunConfig.quick_settings()
_DEFAULT = RunConfig()

#: The fields of `RunConfig` itself (not its plan) that `--setting` sets.
RUN_SETTINGS = ("seed", "sweep", "time_split", "retry_timeouts")
#: Every name `--setting` takes: the plan's fields without an option, then the run's.
SETTINGS = (
    *(f.name for f in fields(SamplingPlan) if f.name not in PLAN_OPTIONS),
    *RUN_SETTINGS,
)
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


#: How `run` prints its table on stdout: the formats `report`, `compare` and `ab` take.
RunFormat = TableFormat


def _typed(name: str, text: str, default: object) -> object:
    """`text` as the type of the field's default (bool, int, float or str)."""
    if isinstance(default, bool):
        if text.lower() in _TRUE + _FALSE:
            return text.lower() in _TRUE
        raise ConfigError(f"--setting {name}= takes true or false, got {text!r}.")
    kind: Any = type(default)
    try:
        return kind(text)
    except ValueError:
        raise ConfigError(
            f"--setting {name}= takes {'an integer' if kind is int else 'a number'}, got {text!r}."
        ) from None


def parse_settings(given: list[str] | None) -> dict[str, object]:
    """`--setting NAME=VALUE` (repeatable) as field name → value; `-` in a name reads as `_`.

    Raises:
        ConfigError: no `=`, an unknown name, one with its own option, or a value of the
            wrong type (the range is `RunConfig`'s to check).
    """
    settings: dict[str, object] = {}
    defaults: dict[str, object] = {f.name: getattr(_PLAN, f.name) for f in fields(SamplingPlan)}
    defaults.update({name: getattr(_DEFAULT, name) for name in RUN_SETTINGS})
    for item in given or ():
        name, eq, text = item.partition("=")
        name = name.strip().replace("-", "_")
        if not eq or not name:
            raise ConfigError(
                f"--setting takes NAME=VALUE (e.g. --setting precision=0.02), got {item!r}."
            )
        if name in PLAN_OPTIONS:
            raise ConfigError(f"{name} has an option of its own: {PLAN_OPTIONS[name]}.")
        if name not in SETTINGS:
            raise ConfigError(unknown_name_message("setting", name, SETTINGS, known_as="settings"))
        settings[name] = _typed(name, text.strip(), defaults[name])
    return settings


def parse_process_id(text: str | None) -> tuple[int, int] | None:
    """`--process-id I/N` as (I, N), this process's index and the process count.

    Raises:
        ConfigError: not two integers with 0 ≤ I < N.
    """
    if text is None:
        return None
    index, slash, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        i, n = -1, 0
    if not slash or not 0 <= i < n:
        raise ConfigError(
            f"--process-id takes I/N, this process's index and the process count with "
            f"0 <= I < N (e.g. 0/2), got {text!r}."
        )
    return i, n


def build_config(
    *,
    quick: bool = False,
    sizes: list[str] | None = None,
    modes: list[str] | None = None,
    devices: list[str] | None = None,
    x64: bool | None = None,
    budget: float | None = None,
    min_samples: int | None = None,
    rounds: int | None = None,
    clock: str | None = None,
    isolate: bool = False,
    timeout: float | None = None,
    processes: int | None = None,
    threads: str | int | None = 1,
    label: str | None = None,
    overlap: bool | None = None,
    settings: list[str] | None = None,
) -> RunConfig:
    """The RunConfig the options ask for; it checks itself (ConfigError names the option).
    `--min-samples` above the default cap raises the cap with it (unless `--setting
    max_samples=` says otherwise); `threads` is a number or 'all'."""
    base = RunConfig.quick_settings() if quick else RunConfig()
    chosen = parse_settings(settings)
    plan: dict[str, Any] = {k: v for k, v in chosen.items() if k not in RUN_SETTINGS}
    run: dict[str, Any] = {k: v for k, v in chosen.items() if k in RUN_SETTINGS}
    if budget is not None:
        plan["budget_s"] = budget
    if min_samples is not None:
        plan["min_samples"] = min_samples
        plan.setdefault("max_samples", max(base.plan.max_samples, min_samples))
    if rounds is not None:
        plan["rounds"] = rounds
    if clock is not None:
        plan["clock"] = clock
    if run.get("retry_timeouts") and timeout is None:
        raise ConfigError(
            "--setting retry_timeouts=true measures again a mode that ran past --timeout; give "
            "--timeout SECONDS too."
        )
    return replace(
        base,
        sizes=tuple(split_list(sizes, "--sizes")) or base.sizes,
        modes=tuple(parse_mode(m) for m in split_list(modes, "--modes")) or base.modes,
        devices=tuple(split_list(devices, "--devices")),
        x64=x64,
        plan=replace(base.plan, **plan),
        isolate=isolate,
        timeout_s=timeout,
        processes=base.processes if processes is None else processes,
        threads=parse_threads(threads),
        label=label,
        overlap=overlap,
        **run,
    )


# --- the options -----------------------------------------------------------------------

NamesArg = Annotated[
    list[str] | None, typer.Argument(metavar="NAMES", help="Workload names (default: all).")
]
SizesOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--sizes",
        "-s",
        metavar="S,M,L",
        help="Size presets (comma-separated or repeated), e.g. S,M,L.",
        show_default=f"{','.join(_DEFAULT.sizes)}; --quick: {','.join(_QUICK.sizes)}",
    ),
]
ModesOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--modes",
        "-m",
        metavar="MODES",
        help="Modes to measure, e.g. numpy,jit; add sharded for jit over every device "
        "of the platform (opt-in).",
        show_default=",".join(m.value for m in ALL_MODES),
    ),
]
DevicesOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--devices",
        "-d",
        metavar="DEVICES",
        help="Devices: cpu, gpu, or cpu:1.",
        show_default="every platform JAX sees",
    ),
]
X64Opt = Annotated[
    bool | None,
    typer.Option(
        "--x64/--no-x64",
        help="float64 on both sides (--no-x64: float32).",
        show_default="float32, or the suite's own width (npbench: float64)",
    ),
]
BudgetOpt = Annotated[
    float | None,
    typer.Option(
        "--budget",
        metavar="SECONDS",
        help="Sampling seconds per case (all modes together, shared by the --processes).",
        show_default=f"{_PLAN.budget_s:g}; --quick: {_QUICK.plan.budget_s:g}",
    ),
]
MinSamplesOpt = Annotated[
    int | None,
    typer.Option(
        "--min-samples",
        metavar="N",
        help="Samples before a mode may stop at the precision target (--setting precision=).",
        show_default=f"{_PLAN.min_samples}; --quick: {_QUICK.plan.min_samples}",
    ),
]
RoundsOpt = Annotated[
    int | None,
    typer.Option(
        "--rounds",
        metavar="N",
        help="Spend each case's budget in this many rounds spread over the run, so its "
        "samples span the machine's drift instead of one short window (for gates on "
        "noisy machines).",
        show_default=str(_PLAN.rounds),
    ),
]
ClockOpt = Annotated[
    str | None,
    typer.Option(
        "--clock",
        metavar="wall|cpu",
        help="What a sample counts: elapsed time (wall), or the measuring process's CPU "
        "time (cpu, CPU devices only): other processes on the core then barely move the "
        "figures, for gates on shared machines; waits are not counted.",
        show_default=_PLAN.clock,
    ),
]
ProcessesOpt = Annotated[
    int | None,
    typer.Option(
        "--processes",
        metavar="K",
        help="Measure every case in this many processes, so the speedup intervals "
        "include what changes from run to run.",
        show_default=str(_DEFAULT.processes),
    ),
]
OverlapOpt = Annotated[
    bool | None,
    typer.Option(
        "--overlap/--no-overlap",
        help="The second process measures beside the first, on other cores, each "
        "compiling and checking every case itself (default: where the run can: CPU "
        "devices, --threads leaving cores for both); --no-overlap measures the "
        "processes one after another.",
        show_default=False,
    ),
]
QuickOpt = Annotated[
    bool, typer.Option("--quick", help="Smoke run: smallest preset, tiny budgets.")
]
OutDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--out",
        metavar="DIR",
        help="Output folder for run JSON and HTML (default reports/; with --resume, the "
        "folder the run file is in).",
        show_default=False,
    ),
]
StrictOpt = Annotated[
    bool, typer.Option("--strict", help="Exit 1 if any case errors or mismatches.")
]
IsolateOpt = Annotated[
    bool,
    typer.Option(
        "--isolate",
        help="Measure each case in a child process: a crash, hang or out-of-memory kill "
        "costs only that case (slower start per case).",
    ),
]
TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="Seconds each mode of a case may take (first call, warm-up, samples) "
        "before that mode is stopped (status timeout); the other modes keep their "
        "figures. Without --isolate a single long native call is only stopped when it "
        "returns.",
    ),
]
DistributedOpt = Annotated[
    bool,
    typer.Option(
        "--distributed",
        help="Join a multi-process JAX run (jax.distributed.initialize) first: sharded "
        "mode then spans every process's devices. Start one jitbench per process; each "
        "writes its own run file (`jitbench report --merge-processes` joins them).",
    ),
]
ProcessIdOpt = Annotated[
    str | None,
    typer.Option(
        "--process-id",
        metavar="I/N",
        help="With --distributed: this process's index and the process count, e.g. 0/2, "
        "process 0's address in $JAX_COORDINATOR_ADDRESS (default: the cluster manager's).",
        show_default=False,
    ),
]
ResumeOpt = Annotated[
    Path | None,
    typer.Option(
        "--resume",
        metavar="RUN.json",
        help="Finish an interrupted run file; cases it holds are not measured again. It "
        "imports the suite files the run file names (their code runs): resume only files "
        "you trust. A suite file changed since the run started is refused.",
        dir_okay=False,
    ),
]
AllowChangedSuitesOpt = Annotated[
    bool,
    typer.Option(
        "--allow-changed-suites",
        help="With --resume: resume even though a suite file changed since the run started.",
    ),
]
LabelOpt = Annotated[
    str | None,
    typer.Option(
        "--label",
        metavar="TEXT",
        help="A short name for the run, shown on its pages, in comparisons and history "
        "instead of the run id (e.g. before-fusion).",
        show_default=False,
    ),
]
RunFormatOpt = Annotated[
    RunFormat,
    typer.Option(
        "--format",
        metavar="table|wide|markdown|csv",
        help="table: for a terminal (compact, fitted to $COLUMNS; plain text when piped); "
        "wide: every column and full intervals at the natural width, and each problem in "
        "full (pipe it to `less -S`); markdown: a GitHub table; csv: one row per line, raw "
        "numbers in seconds, for a spreadsheet or pandas.",
        case_sensitive=False,
    ),
]
SettingOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--setting",
        metavar="NAME=VALUE",
        help="A run setting without an option of its own (repeatable), e.g. precision=0.02 "
        f"(stop sampling at ±2 %; default ±{_PLAN.precision:.0%}), seed=3, sweep=true (each "
        "workload's size sweep), time_split=true (host dispatch vs device time), "
        "retry_timeouts=true; every field of SamplingPlan and these four: "
        "docs/reference/settings.md.",
        show_default=False,
    ),
]
