"""What `jitbench report` and `jitbench run` may write: never over a different stored run,
never into a folder whose index cannot be written, and every option is checked before
anything is measured."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import pytest

import jitbench
from jitbench import ConfigError, RunConfig, SamplingPlan
from jitbench.results import load_run, save_run
from tests.faults import FAULT_SUITE, QUICK, invoke, run_files


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An output folder holding one complete quick run of ok_double at S and M."""
    out = tmp_path_factory.mktemp("stored")
    result = invoke("run", *QUICK, "--out", out, "ok_double", "-s", "S,M")
    assert result.exit_code == 0, result.stderr
    return out


def test_report_of_an_older_partial_copy_keeps_the_complete_run(
    stored: Path, tmp_path: Path
) -> None:
    [complete_path] = run_files(stored)
    complete = complete_path.read_bytes()
    run = load_run(complete_path)
    older = save_run(
        replace(run, complete=False, finished_at=None, measurements=run.measurements[:3]),
        tmp_path / "old-partial.json",
    )
    result = invoke("report", older, "--out", stored)
    assert result.exit_code == 2
    assert "refusing to replace" in " ".join(result.stderr.split())
    assert complete_path.read_bytes() == complete
    # The stored run itself reports into its own folder as before.
    assert invoke("report", complete_path, "--out", stored).exit_code == 0
    assert complete_path.read_bytes() == complete


def test_a_run_stored_by_an_older_jitbench_reports_into_its_own_folder(tmp_path: Path) -> None:
    """The example run of 2026-11-23 was refused as 'a different version of run …' of
    itself: its file is laid out as an older jitbench wrote it, not as this one would."""
    out = tmp_path / "out"
    result = invoke("run", *QUICK, "--out", out, "ok_double")
    assert result.exit_code == 0, result.stderr
    [stored] = run_files(out)
    stored.write_text(json.dumps(json.loads(stored.read_text()), indent=4))  # other layout
    before = stored.read_bytes()
    again = invoke("report", stored, "--out", out)
    assert again.exit_code == 0, again.stderr
    assert stored.read_bytes() == before  # left as it was


def test_report_of_a_file_claiming_a_stored_run_id_is_refused(stored: Path, tmp_path: Path) -> None:
    [complete_path] = run_files(stored)
    data = json.loads(complete_path.read_text())
    data["environment"]["host"] = "<script>alert(1)</script>"
    for m in data["measurements"]:
        m["samples_s"] = [s * 100 for s in m["samples_s"]]
    hostile = tmp_path / "artifact.json"
    hostile.write_text(json.dumps(data))
    before = complete_path.read_bytes()
    result = invoke("report", hostile, "--out", stored)
    assert result.exit_code == 2
    assert complete_path.read_bytes() == before


@pytest.mark.parametrize("blocker", ["index.html", "history.html", "plotly.min.js"])
def test_run_checks_the_whole_output_folder_before_measuring(tmp_path: Path, blocker: str) -> None:
    out = tmp_path / "out"
    (out / blocker).mkdir(parents=True)  # the page writer could never replace it
    result = invoke("run", *QUICK, "--out", out, "ok_double")
    assert result.exit_code == 2
    assert f"{blocker}' is a folder" in result.stderr
    assert run_files(out) == []  # refused before measuring


def test_a_page_that_fails_after_measuring_still_says_where_the_run_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the check before measuring cannot foresee (a disk filling up while the run
    measured): injected here, since nothing real fills a disk on cue."""
    import jitbench.report
    from jitbench.errors import OutputError

    def disk_full(*_: object, **__: object) -> None:
        raise OutputError("cannot write the page: No space left on device")

    monkeypatch.setattr(jitbench.report, "write_run_page", disk_full)
    out = tmp_path / "out"
    result = invoke("run", *QUICK, "--out", out, "ok_double")
    assert result.exit_code == 2
    [saved] = run_files(out)
    message = " ".join(result.stderr.split())
    assert f"run saved to {saved}; its pages were not written:" in message
    assert "No space left on device" in message


BAD_RUN_OPTIONS = [
    ("--budget", "nan"),
    ("--budget", "inf"),
    ("--budget", "-1"),
    ("--budget", "0"),
    ("--timeout", "inf"),
    ("--timeout", "nan"),
    ("--timeout", "0"),
    ("--timeout", "-3"),
    ("--precision", "nan"),
    ("--precision", "0"),
    ("--precision", "1.5"),
    ("--min-samples", "0"),
    ("--rounds", "0"),
    ("--processes", "0"),
    ("--threads", "0"),
    ("--threads", "-2"),
    ("--threads", "many"),
    ("--seed", "-1"),
    ("--sizes", "XXL"),
    ("--modes", "fast"),
    ("--devices", "tpu"),
    ("-k", "and or ("),
]


@pytest.mark.parametrize(("option", "value"), BAD_RUN_OPTIONS)
def test_every_bad_run_option_exits_2_before_measuring(
    option: str, value: str, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = invoke("run", "--suite", FAULT_SUITE, "ok_double", "--out", out, option, value)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert run_files(out) == []


@pytest.mark.parametrize(
    "config",
    [
        lambda: RunConfig(plan=SamplingPlan(budget_s=math.nan)),
        lambda: RunConfig(plan=SamplingPlan(budget_s=math.inf)),
        lambda: RunConfig(timeout_s=math.inf),
        lambda: RunConfig(seed=-1),
        lambda: RunConfig(threads=0),
    ],
)
def test_python_api_refuses_the_same_values(config) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError):
        config()


def test_python_api_checks_its_arguments_before_measuring(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="config must be a RunConfig"):
        jitbench.run("ok_double", suites=FAULT_SUITE, config={"budget_s": 1}, out=tmp_path)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="names takes"):
        jitbench.run(3, suites=FAULT_SUITE, out=tmp_path)  # type: ignore[arg-type]
    assert run_files(tmp_path) == []
    # One name or one suite path given as a string is one item, not its letters.
    run = jitbench.run(
        "ok_double", suites=str(FAULT_SUITE), config=RunConfig.quick_settings(), out=tmp_path
    )
    assert {m.case.workload for m in run.measurements} == {"ok_double"}
