"""`jitbench run --resume`: finishing a partial run without measuring again, and refusing
what cannot be resumed (bad files, missing suites or workloads, new settings) before the
file is touched."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from jitbench.results import load_run, save_run
from tests.faults import FAULT_SUITE, OK, QUICK, invoke, run_files, statuses


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete quick run of ok_double at sizes S and M, measured once for the module."""
    out = tmp_path_factory.mktemp("finished")
    result = invoke("run", *QUICK, "--out", out, "ok_double", "-s", "S,M")
    assert result.exit_code == 0, result.stderr
    return run_files(out)[0]


def partial_copy(finished: Path, dest: Path, *, keep_sizes: tuple[str, ...] = ("S",)) -> Path:
    """The finished run cut back to `keep_sizes` and marked incomplete (as a Ctrl-C leaves it)."""
    run = load_run(finished)
    partial = replace(
        run,
        complete=False,
        finished_at=None,
        measurements=tuple(m for m in run.measurements if m.case.size in keep_sizes),
    )
    return save_run(partial, dest)


def test_resume_finishes_without_remeasuring(finished_run: Path, tmp_path: Path) -> None:
    path = partial_copy(finished_run, tmp_path / "partial.json")
    before = load_run(path)
    result = invoke("run", "--resume", path)
    assert result.exit_code == 0, result.stderr
    assert "resuming run" in result.stderr and "1 of 2 case(s) already measured" in result.stderr
    after = load_run(path)
    assert after.complete and after.run_id == before.run_id
    assert after.started_at == before.started_at
    # The environment is the original run's, but for the machine's state after the run,
    # which is taken again when the resumed part ends.
    unchanged = {k: v for k, v in before.environment.items() if k != "machine_after"}
    assert {k: v for k, v in after.environment.items() if k != "machine_after"} == unchanged
    assert after.environment["machine_after"] != before.environment.get("machine_after")
    assert statuses(after) == {"ok_double[S]": OK, "ok_double[M]": OK}
    kept = [m for m in after.measurements if m.case.size == "S"]
    assert [m.samples_s for m in kept] == [m.samples_s for m in before.measurements]
    assert len(after.config.resumed_at) == 1
    assert after.config.settings == before.config.settings  # the recorded settings


def test_resume_may_add_a_timeout(finished_run: Path, tmp_path: Path) -> None:
    path = partial_copy(finished_run, tmp_path / "partial.json")
    before = load_run(path)
    result = invoke("run", "--resume", path, "--timeout", "30")
    assert result.exit_code == 0, result.stderr
    after = load_run(path)
    assert after.complete and statuses(after) == {"ok_double[S]": OK, "ok_double[M]": OK}
    # How the rest was measured is not what was measured: the record stays as it was.
    assert after.config.settings == before.config.settings
    assert after.config.settings.timeout_s is None


def _write_bad_results(kind: str, finished: Path, path: Path) -> None:
    text = finished.read_text()
    if kind == "truncated":
        partial_copy(finished, path)
        path.write_text(path.read_text()[: len(text) // 3])
    elif kind == "not-json":
        path.write_text("jitbench? no: this is a log file\n")
    elif kind == "other-json":
        path.write_text(json.dumps({"name": "another tool", "results": [1, 2, 3]}))
    elif kind == "newer-schema":
        partial_copy(finished, path)
        data = json.loads(path.read_text())
        data["schema_version"] = "9.0"
        path.write_text(json.dumps(data))
    elif kind == "complete":
        path.write_text(text)
    elif kind == "invalid-content":
        partial_copy(finished, path)
        data = json.loads(path.read_text())
        data["measurements"][0]["status"] = "exploded"
        path.write_text(json.dumps(data))
    elif kind == "unreadable-settings":
        partial_copy(finished, path)
        data = json.loads(path.read_text())
        data["config"]["plan"]["budget_s"] = -1
        path.write_text(json.dumps(data))
    elif kind == "no-settings":
        partial_copy(finished, path)
        data = json.loads(path.read_text())
        data["config"] = {"selection": data["config"]["selection"]}
        path.write_text(json.dumps(data))


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("truncated", "is not valid JSON"),
        ("not-json", "is not valid JSON"),
        ("other-json", "is not a jitbench run"),
        ("newer-schema", "uses run schema 9.0, newer than this jitbench reads"),
        ("complete", "is a complete run; nothing to resume"),
        ("invalid-content", "is not a valid jitbench run"),
        ("unreadable-settings", "cannot read the recorded run configuration: --budget must be"),
        ("no-settings", "does not record its settings"),
    ],
)
def test_resume_refuses_bad_files(
    kind: str, message: str, finished_run: Path, tmp_path: Path
) -> None:
    path = tmp_path / "run.json"
    _write_bad_results(kind, finished_run, path)
    before = path.read_bytes()
    result = invoke("run", "--resume", path)
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr
    assert result.stderr.count("\n") <= 3 and "Traceback" not in result.stderr
    assert path.read_bytes() == before  # a refused resume never touches the file


def test_resume_refuses_when_the_suite_is_gone(tmp_path: Path) -> None:
    suite = tmp_path / "moving_suite.py"
    suite.write_text(FAULT_SUITE.read_text())
    out = tmp_path / "out"
    assert invoke("run", "--suite", suite, "--quick", "--out", out, "ok_double").exit_code == 0
    path = partial_copy(run_files(out)[0], tmp_path / "partial.json", keep_sizes=())
    suite.unlink()
    result = invoke("run", "--resume", path)
    assert result.exit_code == 2
    assert "no longer exists" in result.stderr


