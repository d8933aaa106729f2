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
from tests.conftest import ONE_PROCESS
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
    ("--setting", "precision=nan"),
    ("--setting", "precision=0"),
    ("--setting", "precision=1.5"),
    ("--min-samples", "0"),
    ("--rounds", "0"),
    ("--processes", "0"),
    ("--threads", "0"),
    ("--threads", "-2"),
    ("--threads", "many"),
    ("--setting", "seed=-1"),
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
    # One process (a later --processes of the options wins): no standby worker started.
    run = ("run", "--suite", FAULT_SUITE, "ok_double", "--out", out, *ONE_PROCESS)
    result = invoke(*run, option, value)
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


# --- links and files jitbench did not write -------------------------------------------

FIXTURE = Path(__file__).resolve().parents[1] / "results" / "fixtures" / "run-schema-1.7.json"


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_a_link_at_the_index_cache_is_never_followed(tmp_path: Path) -> None:
    """An artifact tarball restored in CI can carry runs/.index-cache as a link: every
    report used to delete the files of the folder it pointed to."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious.txt").write_text("keep me")
    out = tmp_path / "out"
    (out / "runs").mkdir(parents=True)
    (out / "runs" / ".index-cache").symlink_to(elsewhere)
    before = _tree(elsewhere)
    for _ in range(2):  # the second refresh would read and prune the cache
        result = invoke("report", FIXTURE, "--out", out)
        assert result.exit_code == 0, result.stderr
    assert _tree(elsewhere) == before
    assert (out / "runs" / ".index-cache").is_symlink()


def test_a_link_at_runs_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "runs").symlink_to(elsewhere)
    result = invoke("report", FIXTURE, "--out", out)
    assert result.exit_code == 2
    assert "is a symbolic link" in result.stderr and "--out" in result.stderr
    assert list(elsewhere.iterdir()) == []
    result = invoke("run", *QUICK, "--out", out, "ok_double")
    assert result.exit_code == 2 and "symbolic link" in result.stderr
    assert "case(s)" not in result.stderr and list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("name", ["index.html", "history.html", "plotly.min.js"])
def test_a_hand_written_page_is_not_replaced(tmp_path: Path, name: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / name).write_text("<html><title>my project</title></html>")
    result = invoke("report", FIXTURE, "--out", out)
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert "was not written by jitbench" in message and "move it away" in message
    assert (out / name).read_text() == "<html><title>my project</title></html>"
    assert not (out / "runs").exists() or run_files(out) == []
    # A run checks it before measuring.
    result = invoke("run", *QUICK, "--out", out, "ok_double")
    assert result.exit_code == 2 and "case(s)" not in result.stderr


def test_pages_jitbench_wrote_are_replaced_as_before(tmp_path: Path) -> None:
    out = tmp_path / "out"
    for _ in range(2):
        result = invoke("report", FIXTURE, "--out", out)
        assert result.exit_code == 0, result.stderr


def test_a_link_at_index_html_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    target = tmp_path / "target.html"
    target.write_text("theirs")
    out = tmp_path / "out"
    out.mkdir()
    (out / "index.html").symlink_to(target)
    result = invoke("report", FIXTURE, "--out", out)
    assert result.exit_code == 2 and "symbolic link" in result.stderr
    assert target.read_text() == "theirs" and (out / "index.html").is_symlink()


def test_odd_files_in_runs_are_listed_as_broken_never_read(tmp_path: Path) -> None:
    """A named pipe, a link to /dev/zero, a folder and a truncated file under runs/*.json:
    the index lists each as broken with why; none hangs or fills memory."""
    import os

    out = tmp_path / "out"
    runs = out / "runs"
    runs.mkdir(parents=True)
    os.mkfifo(runs / "pipe.json")
    (runs / "zero.json").symlink_to("/dev/zero")
    (runs / "folder.json").mkdir()
    (runs / "cut.json").write_text(FIXTURE.read_text()[:100])
    os.mkfifo(runs / ".jitbench-validated")
    result = invoke("report", FIXTURE, "--out", out)
    assert result.exit_code == 0, result.stderr
    index = (out / "index.html").read_text()
    for name in ("pipe.json", "zero.json", "folder.json", "cut.json"):
        assert name in index
    assert "named pipe" in index and "character device" in index


@pytest.mark.parametrize("kind", ["fifo", "device", "folder-link"])
def test_a_run_file_that_is_no_file_is_refused_in_one_line(tmp_path: Path, kind: str) -> None:
    import os

    path = tmp_path / "run.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        path.symlink_to(tmp_path)
    for command in (["report", path, "--format", "table"], ["compare", path, path]):
        result = invoke(*command)
        assert result.exit_code == 2, result.stderr
        assert result.stderr.startswith("error:") and "internal error" not in result.stderr


def test_a_link_at_an_index_cache_entry_is_replaced_and_its_target_kept(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "runs" / ".index-cache").mkdir(parents=True)
    run_file = out / "runs" / FIXTURE.name
    run_file.write_bytes(FIXTURE.read_bytes())
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    (out / "runs" / ".index-cache" / FIXTURE.name).symlink_to(precious)
    result = invoke("report", run_file, "--out", out)
    assert result.exit_code == 0, result.stderr
    assert precious.read_text() == "keep me"


def test_an_output_the_user_names_is_written_where_it_leads(tmp_path: Path) -> None:
    """`--markdown`/`--json` write through a link, into a named pipe and to a redirected
    stdout as `> path` would, instead of replacing them with a file."""
    import os
    import stat
    import threading
    import time

    target = tmp_path / "target.md"
    target.write_text("old")
    link = tmp_path / "link.md"
    link.symlink_to(target)
    assert invoke("report", FIXTURE, "--markdown", link).exit_code == 0
    assert link.is_symlink() and target.read_text().startswith("| workload |")

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    lonely = invoke("report", FIXTURE, "--markdown", fifo)  # no reader: refused, not waited on
    assert lonely.exit_code == 2 and "a named pipe with no reader" in lonely.stderr
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    deadline = time.monotonic() + 10
    while True:  # the reader opens the pipe in its own time
        result = invoke("report", FIXTURE, "--markdown", fifo)
        if result.exit_code == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    reader.join(timeout=10)
    assert result.exit_code == 0 and got and got[0].startswith(b"| workload |")
    assert stat.S_ISFIFO(fifo.stat().st_mode)

    shown = invoke("report", FIXTURE, "--markdown", "/dev/stdout")
    assert shown.exit_code == 0 and "| workload |" in shown.stdout
