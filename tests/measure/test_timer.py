"""Calibration, warm-up and interleaved sampling, driven by a fake clock (exact asserts)."""

from __future__ import annotations

import gc
import itertools
from dataclasses import replace

import pytest

from jitbench.config import SamplingPlan
from jitbench.errors import ConfigError
from jitbench.measure.timer import (
    calibrate,
    relative_ci_halfwidth,
    rewarm_calls,
    sample_interleaved,
    time_calls,
    warm_up,
    warm_up_and_calibrate,
)
from jitbench.stats import MIN_CI_SAMPLES


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        self.t += dt


def work(clock: FakeClock, dt: float):
    return lambda: clock.advance(dt)


def test_time_calls_counts_only_the_loop():
    clock = FakeClock()
    assert time_calls(work(clock, 0.25), 4, clock) == pytest.approx(1.0)


def test_calibrate_reaches_min_sample_time_in_few_steps():
    clock = FakeClock()
    plan = SamplingPlan(min_sample_s=0.01)
    # 1 call takes 1e-4 s: jump to ceil(0.01 / 1e-4 * 1.2) = 120 calls (12 ms) at once.
    assert calibrate(work(clock, 1e-4), plan=plan, clock=clock) == 120


def test_calibrate_slow_call_needs_one_call_per_sample():
    clock = FakeClock()
    assert calibrate(work(clock, 0.5), plan=SamplingPlan(min_sample_s=0.01), clock=clock) == 1


def test_calibrate_zero_time_grows_tenfold_until_cap():
    clock = FakeClock()
    plan = SamplingPlan(min_sample_s=0.01, max_calls_per_sample=1000)
    assert calibrate(lambda: None, plan=plan, clock=clock) == 1000


def test_warm_up_makes_at_least_min_calls_then_until_time():
    clock = FakeClock()
    assert warm_up(work(clock, 1.0), plan=SamplingPlan(warmup_s=0.0), clock=clock) == 2
    # 1/64 s per call is exact in binary: 3 calls = 0.047 s < 0.05 s <= 4 calls.
    assert warm_up(work(clock, 1 / 64), plan=SamplingPlan(warmup_s=0.05), clock=clock) == 4


def counted(clock: FakeClock, durations):
    """A call whose k-th call takes durations(k) seconds; `calls` counts them."""
    calls = itertools.count(1)
    state = {"calls": 0}

    def f():
        state["calls"] = next(calls)
        clock.advance(durations(state["calls"]))

    return f, state


def test_warm_up_and_calibrate_spends_the_warm_up_on_calibrated_probes():
    clock = FakeClock()
    fn, state = counted(clock, lambda k: 1e-4)
    plan = SamplingPlan(min_sample_s=0.01, warmup_s=0.05)
    # 2 warm-up calls, a 1-call probe, then 120-call probes (12 ms) until 50 ms have passed.
    assert warm_up_and_calibrate(fn, plan=plan, clock=clock) == 120
    assert state["calls"] == 2 + 1 + 5 * 120
    assert clock.t == pytest.approx(0.0603)
    # The two steps one after the other: 50 ms of warm-up, then 12.1 ms of calibration.
    apart = FakeClock()
    warm_up(work(apart, 1e-4), plan=plan, clock=apart)
    calibrate(work(apart, 1e-4), plan=plan, clock=apart)
    assert apart.t == pytest.approx(0.0621)


def test_warm_up_and_calibrate_without_warm_up_time_is_calibration():
    clock = FakeClock()
    fn, state = counted(clock, lambda k: 1e-4)
    plan = SamplingPlan(min_sample_s=0.01, warmup_s=0.0)
    assert warm_up_and_calibrate(fn, plan=plan, clock=clock) == 120
    assert state["calls"] == 2 + 1 + 120
    slow, state = counted(clock, lambda k: 0.5)
    assert warm_up_and_calibrate(slow, plan=plan, clock=clock) == 1 and state["calls"] == 3