def test_resume_refuses_when_the_workload_is_gone(finished_run: Path, tmp_path: Path) -> None:
    path = partial_copy(finished_run, tmp_path / "partial.json")
    data = json.loads(path.read_text())
    data["config"]["selection"][0]["workload"] = "ok_doubled"
    path.write_text(json.dumps(data))
    result = invoke("run", "--resume", path)
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert "workload 'ok_doubled' of run" in message
    assert "is no longer in" in message and "(renamed to 'ok_double' or" in message
    assert "; (" not in message


@pytest.mark.parametrize(
    ("args", "dropped"),
    [
        (("-s", "L", "--quick"), "drop --sizes, --quick"),
        (("ok_double", "-k", "double", "--setting", "seed=3"), "drop NAMES, -k, --setting seed"),
        (("--budget", "2", "--min-samples", "600", "--x64"), "drop --x64, --budget, --min-samples"),
        # Not silently ignored: the run keeps the label and processes it was started with.
        (
            ("--processes", "3", "--setting", "time_split=true"),
            "drop --processes, --setting time_split",
        ),
        (
            (
                "--label",
                "after-fix",
            ),
            "drop --label",
        ),
        (("--quick", "--processes", "2"), "drop --quick, --processes"),
    ],
    ids=["sizes-quick", "selection-seed", "plan", "processes-time-split", "label", "quick"],
)
def test_resume_refuses_new_selection_options(
    args: tuple[str, ...], dropped: str, finished_run: Path, tmp_path: Path
) -> None:
    path = partial_copy(finished_run, tmp_path / "partial.json")
    before = path.read_bytes()
    result = invoke("run", "--resume", path, *args)
    assert result.exit_code == 2
    assert f"--resume finishes a run with the settings recorded in it; {dropped}." in result.stderr
    assert path.read_bytes() == before


def test_resume_writes_into_the_runs_own_folder(
    finished_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The partial run sits in an output folder of its own; the resume is started from
    # another folder without --out: the page and index are refreshed there, nothing is
    # written to ./reports and no second copy of the run appears.
    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    run_id = load_run(finished_run).run_id
    path = partial_copy(finished_run, out / "runs" / f"{run_id}.json")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    result = invoke("run", "--resume", path)
    assert result.exit_code == 0, result.stderr
    assert list(elsewhere.iterdir()) == []
    assert run_files(out) == [path] and load_run(path).complete
    page = out / "runs" / f"{run_id}.html"
    assert page.is_file() and f"report written to {page}" in " ".join(result.stdout.split())
    assert f"runs/{run_id}.html" in (out / "index.html").read_text()


def test_resume_refuses_a_suite_file_that_changed(tmp_path: Path) -> None:
    suite = tmp_path / "changing_suite.py"
    suite.write_text(FAULT_SUITE.read_text())
    out = tmp_path / "out"
    result = invoke("run", "--suite", suite, "--quick", "--out", out, "ok_double")
    assert result.exit_code == 0, result.stderr
    finished = run_files(out)[0]
    [selection] = load_run(finished).config.selection or ()
    assert selection.suite_sha256 == hashlib.sha256(suite.read_bytes()).hexdigest()
    path = partial_copy(finished, tmp_path / "partial.json", keep_sizes=())
    suite.write_text(suite.read_text() + "\nprint('new code')\n")
    before = path.read_bytes()
    refused = invoke("run", "--resume", path)
    assert refused.exit_code == 2
    assert "has changed since run" in refused.stderr and "--allow-changed-suites" in refused.stderr
    assert path.read_bytes() == before
    allowed = invoke("run", "--resume", path, "--allow-changed-suites", "--out", tmp_path / "o2")
    assert allowed.exit_code == 0, allowed.stderr
    assert load_run(path).complete


def test_resume_into_a_folder_holding_another_version_of_the_run_is_refused(
    finished_run: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    stored = out / "runs" / finished_run.name
    stored.parent.mkdir(parents=True)
    stored.write_bytes(finished_run.read_bytes())
    path = partial_copy(finished_run, tmp_path / "partial.json")
    before = path.read_bytes()
    result = invoke("run", "--resume", path, "--out", out)
    assert result.exit_code == 2
    assert "refusing to replace" in " ".join(result.stderr.split())
    assert stored.read_bytes() == finished_run.read_bytes() and path.read_bytes() == before


def test_a_second_resume_of_one_file_is_refused_at_once(finished_run: Path, tmp_path: Path) -> None:
    """Two `--resume` of one file used to both measure everything and race for the file.
    The lock is the real one (fcntl), held here as the first resume would hold it."""
    from jitbench.results import run_file_lock
    from jitbench.results.files import lock_path

    path = partial_copy(finished_run, tmp_path / "partial.json")
    before = path.read_bytes()
    with run_file_lock(path):
        result = invoke("run", "--resume", path)
        assert lock_path(path).read_text().strip() == str(__import__("os").getpid())
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert "is being written by another jitbench process" in message, message
    assert "resuming run" not in result.stderr and path.read_bytes() == before
    assert not lock_path(path).exists()  # the holder removed it on the way out
    # Once the holder is gone, the resume goes ahead and leaves no lock file behind.
    result = invoke("run", "--resume", path)
    assert result.exit_code == 0, result.stderr
    assert load_run(path).complete and not lock_path(path).exists()
