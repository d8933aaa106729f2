"""What a run is asked to do: the modes, the sampling plan and the run configuration.

These objects validate themselves when constructed (type, range, finiteness), so the CLI,
the Python API and a child process get the same one-line errors; defaults are written here
once. A message names the option as the CLI user knows it (`--budget`), or the field where
the CLI has no option for it, shows the bad value and says what to pass instead.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

from jitbench.errors import ConfigError, unknown_name_message


class Mode(str, enum.Enum):
    """How a workload is executed."""

    NUMPY = "numpy"
    EAGER = "eager"
    JIT = "jit"
    SHARDED = "sharded"  # the jit program over every device of the case's platform


#: The modes a run measures by default, in display order. `sharded` is opt-in
#: (`--modes numpy,jit,sharded`): it needs several devices and answers another question.
ALL_MODES = (Mode.NUMPY, Mode.EAGER, Mode.JIT)
JAX_MODES = (Mode.EAGER, Mode.JIT)
#: Every mode jitbench knows, in display order.
KNOWN_MODES = (*ALL_MODES, Mode.SHARDED)


# ---------------------------------------------------------------------------------------
# Field checks: each returns the value in its canonical form or raises a one-line ConfigError.


def _real(value: object) -> float | None:
    """`value` as a float when it is a finite real number (a bool is not one), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _seconds(name: str, value: object, *, fix: str) -> float:
    """Zero or more seconds."""
    seconds = _real(value)
    if seconds is None or seconds < 0:
        raise ConfigError(
            f"{name} must be a finite number of seconds, 0 or more, got {value!r}; {fix}"
        )
    return seconds


def _budget_error(value: object) -> ConfigError:
    return ConfigError(
        f"--budget must be positive and finite (seconds of sampling per case), got {value!r}; "
        "pass e.g. --budget 0.5."
    )


def check_budget(value: object) -> float:
    """`--budget` as seconds: a finite number above 0.

    Raises:
        ConfigError: anything else (0, negative, NaN, infinite, not a number).
    """
    budget = _real(value)
    if budget is None or budget <= 0:
        raise _budget_error(value)
    return budget


def _precision_error(value: object) -> ConfigError:
    return ConfigError(
        f"--setting precision is a fraction such as 0.01 (±1 %), between 0 and 1, got "
        f"{value!r}; pass e.g. --setting precision=0.02 for ±2 %."
    )


def check_count(name: str, value: object, *, least: int, fix: str) -> int:
    """A whole-number option (`name`, as the user typed it) of at least `least`.

    Raises:
        ConfigError: a bool, a non-integer or a smaller number; `fix` says what to pass.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ConfigError(f"{name} must be at least {least} (a whole number), got {value!r}; {fix}")
    return value


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} is a flag (True or False), got {value!r}.")
    return value


def _names(name: str, value: object, *, example: str) -> tuple[str, ...]:
    """A tuple of distinct non-empty names, in the given order (a list is accepted)."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigError(f"{name} takes a tuple of names such as {example}, got {value!r}.")
    bad = [v for v in value if not (isinstance(v, str) and v.strip())]
    if bad:
        raise ConfigError(f"{name} takes non-empty names such as {example}, got {bad[0]!r}.")
    return tuple(dict.fromkeys(value))


#: Processes a run measures every case in, by default (`--processes`). One process's
#: samples describe that process (its memory layout and the minute it ran in stay fixed),
#: so its intervals do not hold from run to run; two, each with half of the case's budget,
#: let the interval include what changes between processes at about the cost of one more
#: start-up (docs: methodology, "Processes and intervals"; validation, "A/A coverage").
DEFAULT_PROCESSES = 2

#: The sizes a run measures when none are given (`--sizes`): each workload at those of them
#: it defines, so a suite whose workloads define only S runs (`RunConfig.default_sizes`).
DEFAULT_SIZES = ("S", "M")

#: The longest run label (`--label`): it names pages and files, so it stays short.
MAX_LABEL_CHARS = 80


def _label(value: object) -> str | None:
    """A run label: None, or one line of printable text (surrounding spaces dropped)."""
    if value is None:
        return None
    text = value.strip() if isinstance(value, str) else None
    if not text or len(text) > MAX_LABEL_CHARS or not text.isprintable():
        raise ConfigError(
            f"--label is one line of printable text, 1 to {MAX_LABEL_CHARS} characters, got "
            f"{value!r}; pass e.g. --label before-fusion."
        )
    return text


#: How `--threads` spells "the libraries' own defaults" (RunConfig.threads None).
ALL_THREADS = "all"