def test_calibration_holds_for_the_warm_call():
    """Calls that get 4x faster once warm: the probe after the warm-up time grows n, so a
    sample of the warm call still lasts min_sample_s."""
    clock = FakeClock()
    fn, _ = counted(clock, lambda k: 4e-4 if k <= 30 else 1e-4)
    plan = SamplingPlan(min_sample_s=0.01, warmup_s=0.05)
    n = warm_up_and_calibrate(fn, plan=plan, clock=clock)
    assert n * 1e-4 >= plan.min_sample_s
    assert clock.t >= plan.warmup_s


def test_warm_up_and_calibrate_stops_at_the_cap():
    clock = FakeClock()
    plan = SamplingPlan(min_sample_s=0.01, warmup_s=0.0, max_calls_per_sample=1000)
    assert warm_up_and_calibrate(lambda: None, plan=plan, clock=clock) == 1000


def test_constant_samples_converge_at_min_samples():
    clock = FakeClock()
    plan = SamplingPlan(min_samples=10, max_samples=100, precision=0.01, budget_s=100)
    series = sample_interleaved({"a": work(clock, 1e-3)}, {"a": 10}, plan=plan, clock=clock)
    assert series["a"].stop_reason == "converged"
    assert series["a"].samples_s == [pytest.approx(1e-3)] * 10


