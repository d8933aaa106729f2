"""The executors: what each records when a case cannot be measured, and which of them
spreads sampling rounds over the run."""

from __future__ import annotations

from dataclasses import replace

from jitbench import workload
from jitbench.config import RunConfig
from jitbench.measure.devices import resolve_devices
from jitbench.results import Status
from jitbench.runner.executors import ChildProcessExecutor, InProcessExecutor, executor_for
from jitbench.runner.plan import plan_cases


def _vec(rng, *, dtype, n):
    return (rng.standard_normal(n).astype(dtype),)


@workload(inputs=_vec, sizes={"S": {"n": 4}}, name="local")
def local(xp, x):
    return x


def test_isolate_needs_a_suite_file() -> None:
    config = RunConfig.quick_settings(isolate=True)
    [planned] = plan_cases([local], config, resolve_devices([]))
    result, live = ChildProcessExecutor(config).measure([planned])
    assert live is None
    assert {m.status for m in result} == {Status.ERROR}
    assert "not defined in a suite file" in result[0].error.message


def test_the_executor_follows_isolate_and_only_this_process_spreads_rounds() -> None:
    devices = resolve_devices([])
    base = RunConfig.quick_settings()
    rounds = replace(base, plan=replace(base.plan, rounds=3))
    assert isinstance(executor_for(base, devices), InProcessExecutor)
    assert not executor_for(base, devices).spreads_rounds
    assert executor_for(rounds, devices).spreads_rounds
    isolated = executor_for(replace(rounds, isolate=True), devices)
    assert isinstance(isolated, ChildProcessExecutor) and not isolated.spreads_rounds


def test_a_fault_outside_the_modes_is_recorded_on_every_mode() -> None:
    @workload(inputs=_vec, sizes={"S": {"n": 4}}, name="exits")
    def exits(xp, x):
        raise SystemExit(3)

    config = RunConfig.quick_settings()
    [planned] = plan_cases([exits], config, resolve_devices([]))
    executor = InProcessExecutor(config, resolve_devices([]))
    result, live = executor.measure([planned])
    assert live is None and len(result) == 3
    assert {m.status for m in result} == {Status.ERROR}
    assert all("sys.exit()" in m.error.hint for m in result)


def test_cases_measured_together_get_a_time_limit_each() -> None:
    """--timeout limits each mode; a case as a whole gets it once per mode and once more."""
    from jitbench.runner.executors import _timeout_error, group_timeout

    assert group_timeout(None, 2) is None and group_timeout(5.0, 2) == 20.0
    assert group_timeout(5.0, 1, modes=3) == 20.0 and group_timeout(5.0, 2, modes=3) == 40.0
    assert _timeout_error(5.0, modes=3).message == (
        "case exceeded 20 s as a whole (--timeout 5 s per mode, 3 mode(s), and as much again "
        "for inputs and staging) and was stopped"
    )
    assert _timeout_error(5.0, 2, modes=1).message.startswith(
        "2 cases measured together exceeded 20 s as a whole"
    )
