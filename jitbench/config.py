"""What a run is asked to do: the modes, the sampling plan and the run configuration.

These objects validate themselves when constructed, so the CLI, the Python API and a child
process get the same errors; defaults are written here once.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from jitbench.errors import ConfigError


class Mode(str, enum.Enum):
    """How a workload is executed."""

    NUMPY = "numpy"
    EAGER = "eager"
    JIT = "jit"


ALL_MODES = (Mode.NUMPY, Mode.EAGER, Mode.JIT)  # also the display order
JAX_MODES = (Mode.EAGER, Mode.JIT)


@dataclass(frozen=True, kw_only=True)
class SamplingPlan:
    """How long and how precisely to sample.

    Attributes:
        min_sample_s: calibration target: one sample lasts at least this long.
        warmup_s: after at least `warmup_calls` calls, keep calling until this much time.
        min_samples: never declare convergence with fewer samples.
        max_samples: stop a mode at this many samples.
        precision: target relative half-width of the 95 % CI of the median (0.01 = ±1 %).
        budget_s: time budget for sampling all modes of one case together.
        floor_samples: samples every mode gets even when the budget is spent.
        rounds: the budget is spent in this many rounds; a run takes round 1 of every case,
            then round 2 of every case, and so on, so each case's samples are spread over
            the whole run instead of one contiguous window (machine speed drifts over
            seconds; samples from one short window agree with each other more than with
            the next window). 1 samples each case in one go.
    """

    min_sample_s: float = 0.01
    warmup_s: float = 0.05
    warmup_calls: int = 2
    min_samples: int = 10
    max_samples: int = 500
    precision: float = 0.01
    budget_s: float = 0.5
    floor_samples: int = 3
    max_calls_per_sample: int = 10_000_000
    rounds: int = 1

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


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """What to run and how precisely. `plan` holds the sampling rules."""

    sizes: tuple[str, ...] = ("S", "M")
    modes: tuple[Mode, ...] = ALL_MODES
    devices: tuple[str, ...] = ()
    x64: bool = False
    sweep: bool = False
    seed: int = 0
    quick: bool = False
    plan: SamplingPlan = field(default_factory=SamplingPlan)
    timeout_s: float | None = None
    isolate: bool = False

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
        )
        return cls(**{"sizes": ("S",), "plan": plan, "quick": True, **overrides})

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["modes"] = [m.value for m in self.modes]
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConfig:
        """Rebuild a config from `to_dict` output (a run file's "config"); unknown keys are
        ignored so files written by other versions still load.

        Raises:
            ConfigError: a value cannot be read back (e.g. an unknown mode).
        """
        known = {f.name for f in fields(cls)}
        plan_known = {f.name for f in fields(SamplingPlan)}
        kwargs = {k: v for k, v in data.items() if k in known}
        try:
            if "plan" in kwargs:
                kwargs["plan"] = SamplingPlan(
                    **{k: v for k, v in dict(kwargs["plan"]).items() if k in plan_known}
                )
            for key in ("sizes", "devices"):
                if key in kwargs:
                    kwargs[key] = tuple(str(x) for x in kwargs[key])
            if "modes" in kwargs:
                kwargs["modes"] = tuple(Mode(m) for m in kwargs["modes"])
            return cls(**kwargs)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"cannot read the recorded run configuration: {exc}") from None