@pytest.mark.parametrize("block", [1, 3])
def test_rounds_alternate_between_modes_in_blocks(block):
    clock = FakeClock()
    order: list[str] = []

    def call(name: str, dt: float):
        def f():
            order.append(name)
            clock.advance(dt)

        return f

    plan = SamplingPlan(
        min_samples=6, max_samples=6, precision=0.0, budget_s=100, block_samples=block, rewarm_s=0
    )
    series = sample_interleaved(
        {"numpy": call("numpy", 1e-3), "jit": call("jit", 1e-4)},
        {"numpy": 1, "jit": 1},
        plan=plan,
        clock=clock,
    )
    # Each block follows one untimed call of its own (the re-warm after the switch; with
    # rewarm_s 0, one call).
    assert order == (["numpy"] * (1 + block) + ["jit"] * (1 + block)) * (6 // block)
    assert [len(s.samples_s) for s in series.values()] == [6, 6]


def test_a_block_is_cut_where_the_group_may_stop():
    """Blocks of 4 reach the floor (3), min_samples (10) and the cap (16) exactly, so the
    group stops there and not up to 3 samples later."""
    clock = FakeClock()
    noise = itertools.cycle([1.0, 3.0])  # never precise enough
    taken: list[int] = []
    plan = SamplingPlan(
        min_samples=10,
        floor_samples=3,
        max_samples=16,
        block_samples=4,
        precision=0.01,
        budget_s=1e9,
    )
    series = sample_interleaved(
        {"a": lambda: clock.advance(next(noise)), "b": work(clock, 1.0)},
        {"a": 1, "b": 1},
        plan=plan,
        clock=clock,
        on_round=lambda n, _t: taken.append(n),
    )
    assert taken == [3, 7, 10, 14]
    assert series["a"].stop_reason == "max_samples" and len(series["a"].samples_s) == 16
    # The budget spent at the first block's end: the floor is where it stops.
    plan = replace(plan, budget_s=0.0)
    series = sample_interleaved(
        {"a": lambda: clock.advance(next(noise))}, {"a": 1}, plan=plan, clock=clock
    )
    assert series["a"].stop_reason == "budget" and len(series["a"].samples_s) == 3
    # Below MIN_CI_SAMPLES no interval exists: with min_samples 3 steady samples first
    # converge at 6, so blocks of 4 are cut there (4, then 2), not taken on to 8.
    plan = SamplingPlan(min_samples=3, max_samples=50, block_samples=4, precision=0.01)
    series = sample_interleaved({"a": work(clock, 1e-3)}, {"a": 1}, plan=plan, clock=clock)
    assert series["a"].stop_reason == "converged"
    assert len(series["a"].samples_s) == MIN_CI_SAMPLES == 6


def test_a_callable_sampled_alone_is_re_warmed_once():
    clock = FakeClock()
    calls: list[str] = []

    def f():
        calls.append("f")
        clock.advance(1e-3)

    plan = SamplingPlan(min_samples=4, max_samples=4, precision=0.0, budget_s=100, rewarm_s=4e-3)
    series = sample_interleaved({"jit": f}, {"jit": 2}, plan=plan, clock=clock)
    assert len(series["jit"].samples_s) == 4
    assert len(calls) == 4 + 4 * 2  # 4 ms of re-warm before the first sample, none after


@pytest.mark.parametrize(
    ("first_call_s", "rewarm_s", "count"),
    [
        (1e-3, 4e-3, 4),  # enough calls to last rewarm_s at the first call's speed
        (3e-4, 4e-3, 14),  # rounded up
        (4e-3, 4e-3, 1),
        (0.011, 4e-3, 1),  # a slow call: one, as long as it takes
        (1.5, 4e-3, 0),  # a call over a second: none (a switch's few ms are nothing to it)
        (1e-3, 0.0, 1),  # rewarm_s 0: one call
        (0.0, 4e-3, 1000),  # below the clock's resolution: the cap
    ],
)
def test_rewarm_calls_last_rewarm_s_at_least_one_below_a_second(first_call_s, rewarm_s, count):
    plan = SamplingPlan(rewarm_s=rewarm_s, max_calls_per_sample=1000)
    assert rewarm_calls(first_call_s, plan) == count


def test_each_switch_is_followed_by_rewarm_s_of_untimed_calls():
    """After every switch a callable gets the same count of untimed calls, from its first
    call's time: 1/256 s is 4 NumPy calls of 1/1024 s and 32 jit calls of 1/8192 s
    (powers of two, so that the fake clock's sums are exact)."""
    clock = FakeClock()
    log: list[str] = []

    def call(name: str, dt: float):
        def f():
            log.append(name)
            clock.advance(dt)

        return f

    plan = SamplingPlan(min_samples=3, max_samples=3, precision=0.0, budget_s=100, rewarm_s=2**-8)
    calls = {"numpy": call("numpy", 2**-10), "jit": call("jit", 2**-13)}
    series = sample_interleaved(calls, {"numpy": 1, "jit": 8}, plan=plan, clock=clock)
    runs = [(name, len(list(group))) for name, group in itertools.groupby(log)]
    # Per round: 4 re-warm calls and a 1-call sample of NumPy; 32 and an 8-call sample of jit.
    assert runs == [("numpy", 4 + 1), ("jit", 32 + 8)] * 3
    assert series["numpy"].samples_s == [2**-10] * 3
    assert series["jit"].samples_s == [2**-13] * 3
    log.clear()
    sample_interleaved(calls, {"numpy": 1, "jit": 8}, plan=plan, clock=clock, rewarm=False)
    runs = [(name, len(list(group))) for name, group in itertools.groupby(log)]
    assert runs == [("numpy", 1), ("jit", 8)] * 3  # without it, only the timed calls


def test_noisy_series_stops_at_budget_with_floor_samples():
    clock = FakeClock()
    noise = itertools.cycle([1.0, 3.0, 2.0, 5.0, 1.5])  # far from ±1 %
    plan = SamplingPlan(
        min_samples=5, max_samples=1000, precision=0.01, budget_s=20, floor_samples=3
    )
    series = sample_interleaved(
        {"a": lambda: clock.advance(next(noise))}, {"a": 1}, plan=plan, clock=clock, rewarm=False
    )
    assert series["a"].stop_reason == "budget"
    assert 3 <= len(series["a"].samples_s) < 1000
    assert sum(series["a"].samples_s) >= 20


def test_noisy_series_stops_at_max_samples():
    clock = FakeClock()
    noise = itertools.cycle([1.0, 3.0])
    plan = SamplingPlan(min_samples=2, max_samples=7, precision=0.001, budget_s=1e9)
    series = sample_interleaved(
        {"a": lambda: clock.advance(next(noise))}, {"a": 1}, plan=plan, clock=clock, rewarm=False
    )
    assert series["a"].stop_reason == "max_samples"
    assert len(series["a"].samples_s) == 7


def test_error_in_one_callable_does_not_stop_the_others():
    clock = FakeClock()

    def boom():
        raise RuntimeError("broken mode")

    plan = SamplingPlan(min_samples=6, precision=0.01, budget_s=100)
    series = sample_interleaved(
        {"bad": boom, "good": work(clock, 1e-3)}, {"bad": 1, "good": 1}, plan=plan, clock=clock
    )
    assert series["bad"].stop_reason == "error"
    assert isinstance(series["bad"].error, RuntimeError)
    assert series["good"].converged and len(series["good"].samples_s) == 6


def test_gc_is_off_while_sampling_and_restored():
    clock = FakeClock()
    seen: list[bool] = []

    def f():
        seen.append(gc.isenabled())
        clock.advance(1e-3)

    assert gc.isenabled()
    plan = SamplingPlan(min_samples=3, precision=0.5, budget_s=100)
    sample_interleaved({"a": f}, {"a": 1}, plan=plan, clock=clock)
    assert seen and not any(seen)
    assert gc.isenabled()


def test_region_is_entered_around_each_sample_outside_the_timed_loop():
    clock = FakeClock()
    entered: list[str] = []

    class Region:
        def __init__(self, key):
            self.key = key

        def __enter__(self):
            entered.append(self.key)
            clock.advance(100.0)  # must not be charged to the sample

        def __exit__(self, *exc):
            clock.advance(100.0)

    plan = SamplingPlan(min_samples=3, max_samples=3, precision=0.5, budget_s=1e9)
    series = sample_interleaved(
        {"a": work(clock, 1e-3)}, {"a": 2}, plan=plan, clock=clock, region=Region
    )
    assert entered == ["a"] * 3
    assert series["a"].samples_s == [pytest.approx(1e-3)] * 3


def test_convergence_needs_a_defined_ci_even_below_min_samples():
    # A 95 % CI of the median needs 6 samples, so min_samples=3 still samples 6 times.
    clock = FakeClock()
    plan = SamplingPlan(min_samples=3, precision=0.01, budget_s=100)
    series = sample_interleaved({"a": work(clock, 1e-3)}, {"a": 1}, plan=plan, clock=clock)
    assert series["a"].converged and len(series["a"].samples_s) == 6


def test_relative_ci_halfwidth_undefined_below_six_samples():
    assert relative_ci_halfwidth([1.0] * 5) == float("inf")
    assert relative_ci_halfwidth([1.0] * 6) == 0.0
    assert MIN_CI_SAMPLES == 6  # what the sampler's blocks are cut at


def test_a_call_with_run_batch_times_its_own_inlined_loop():
    clock = FakeClock()

    class Batched:
        calls = 0

        def __call__(self):
            raise AssertionError("the timer must use run_batch")

        def run_batch(self, n, clk):
            t0 = clk()
            self.calls += n
            clock.advance(n * 1e-3)
            return clk() - t0

    fn = Batched()
    assert time_calls(fn, 7, clock) == pytest.approx(7e-3)
    assert fn.calls == 7


def test_a_round_gets_its_share_of_budget_floor_and_cap():
    plan = SamplingPlan(budget_s=1.0, floor_samples=3, max_samples=500, min_samples=10, rounds=4)
    r = plan.for_round()
    assert (r.budget_s, r.floor_samples, r.max_samples) == (0.25, 1, 125)
    assert (r.min_samples, r.precision) == (plan.min_samples, plan.precision)
    assert SamplingPlan(rounds=1).for_round() == SamplingPlan(rounds=1)


def test_a_later_round_continues_the_series_and_counts_prior_samples():
    clock = FakeClock()
    plan = SamplingPlan(min_samples=10, max_samples=4, precision=0.01, budget_s=1e9)
    # Eight identical prior samples: two more reach min_samples and converge the series.
    series = sample_interleaved(
        {"a": work(clock, 2.0)}, {"a": 1}, plan=plan, clock=clock, prior={"a": [2.0] * 8}
    )
    assert series["a"].stop_reason == "converged"
    assert series["a"].samples_s == [2.0] * 10


def test_max_samples_and_floor_count_only_this_rounds_samples():
    clock = FakeClock()
    noise = itertools.cycle([1.0, 3.0])
    plan = SamplingPlan(min_samples=2, max_samples=3, precision=0.001, budget_s=1e9)
    series = sample_interleaved(
        {"a": lambda: clock.advance(next(noise))},
        {"a": 1},
        plan=plan,
        clock=clock,
        prior={"a": [1.0, 9.0] * 25},  # wide: never converges
    )
    assert series["a"].stop_reason == "max_samples"
    assert len(series["a"].samples_s) == 53
    # Budget already spent: the floor still gives this round its samples.
    plan = SamplingPlan(
        min_samples=2, max_samples=100, precision=0.001, budget_s=0.0, floor_samples=2
    )
    series = sample_interleaved(
        {"a": lambda: clock.advance(next(noise))},
        {"a": 1},
        plan=plan,
        clock=clock,
        prior={"a": [1.0, 9.0] * 25},
    )
    assert (series["a"].stop_reason, len(series["a"].samples_s)) == ("budget", 52)


def test_modes_are_sampled_in_lockstep_until_all_stop():
    """A mode that converges early keeps being sampled with the others, so sample i of
    every series comes from round i (paired speedups)."""
    clock = FakeClock()
    noise = itertools.cycle([1.0, 3.0, 2.0, 5.0, 1.5])
    plan = SamplingPlan(min_samples=6, max_samples=1000, precision=0.01, budget_s=40)
    series = sample_interleaved(
        {"steady": work(clock, 1e-3), "noisy": lambda: clock.advance(next(noise))},
        {"steady": 1, "noisy": 1},
        plan=plan,
        clock=clock,
    )
    assert len(series["steady"].samples_s) == len(series["noisy"].samples_s) > 6
    assert series["steady"].stop_reason == "converged"
    assert series["noisy"].stop_reason == "budget"


class Peer:
    """Process 0 of a multi-process program, as `agree` sees it: its decisions are
    recorded by one process's run and replayed to the other's (the broadcast)."""

    def __init__(self) -> None:
        self.decisions: list[int] = []
        self.replay: list[int] | None = None

    def __call__(self, value: int) -> int:
        if self.replay is None:  # process 0: its own value goes to everyone
            self.decisions.append(value)
            return value
        return self.replay.pop(0)


def test_two_processes_that_time_differently_calibrate_and_sample_alike():
    """Process 1's calls take 3x as long as process 0's, and its samples are noisy (its
    speed changes every 500 calls). Alone, each would make a different number of calls;
    agreeing, both make process 0's."""
    plan = SamplingPlan(
        min_sample_s=0.01,
        warmup_s=0.05,
        min_samples=5,
        max_samples=50,
        precision=0.01,
        budget_s=0.5,
        floor_samples=3,
    )

    def process(dt, noise, agree):
        clock = FakeClock()
        fn, state = counted(clock, lambda k: dt * next(noise))
        n = warm_up_and_calibrate(fn, plan=plan, clock=clock, agree=agree)
        series = sample_interleaved({"s": fn}, {"s": n}, plan=plan, clock=clock, agree=agree)
        return n, len(series["s"].samples_s), state["calls"], series["s"].stop_reason

    peer = Peer()
    zero = process(1e-4, itertools.repeat(1.0), peer)
    peer.replay = list(peer.decisions)
    one = process(3e-4, _every_500([1.0, 2.0]), peer)
    assert zero[:3] == one[:3]  # calls per sample, samples and calls made: the same
    assert peer.replay == []  # every decision was asked for, in the same order
    assert zero[3] == "converged" and one[3] == "peer converged"
    # Alone, process 1 would have calibrated and sampled differently.
    alone = process(3e-4, _every_500([1.0, 2.0]), lambda v: v)
    assert alone[:3] != one[:3]


def test_two_processes_re_warm_with_the_same_count():
    """The re-warm count comes from the first call's time, which differs between
    processes; agreeing on it, both make process 0's calls after every switch."""
    plan = SamplingPlan(min_samples=3, max_samples=3, precision=0.0, budget_s=100, rewarm_s=2**-8)

    def process(dt, agree):
        clock = FakeClock()
        a, made_a = counted(clock, lambda k: dt)
        b, made_b = counted(clock, lambda k: 2 * dt)
        sample_interleaved({"a": a, "b": b}, {"a": 1, "b": 1}, plan=plan, clock=clock, agree=agree)
        return made_a["calls"], made_b["calls"]

    peer = Peer()
    zero = process(2**-13, peer)
    peer.replay = list(peer.decisions)
    assert process(3 * 2**-13, peer) == zero == ((32 + 1) * 3, (16 + 1) * 3)
    assert peer.replay == []
    alone = process(3 * 2**-13, lambda v: v)  # 11 and 6 re-warm calls of its own
    assert alone == ((11 + 1) * 3, (6 + 1) * 3)


def _every_500(levels):
    return itertools.chain.from_iterable(itertools.repeat(x, 500) for x in itertools.cycle(levels))


def test_a_sample_clock_times_the_samples_and_the_wall_clock_the_budget() -> None:
    """With the process's CPU time as the sample clock, a call preempted for 9 ms of every
    10 still samples its 1 ms of work, and the budget is spent in wall seconds."""
    wall, cpu = FakeClock(), FakeClock()

    def preempted() -> None:
        cpu.advance(1e-3)
        wall.advance(10e-3)

    plan = SamplingPlan(min_samples=50, max_samples=1000, floor_samples=3, budget_s=0.1,
                        precision=0.0, rewarm_s=0.0)  # fmt: skip
    series = sample_interleaved({"a": preempted}, {"a": 1}, plan=plan, clock=wall, sample_clock=cpu)
    samples = series["a"].samples_s
    assert len(samples) >= 3 and samples == pytest.approx([1e-3] * len(samples))
    assert wall() >= plan.budget_s  # the budget ran out in wall seconds, not in CPU's
    assert series["a"].stop_reason == "budget"


def test_cpu_time_is_asked_for_cpu_cases_only() -> None:
    import time

    from jitbench.measure.session import sample_clock

    cpu = SamplingPlan(clock="cpu")
    assert sample_clock(cpu, ["cpu:0"]) is time.process_time
    assert sample_clock(cpu, ["cpu:0", "gpu:0"]) is None  # a GPU's work is not our CPU time
    assert sample_clock(SamplingPlan(), ["cpu:0"]) is None
    with pytest.raises(ConfigError, match="--clock is one of wall, cpu"):
        SamplingPlan(clock="tsc")


def test_the_floor_bends_to_a_budget_the_calls_are_far_too_slow_for():
    """A 0.5 s call under a 0.05 s budget: the floor of 10 would take 5 s (100 budgets);
    once 10 budgets are spent the group stops at 3 samples. A call that fits its budget
    keeps the floor."""
    clock = FakeClock()
    plan = SamplingPlan(min_samples=10, precision=0.0, budget_s=0.05, floor_samples=10)
    series = sample_interleaved(
        {"a": lambda: clock.advance(0.5)}, {"a": 1}, plan=plan, clock=clock, rewarm=False
    )
    assert series["a"].stop_reason == "budget" and len(series["a"].samples_s) == 3
    fits = SamplingPlan(min_samples=10, precision=0.0, budget_s=0.05, floor_samples=10)
    quick = sample_interleaved(
        {"a": lambda: clock.advance(0.004)}, {"a": 1}, plan=fits, clock=clock, rewarm=False
    )
    assert len(quick["a"].samples_s) >= 10
