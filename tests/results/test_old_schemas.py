"""Results files of every schema version written so far still load and re-analyse."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitbench.config import ALL_MODES, KNOWN_MODES
from jitbench.results import SCHEMA_VERSION, Mode, Status, dump_run, load_run, run_from_dict
from jitbench.results.analysis import analyse

FIXTURES = Path(__file__).resolve().parent / "fixtures"
VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6", "1.7", "1.8")


def test_there_is_a_fixture_for_the_current_version() -> None:
    assert SCHEMA_VERSION in VERSIONS, "add a fixture written by the new schema version"


@pytest.mark.parametrize("version", VERSIONS)
def test_old_run_loads_and_reanalyses(version: str) -> None:
    run = load_run(FIXTURES / f"run-schema-{version}.json")
    assert run.schema_version == version
    assert {m.case.workload for m in run.measurements} == {"double", "cumulative"}
    # From 1.5 on, the fixture measures sharded mode too (over 4 forced CPU devices).
    modes = KNOWN_MODES if version >= "1.5" else ALL_MODES
    assert {m.mode for m in run.measurements} == set(modes)
    for m in run.measurements:
        assert m.status is Status.OK, m.failure_text
        assert m.samples_s and m.median_s is not None and m.median_s > 0
        assert m.summary is not None and m.summary.n == len(m.samples_s)
    # Derived figures come from the raw samples, so they exist for old files too.
    key = run.measurements[0].case.key
    assert analyse(run).speedup(key, Mode.JIT) is not None


@pytest.mark.parametrize("version", VERSIONS)
def test_old_run_survives_a_round_trip(version: str) -> None:
    import json

    run = load_run(FIXTURES / f"run-schema-{version}.json")
    again = run_from_dict(json.loads(dump_run(run)))
    assert again.measurements == run.measurements


def test_only_lockstep_runs_are_paired() -> None:
    assert [load_run(FIXTURES / f"run-schema-{v}.json").paired for v in VERSIONS] == [
        False,
        False,
        False,
        True,
        True,
        True,
        True,
        True,
        True,
    ]


def test_fields_added_later_read_as_unknown() -> None:
    old = load_run(FIXTURES / "run-schema-1.0.json")
    jit = [m for m in old.measurements if m.mode is Mode.JIT]
    assert all(m.compile is not None and m.compile.while_loop_count is None for m in jit)
    assert all(not m.compile.compile_repeats_s for m in jit if m.compile)


def test_transfer_back_before_1_6_reads_as_unknown() -> None:
    old = load_run(FIXTURES / "run-schema-1.5.json")
    jax_modes = [m for m in old.measurements if m.mode is not Mode.NUMPY]
    assert jax_modes and all(m.transfer_s is not None for m in jax_modes)
    for m in old.measurements:
        assert m.transfer_back_s is None and m.transfer_back_bytes is None
    new = load_run(FIXTURES / "run-schema-1.6.json")
    for m in new.measurements:
        copied = m.mode is not Mode.NUMPY
        assert (m.transfer_back_s is not None) is copied, m
        assert m.transfer_back_bytes == (64 * 4 if copied else None)


def test_the_kept_gpu_example_loads_with_its_device_peaks() -> None:
    """reports/examples/ holds a real CPU + H200 run at S, M and L (schema 1.7, one process): it
    must keep loading."""
    example = FIXTURES.parents[2] / "reports" / "examples" / "runs" / "20261123T064616Z-8ae277.json"
    run = load_run(example)
    assert run.complete and {m.case.device for m in run.measurements} == {"cpu:0", "gpu:0"}
    gpu = [m for m in run.measurements if m.case.device == "gpu:0" and m.mode is not Mode.NUMPY]
    assert len(gpu) == 120 and all(m.status is Status.OK for m in gpu)
    assert all(m.device_peak_bytes for m in gpu)  # the GPU keeps allocator figures
    assert not any(m.device_peak_bytes for m in run.measurements if m.case.device == "cpu:0")
    assert run.environment["matmul_precision"] == "highest"


def test_the_two_process_gpu_example_loads_with_each_devices_own_prior() -> None:
    """The later example (schema 1.7, two processes, the re-warm) keeps loading, and each
    device's speedup intervals are shrunk toward its own between-process spread."""
    example = FIXTURES.parents[2] / "reports" / "examples" / "runs" / "20261126T044455Z-f00e30.json"
    run = load_run(example)
    assert run.complete and run.processes == 2
    assert run.config.settings.plan.rewarm_s == 0.004
    jit = {d: analyse(run).ratio_prior(Mode.NUMPY, Mode.JIT, d) for d in ("cpu:0", "gpu:0")}
    assert jit["gpu:0"] > 2 * jit["cpu:0"]  # variances: sd 0.071 against 0.045


def test_the_h100_examples_load_with_the_gpu_memory_shared() -> None:
    """The H100 check and A/A runs (docs/validation/h100.md) keep loading: every process
    measured fft_convolve, each with its part of the GPU's memory."""
    examples = FIXTURES.parents[2] / "reports" / "examples"
    runs = [load_run(examples / "runs" / "20261127T080211Z-372d12.json")]
    runs += [load_run(p) for p in sorted((examples / "h100-aa").glob("run*/runs/*.json"))]
    assert len(runs) == 5
    for run in runs:
        assert run.complete and run.processes >= 2
        assert run.environment["env"]["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.375"
        assert all(m.status is Status.OK for m in run.measurements)
        fft = [m for m in run.measurements if m.case.workload == "fft_convolve"]
        assert fft and all(len(m.run_sample_counts) >= 2 for m in fft)