def parse_threads(value: object) -> int | None:
    """`--threads` as RunConfig takes it: a positive whole number, or None for "all".

    Accepts an int, None, or text ("1", "4", "all", any case).

    Raises:
        ConfigError: anything else, with what to pass instead.
    """
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return _threads(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text == ALL_THREADS:
            return None
        if text.isdigit():
            return _threads(int(text))
    raise _threads_error(value)


def _threads_error(value: object) -> ConfigError:
    return ConfigError(
        f"--threads takes a number of cores (1 or more) or {ALL_THREADS!r}, got {value!r}; "
        f"pass --threads 1 (the default) or --threads {ALL_THREADS} (the libraries' own)."
    )


def _threads(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _threads_error(value)
    return value


def parse_mode(value: object) -> Mode:
    """A Mode from a Mode or its name (any case).

    Raises:
        ConfigError: an unknown name, with the closest known ones.
    """
    if isinstance(value, Mode):
        return value
    known = [m.value for m in Mode]
    name = value.strip().lower() if isinstance(value, str) else None
    if name in known:
        return Mode(name)
    if isinstance(value, str):
        raise ConfigError(unknown_name_message("mode", value, known))
    raise ConfigError(f"unknown mode {value!r}; known: {', '.join(known)}.")


def _set(obj: object, name: str, value: object) -> None:
    """Store the canonical form of a field of a frozen dataclass (in `__post_init__`)."""
    object.__setattr__(obj, name, value)


#: What a sample's seconds may count (`SamplingPlan.clock`).
SAMPLE_CLOCKS = ("wall", "cpu")


@dataclass(frozen=True, kw_only=True)
class SamplingPlan:
    """How long and how precisely to sample.

    Every field is checked when the plan is made (type, range, finite). A plan may be
    degenerate where the sampler still has a meaning for it (one round of a run,
    `for_round`: no budget, precision 0, `min_samples` above `max_samples`); `RunConfig`
    refuses those for a whole run. Why each default is what it is: docs/reference/settings.md
    and docs/methodology/protocol.md (§6-8).

    Attributes:
        min_sample_s: calibration target: one sample lasts at least this long (1 ms).
        warmup_s: after `warmup_calls` calls, keep calling until this much time has passed.
        warmup_calls: calls before any sample.
        min_samples: never declare convergence with fewer samples.
        max_samples: stop a mode at this many samples.
        precision: target relative half-width of the 95 % CI of the median (0.01 = ±1 %).
        budget_s: sampling seconds for all modes of one case together; a run in several
            processes gives each an equal share (`for_process`).
        floor_samples: samples every mode gets even when the budget is spent (shared out
            over processes); it bends once ten budgets are spent (`timer.FLOOR_OVERRUN`).
        max_calls_per_sample: the calibration's cap on calls per sample.
        block_samples: samples of one mode taken in a row before the next mode's.
        rewarm_s: untimed calls of a mode after a switch last about this long.
        clock: "wall" (elapsed time) or "cpu" (the measuring process's CPU time, on CPU
            devices): what a sample's seconds count.
        rounds: the budget is spent in this many rounds spread over the run.

    Raises:
        ConfigError: a field of the wrong type, out of range, NaN or infinite.
    """

    min_sample_s: float = 0.001
    warmup_s: float = 0.01
    warmup_calls: int = 2
    min_samples: int = 10
    max_samples: int = 500
    precision: float = 0.01
    budget_s: float = 0.2
    floor_samples: int = 10
    max_calls_per_sample: int = 10_000_000
    block_samples: int = 1
    rewarm_s: float = 0.004
    rounds: int = 1
    clock: str = "wall"

    def __post_init__(self) -> None:
        _set(
            self,
            "min_sample_s",
            _seconds("min_sample_s", self.min_sample_s, fix="0 times one call per sample."),
        )
        _set(
            self,
            "warmup_s",
            _seconds("warmup_s", self.warmup_s, fix="0 warms up with `warmup_calls` calls only."),
        )
        budget = _real(self.budget_s)
        if budget is None or budget < 0:
            raise _budget_error(self.budget_s)
        _set(self, "budget_s", budget)
        precision = _real(self.precision)
        if precision is None or not 0 <= precision < 1:
            raise _precision_error(self.precision)
        _set(self, "precision", precision)
        check_count("warmup_calls", self.warmup_calls, least=0, fix="0 skips the warm-up calls.")
        check_count("--min-samples", self.min_samples, least=1, fix="pass e.g. --min-samples 10.")
        check_count("max_samples", self.max_samples, least=1, fix="it caps the samples of a mode.")
        check_count("floor_samples", self.floor_samples, least=1, fix="a mode needs a sample.")
        check_count(
            "max_calls_per_sample", self.max_calls_per_sample, least=1, fix="try 10_000_000."
        )
        check_count("block_samples", self.block_samples, least=1, fix="1 alternates every sample.")
        _set(
            self,
            "rewarm_s",
            _seconds("rewarm_s", self.rewarm_s, fix="0 re-warms with one call."),
        )
        check_count("--rounds", self.rounds, least=1, fix="--rounds 1 samples each case in one go.")
        if self.clock not in SAMPLE_CLOCKS:
            raise ConfigError(
                f"--clock is one of {', '.join(SAMPLE_CLOCKS)}, got {self.clock!r}; wall "
                "counts elapsed time, cpu the measuring process's CPU time."
            )

    @property
    def compile_measurements(self) -> int:
        """Cold jit compiles measured per case: 3 with rounds (the median is kept, and the
        repeats come after the last round, so they are spread over the run's end), else 1."""
        return 3 if self.rounds > 1 else 1

    def for_round(self) -> SamplingPlan:
        """The plan of one of `rounds` rounds: its share of the budget, the sample floor and
        the sample cap. Convergence is still judged on all samples so far (`min_samples`,
        `precision`), so a case that is precise early still gets a sample each round."""
        if self.rounds <= 1:
            return self
        return replace(
            self,
            budget_s=self.budget_s / self.rounds,
            floor_samples=max(1, math.ceil(self.floor_samples / self.rounds)),
            max_samples=max(1, math.ceil(self.max_samples / self.rounds)),
        )

    def for_process(self, processes: int) -> SamplingPlan:
        """The plan each of `processes` processes measures a case with: an equal share of
        the budget and of the sample floor, which are the case's however many processes
        measure it. The cap stays whole.

        The floor is shared because each sample now follows a re-warm call
        (`timer.sample_interleaved`): a slow case's samples are one call each, so its
        floor costs twice what it did, and two processes of 10 floor samples each made the
        default suite take 39-40 s instead of 34. Five rounds a process still give each
        process's paired estimate (the median of its per-round ratios) and the pooled
        case the 10 samples its CI needs."""
        if processes <= 1:
            return self
        return replace(
            self,
            budget_s=self.budget_s / processes,
            floor_samples=max(1, math.ceil(self.floor_samples / processes)),
        )


#: The `SamplingPlan` fields that have a `jitbench run` option of their own, and that
#: option, in `--help`'s order; every other field is `--setting NAME=VALUE`. The one table
#: the CLI (which refuses these in `--setting`) and a resume's refusal (which names what
#: changed as the user typed it: `runner.plan.changed_settings`) both read.
PLAN_OPTIONS: Mapping[str, str] = MappingProxyType(
    {
        "budget_s": "--budget",
        "min_samples": "--min-samples",
        "rounds": "--rounds",
        "clock": "--clock",
    }
)


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """What to run and how precisely. `plan` holds the sampling rules.

    Sizes, modes and devices are kept as tuples of distinct names in the given order (a
    list is accepted; a mode may be given by name), matched against the workloads and
    the machine when the run is planned; the default sizes (`DEFAULT_SIZES`) measure each
    workload at those it defines. Each field's why: docs/reference/settings.md.

    Fields beside `plan`, sizes, modes and devices:
        threads: cores the measured code gets, pinned, with the BLAS/OpenMP pools sized
            to match (`measure.threads.limited_threads`); None: the libraries' defaults.
        processes: processes that measure every case (`DEFAULT_PROCESSES`), each with a
            share of the budget; their spread makes the intervals hold from run to run.
        overlap: the second process measures beside the first (`runner.overlap`); None
            where the run can, False one after another.
        timeout_s: each mode's seconds of its own calls per case (`measure.limits`);
            `retry_timeouts` lets a later worker try a mode that ran past it again.
        x64: float64 (True) or float32 (False); None follows the suites' declared width
            (`runner.plan.suite_float_width`) and the run records what it ran with.
        label: a short name for the run, shown instead of its id.
        time_split: trace a few calls per JAX mode to split host dispatch from device
            execution (`Measurement.time_split`), after sampling.

    Raises:
        ConfigError: a field of the wrong type or out of range, an unknown or missing mode,
            or a plan a whole run cannot use (no budget, precision 0, `min_samples` above
            `max_samples`).
    """

    sizes: tuple[str, ...] = DEFAULT_SIZES
    modes: tuple[Mode, ...] = ALL_MODES
    devices: tuple[str, ...] = ()
    x64: bool | None = None
    sweep: bool = False
    seed: int = 0
    quick: bool = False
    plan: SamplingPlan = field(default_factory=SamplingPlan)
    timeout_s: float | None = None
    isolate: bool = False
    processes: int = DEFAULT_PROCESSES
    threads: int | None = 1
    label: str | None = None
    time_split: bool = False
    retry_timeouts: bool = False
    overlap: bool | None = None

    def __post_init__(self) -> None:
        sizes = _names("--sizes", self.sizes, example="('S', 'M')")
        if not sizes:
            raise ConfigError("--sizes needs at least one size preset, such as S.")
        _set(self, "sizes", sizes)
        if isinstance(self.modes, str) or not isinstance(self.modes, Sequence):
            raise ConfigError(f"--modes takes modes such as ('numpy', 'jit'), got {self.modes!r}.")
        modes = tuple(dict.fromkeys(parse_mode(m) for m in self.modes))
        if not modes:
            raise ConfigError("--modes needs at least one of numpy, eager, jit, sharded.")
        _set(self, "modes", modes)
        _set(self, "devices", _names("--devices", self.devices, example="('cpu', 'gpu:1')"))
        if self.x64 is not None:
            _flag("--x64", self.x64)
        _flag("--setting sweep", self.sweep)
        for name in ("quick", "isolate"):
            _flag(f"--{name}", getattr(self, name))
        _flag("--setting retry_timeouts", self.retry_timeouts)
        _flag("--setting time_split", self.time_split)
        if self.overlap is not None:
            _flag("--overlap", self.overlap)
        check_count(
            "--setting seed",
            self.seed,
            least=0,
            fix="the input generator takes a seed of 0 or more.",
        )
        check_count(
            "--processes",
            self.processes,
            least=1,
            fix="each process measures every case once; 2 or 3 gives intervals that hold "
            "from run to run.",
        )
        _set(self, "threads", _threads(self.threads))
        _set(self, "label", _label(self.label))
        if not isinstance(self.plan, SamplingPlan):
            raise ConfigError(f"plan must be a SamplingPlan, got {type(self.plan).__name__}.")
        if self.timeout_s is not None:
            timeout = _real(self.timeout_s)
            if timeout is None or timeout <= 0:
                raise ConfigError(
                    f"--timeout is a positive number of seconds, got {self.timeout_s!r}; "
                    "leave it out for no time limit."
                )
            _set(self, "timeout_s", timeout)
        # A whole run's plan: the degenerate plans a round may be are refused here.
        plan = self.plan
        if plan.budget_s <= 0:
            raise _budget_error(plan.budget_s)
        if plan.precision <= 0:
            raise _precision_error(plan.precision)
        if plan.min_samples > plan.max_samples:
            raise ConfigError(
                f"--min-samples {plan.min_samples} is above max_samples {plan.max_samples}, "
                "so no case could converge; lower --min-samples or raise max_samples."
            )

    @property
    def default_sizes(self) -> bool:
        """Whether `sizes` are the default ones (`DEFAULT_SIZES`, given or not): a run then
        measures each workload at those of them it defines (`runner.plan.plan_cases`).
        Told by value, so a resumed run and a run's worker processes, which read the
        recorded sizes back, plan the same cases."""
        return self.sizes == DEFAULT_SIZES

    @classmethod
    def quick_settings(cls, **overrides: Any) -> RunConfig:
        """Smoke-test settings: smallest preset, tiny budgets, seconds in total."""
        plan = SamplingPlan(
            min_sample_s=0.001,
            warmup_s=0.0,
            min_samples=3,
            max_samples=5,
            precision=0.05,
            budget_s=0.02,
            floor_samples=3,
        )
        # One process: a smoke run checks that the code runs, not how it varies.
        return cls(**{"sizes": ("S",), "plan": plan, "quick": True, "processes": 1, **overrides})

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["modes"] = [m.value for m in self.modes]
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConfig:
        """Rebuild a config from `to_dict` output (a run file's "config"); unknown keys are
        ignored so files written by other versions still load, and missing ones take their
        defaults, except `threads`: a file without it was measured before jitbench set
        threads, with the libraries' own defaults (None); and the plan's `rewarm_s`: one
        without it re-warmed with one call (0).

        Raises:
            ConfigError: a value cannot be read back (e.g. an unknown mode) or breaks a
                rule of the settings; the message says which.
        """
        known = {f.name for f in fields(cls)}
        plan_known = {f.name for f in fields(SamplingPlan)}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs.setdefault("threads", None)
        kwargs.setdefault("processes", 1)  # measured before --processes existed: one
        kwargs.setdefault("overlap", False)  # measured before --overlap existed: in turn
        try:
            if "plan" in kwargs:
                plan = {k: v for k, v in dict(kwargs["plan"]).items() if k in plan_known}
                plan.setdefault("rewarm_s", 0.0)  # measured before it existed: one call
                kwargs["plan"] = SamplingPlan(**plan)
            for key in ("sizes", "devices"):
                if key in kwargs:
                    kwargs[key] = tuple(str(x) for x in kwargs[key])
            if "modes" in kwargs:
                kwargs["modes"] = tuple(Mode(m) for m in kwargs["modes"])
            return cls(**kwargs)
        except (TypeError, ValueError, ConfigError) as exc:
            raise ConfigError(f"cannot read the recorded run configuration: {exc}") from None
