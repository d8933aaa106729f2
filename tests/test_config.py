"""The run configuration validates itself where it is made (issue 13): every rule through
the Python API, and through the CLI, where a bad option exits 2 with one line before
anything is measured."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

from jitbench.config import ALL_MODES, Mode, RunConfig, SamplingPlan, parse_threads
from jitbench.errors import ConfigError
from tests.faults import QUICK, invoke, run_files

NAN, INF = math.nan, math.inf


def refused(make: object, *words: str) -> str:
    """The one-line ConfigError message `make()` raises; it holds every one of `words`."""
    with pytest.raises(ConfigError) as info:
        make()  # type: ignore[operator]
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message
    return message


# --- SamplingPlan ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("budget_s", -1.0, ("--budget must be positive", "got -1.0", "--budget 0.5")),
        ("budget_s", NAN, ("--budget must be positive", "got nan")),
        ("budget_s", INF, ("--budget must be positive", "got inf")),
        ("budget_s", "0.5", ("--budget", "got '0.5'")),
        ("budget_s", True, ("--budget", "got True")),
        ("precision", -0.01, ("precision is a fraction", "got -0.01", "precision=0.02")),
        ("precision", 1.0, ("precision is a fraction", "got 1.0")),
        ("precision", 5, ("precision is a fraction", "got 5")),
        ("precision", NAN, ("precision", "got nan")),
        ("min_sample_s", -0.001, ("min_sample_s must be a finite number of seconds", "-0.001")),
        ("min_sample_s", INF, ("min_sample_s", "got inf")),
        ("warmup_s", NAN, ("warmup_s must be a finite number of seconds", "got nan")),
        ("rewarm_s", -0.004, ("rewarm_s must be a finite number of seconds", "-0.004")),
        ("rewarm_s", INF, ("rewarm_s", "got inf", "0 re-warms with one call")),
        ("warmup_calls", -1, ("warmup_calls must be at least 0", "got -1")),
        ("warmup_calls", 1.5, ("warmup_calls", "whole number", "got 1.5")),
        ("min_samples", 0, ("--min-samples must be at least 1", "got 0", "--min-samples 10")),
        ("min_samples", 2.0, ("--min-samples", "got 2.0")),
        ("max_samples", 0, ("max_samples must be at least 1", "got 0")),
        ("floor_samples", 0, ("floor_samples must be at least 1", "got 0")),
        ("max_calls_per_sample", 0, ("max_calls_per_sample must be at least 1",)),
        ("rounds", 0, ("--rounds must be at least 1", "got 0", "--rounds 1")),
        ("rounds", True, ("--rounds", "got True")),
    ],
)
def test_sampling_plan_refuses(field: str, value: object, words: tuple[str, ...]) -> None:
    refused(lambda: SamplingPlan(**{field: value}), *words)


def test_sampling_plan_keeps_seconds_as_floats() -> None:
    plan = SamplingPlan(budget_s=2, min_sample_s=0, warmup_s=1, precision=0)
    assert (plan.budget_s, plan.min_sample_s, plan.warmup_s) == (2.0, 0.0, 1.0)
    assert all(isinstance(v, float) for v in (plan.budget_s, plan.precision))


def test_a_rounds_plan_may_be_degenerate_where_the_sampler_has_a_meaning_for_it() -> None:
    # One round of 100: its cap (5) is below min_samples (10), which counts all rounds.
    whole = SamplingPlan(min_samples=10, max_samples=500, rounds=100, budget_s=0.5)
    one = whole.for_round()
    assert (one.min_samples, one.max_samples, one.floor_samples) == (10, 5, 1)
    assert one.budget_s == pytest.approx(0.005)
    # No budget (floor samples only) and precision 0 (never stop early) are plans too.
    assert SamplingPlan(budget_s=0.0, precision=0.0).budget_s == 0.0


# --- RunConfig --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"sizes": "S"}, ("--sizes takes a tuple of names", "got 'S'")),
        ({"sizes": ()}, ("--sizes needs at least one size",)),
        ({"sizes": ("S", "")}, ("--sizes takes non-empty names", "got ''")),
        ({"sizes": (1,)}, ("--sizes", "got 1")),
        ({"modes": ()}, ("--modes needs at least one of numpy, eager, jit",)),
        ({"modes": "jit"}, ("--modes takes modes", "got 'jit'")),
        ({"modes": ("jitt",)}, ("unknown mode 'jitt'; did you mean 'jit'?", "known: numpy")),
        ({"modes": (3,)}, ("unknown mode 3",)),
        ({"devices": "cpu"}, ("--devices takes a tuple of names", "got 'cpu'")),
        ({"devices": (" ",)}, ("--devices takes non-empty names",)),
        ({"x64": 1}, ("--x64 is a flag (True or False)", "got 1")),
        ({"sweep": "yes"}, ("sweep is a flag",)),
        ({"quick": None}, ("--quick is a flag",)),
        ({"isolate": 0}, ("--isolate is a flag",)),
        ({"seed": -1}, ("seed must be at least 0", "got -1")),
        ({"seed": 1.5}, ("seed", "got 1.5")),
        ({"seed": False}, ("seed", "got False")),
        ({"plan": {"budget_s": 1}}, ("plan must be a SamplingPlan, got dict",)),
        ({"timeout_s": 0}, ("--timeout is a positive number of seconds", "got 0")),
        ({"timeout_s": -3.0}, ("--timeout is a positive", "got -3.0", "leave it out")),
        ({"timeout_s": INF}, ("--timeout is a positive", "got inf")),
        ({"timeout_s": NAN}, ("--timeout is a positive", "got nan")),
        ({"timeout_s": "5"}, ("--timeout", "got '5'")),
        ({"threads": 0}, ("--threads takes a number of cores (1 or more) or 'all'", "got 0")),
        ({"threads": -2}, ("--threads takes", "got -2")),
        ({"threads": True}, ("--threads takes", "got True")),
        ({"threads": 1.5}, ("--threads takes", "got 1.5")),
        ({"threads": "all"}, ("--threads takes", "got 'all'")),  # the CLI spelling is parsed
        ({"label": "two\nlines"}, ("--label is one line of printable text", "got 'two\\nlines'")),
        ({"label": "  "}, ("--label is one line",)),
        ({"label": "x" * 81}, ("--label", "1 to 80 characters")),
        ({"label": 3}, ("--label", "got 3")),
        ({"plan": SamplingPlan(budget_s=0.0)}, ("--budget must be positive", "got 0.0")),
        ({"plan": SamplingPlan(precision=0.0)}, ("precision is a fraction", "got 0.0")),
        (
            {"plan": SamplingPlan(min_samples=600)},
            ("--min-samples 600 is above max_samples 500", "lower --min-samples"),
        ),
    ],
)
def test_run_config_refuses(changes: dict[str, object], words: tuple[str, ...]) -> None:
    refused(lambda: RunConfig(**changes), *words)
    refused(lambda: replace(RunConfig(), **changes), *words)  # `replace` checks too


def test_run_config_keeps_a_canonical_form() -> None:
    config = RunConfig(
        sizes=["M", "S", "M"], modes=["JIT", "numpy", Mode.JIT], devices=["cpu"], timeout_s=5
    )
    assert config.sizes == ("M", "S") and config.devices == ("cpu",)
    assert config.modes == (Mode.JIT, Mode.NUMPY)
    assert config.timeout_s == 5.0 and isinstance(config.timeout_s, float)
    assert RunConfig().modes == ALL_MODES and RunConfig().timeout_s is None
    assert RunConfig().threads == 1 and RunConfig(threads=None).threads is None
    assert RunConfig().label is None and RunConfig(label=" before ").label == "before"


@pytest.mark.parametrize(
    ("text", "threads"), [("1", 1), (" 4 ", 4), ("all", None), ("ALL", None), (2, 2), (None, None)]
)
def test_threads_as_the_cli_spells_them(text: object, threads: int | None) -> None:
    assert parse_threads(text) == threads


@pytest.mark.parametrize("text", ["0", "-1", "two", "", "1.5", False])
def test_threads_the_cli_refuses(text: object) -> None:
    refused(lambda: parse_threads(text), "--threads takes", "--threads all")


def test_config_round_trips_through_the_run_file() -> None:
    config = RunConfig.quick_settings(
        sizes=("S", "M"),
        modes=(Mode.JIT,),
        timeout_s=3.0,
        isolate=True,
        x64=True,
        seed=7,
        label="before",
    )
    assert RunConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    old = {k: v for k, v in config.to_dict().items() if k != "label"}  # before --label
    assert RunConfig.from_dict(old).label is None
    for threads in (None, 2):
        again = RunConfig.from_dict(
            json.loads(json.dumps(replace(config, threads=threads).to_dict()))
        )
        assert again.threads == threads
    # A file from before --threads was measured with the libraries' own pools.
    assert RunConfig.from_dict({"sizes": ["S"]}).threads is None
    # A plan from before rewarm_s re-warmed with one call, whatever the default.
    assert RunConfig.from_dict({"plan": {"budget_s": 0.2}}).plan.rewarm_s == 0.0
    warmer = replace(config, plan=SamplingPlan(rewarm_s=0.004))
    assert RunConfig.from_dict(json.loads(json.dumps(warmer.to_dict()))) == warmer
    with pytest.raises(ConfigError):
        RunConfig.from_dict({"modes": ["warp"]})
    refused(
        lambda: RunConfig.from_dict({"plan": {"budget_s": -1}}),
        "cannot read the recorded run configuration: --budget must be positive",
    )


# --- through the CLI: exit 2, one line, nothing measured -------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--budget", "0"), "--budget must be positive"),
        (("--budget", "-1"), "--budget must be positive"),
        (("--budget", "nan"), "--budget must be positive and finite"),
        (("--budget", "inf"), "got inf"),
        (("--setting", "precision=0"), "precision is a fraction"),
        (("--setting", "precision=1"), "precision is a fraction"),
        (("--setting", "precision=nan"), "precision is a fraction"),
        (("--min-samples", "0"), "--min-samples must be at least 1"),
        (("--rounds", "0"), "--rounds must be at least 1"),
        (("--timeout", "0"), "--timeout is a positive number of seconds, got 0.0"),
        (("--timeout", "inf"), "--timeout is a positive number of seconds, got inf"),
        (("--timeout", "nan"), "--timeout is a positive number of seconds, got nan"),
        (("--setting", "seed=-1"), "seed must be at least 0"),
        (("--modes", "numpy,warp"), "unknown mode 'warp'"),
        (("--threads", "0"), "--threads takes a number of cores (1 or more) or 'all', got 0"),
        (("--threads", "many"), "--threads takes a number of cores"),
        (("--threads", "4096"), "--threads 4096 is more than the"),
    ],
)
def test_the_cli_reports_a_bad_option_before_measuring(
    args: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    result = invoke("run", *QUICK, "--out", tmp_path, "ok_double", *args)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert run_files(tmp_path) == [] and "case(s)" not in result.stderr


def test_the_cli_raises_the_cap_with_min_samples(tmp_path: Path) -> None:
    from jitbench.cli.run_options import build_config

    config = build_config(min_samples=600)
    assert (config.plan.min_samples, config.plan.max_samples) == (600, 600)
    capped = build_config(min_samples=600, settings=["max_samples=700"])
    assert (capped.plan.min_samples, capped.plan.max_samples) == (600, 700)


# --- the default sizes: each workload at those it defines -----------------------------------


def _vector(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


def _sized(name: str, *sizes: str):
    from jitbench import workload

    return workload(
        lambda xp, x: 2 * x, inputs=_vector, sizes={s: {"n": 8} for s in sizes}, name=name
    )


def test_default_sizes_measure_each_workload_at_those_it_defines() -> None:
    import jax

    from jitbench.config import DEFAULT_SIZES
    from jitbench.runner.plan import plan_cases

    cpu = jax.devices("cpu")[:1]
    only_s, both = _sized("only_s", "S"), _sized("both", "S", "M", "L")
    assert RunConfig().sizes == DEFAULT_SIZES and RunConfig().default_sizes
    planned = plan_cases([only_s, both], RunConfig(), cpu)
    assert [(pc.workload.name, pc.size) for pc in planned] == [
        ("only_s", "S"),
        ("both", "S"),
        ("both", "M"),
    ]
    # A suite of S-only workloads runs at S with the defaults …
    assert [pc.size for pc in plan_cases([only_s], RunConfig(), cpu)] == ["S"]
    # … as read back from the run file (a resume, a worker process).
    again = RunConfig.from_dict(json.loads(json.dumps(RunConfig().to_dict())))
    assert again.default_sizes and [pc.size for pc in plan_cases([only_s], again, cpu)] == ["S"]
    # Sizes given otherwise are each one a workload must define.
    for sizes in (("M",), ("S", "L"), ("M", "S")):
        assert not RunConfig(sizes=sizes).default_sizes
        refused(lambda s=sizes: plan_cases([only_s], RunConfig(sizes=s), cpu), "unknown size")
    # Defaults that no workload defines fail as any unknown size does.
    refused(lambda: plan_cases([_sized("large", "L")], RunConfig(), cpu), "unknown size 'S'")
    # A workload that defines none of them, beside one that does, is not left out silently.
    refused(
        lambda: plan_cases([only_s, _sized("large", "L")], RunConfig(), cpu),
        "workload 'large' defines none of the default sizes S, M (it has L); pass the sizes "
        "to measure, e.g. --sizes S,M,L.",
    )


def test_a_run_of_an_s_only_suite_with_the_default_sizes_measures_s(tmp_path: Path) -> None:
    from jitbench.results import load_run

    suite = tmp_path / "s.py"
    suite.write_text(
        "from jitbench import workload\n\n"
        "def vec(rng, *, dtype, n):\n"
        "    return (rng.standard_normal(n).astype(dtype),)\n\n"
        '@workload(inputs=vec, sizes={"S": {"n": 8}})\n'
        "def double(xp, x):\n"
        "    return 2 * x\n"
    )
    common = ("--suite", suite, "--processes", "1", "-m", "numpy", "--budget", "0.01")
    result = invoke("run", *common, "--out", tmp_path / "out")
    assert result.exit_code == 0, result.stderr
    [path] = run_files(tmp_path / "out")
    run = load_run(path)
    assert {m.case.size for m in run.measurements} == {"S"}
    assert run.config.settings.sizes == ("S", "M")  # what was asked: the default sizes
    # An explicit size no workload defines is still refused, before anything is measured.
    explicit = invoke("run", *common, "-s", "M", "--out", tmp_path / "explicit")
    assert explicit.exit_code == 2 and "unknown size 'M'; known: S." in explicit.stderr
    assert run_files(tmp_path / "explicit") == []


# --- what run_workloads takes: a list of workloads ------------------------------------------


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ("one", ("got the workload 'only_s' alone; pass [only_s].",)),
        ("selu", ("got str", "jitbench.run(['selu']")),
        (["selu"], ("got 'selu' in it", "jitbench.run(['selu']")),
        (42, ("takes a list of workloads (made by @workload), got int.",)),
    ],
)
@pytest.mark.parametrize("config", [None, RunConfig(processes=1), RunConfig(processes=2)])
def test_run_workloads_refuses_what_is_not_a_list_of_workloads(given, words, config) -> None:
    from jitbench import run_workloads

    workloads = _sized("only_s", "S") if given == "one" else given
    refused(lambda: run_workloads(workloads, config), "workloads takes a list", *words)


def test_one_table_names_the_plan_fields_with_an_option_of_their_own() -> None:
    """`config.PLAN_OPTIONS` is the table `run`'s `--setting` refuses and a resume's
    refusal names from: every entry a plan field and an option `run` takes, and a
    resume that changed one names that option (a changed clock was '--setting clock',
    which `--setting` refuses, from a second table that lacked it)."""
    from dataclasses import fields

    from jitbench.config import PLAN_OPTIONS
    from jitbench.runner.plan import changed_settings
    from tools.option_counts import command_surfaces

    run_options = next(s for s in command_surfaces() if s.name == "run").options
    assert set(PLAN_OPTIONS) <= {f.name for f in fields(SamplingPlan)}
    assert set(PLAN_OPTIONS.values()) <= set(run_options)
    plan = replace(SamplingPlan(), clock="cpu", budget_s=3.0, precision=0.02)
    assert changed_settings(RunConfig(plan=plan)) == ["--budget", "--clock", "--setting precision"]
    for name, option in PLAN_OPTIONS.items():
        said = invoke("run", *QUICK, "--setting", f"{name}=1", "double")
        assert said.exit_code == 2 and f"has an option of its own: {option}" in said.output
