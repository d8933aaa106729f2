"""The output folder's layout: every file a run writes there is checked before measuring."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitbench.errors import OutputError
from jitbench.results import (
    Mode,
    OutputLayout,
    load_programs,
    load_run,
    program_diff_folder,
    program_key,
    programs_path,
    run_programs,
    save_run,
    side_programs,
    write_program_diffs,
)
from jitbench.results.files import trimmed_program


def test_every_page_at_the_root_is_checked(tmp_path: Path) -> None:
    layout = OutputLayout(tmp_path)
    for page in (layout.index, layout.history, layout.plotly_js):
        page.mkdir()
        with pytest.raises(OutputError, match=f"{page.name}' is a folder"):
            layout.ensure_writable()
        page.rmdir()
    assert layout.ensure_writable() is layout


@pytest.mark.parametrize("suffix", [".html", ".csv"])
def test_the_runs_own_page_and_csv_are_checked(tmp_path: Path, suffix: str) -> None:
    layout = OutputLayout(tmp_path)
    (layout.runs_dir / f"r1{suffix}").mkdir(parents=True)
    layout.ensure_writable()  # another run's name: not this run's to write
    with pytest.raises(OutputError, match=f"r1{suffix}' is a folder"):
        layout.ensure_writable("r1")


def _run_with_programs(text: str = "HloModule m\n  %v0 = f32[] add()\n", run_id: str = "r"):  # type: ignore[no-untyped-def]
    from dataclasses import replace

    from jitbench.results import CompileInfo
    from tests.gate.builders import make_run, meas, with_program_text

    jit = replace(meas(samples=(1e-3,)), compile=CompileInfo(program_fingerprint="aaaa"))
    run = make_run(jit, meas(mode=Mode.NUMPY, samples=(1e-3,)), run_id=run_id)
    return with_program_text(run, text)


def test_a_runs_programs_go_compressed_beside_it_never_in_its_json(tmp_path: Path) -> None:
    import gzip

    run = _run_with_programs()
    path = save_run(run, tmp_path / "runs" / "r.json")
    archive = programs_path(path)
    assert archive == tmp_path / "runs" / "r.hlo.gz"
    assert archive.read_bytes()[:2] == b"\x1f\x8b"  # gzip
    assert b"jitbench-programs.json" in archive.read_bytes()[:64]  # its own, by its header
    assert "HloModule" not in path.read_text() and "program_text" not in path.read_text()
    assert "HloModule" in gzip.decompress(archive.read_bytes()).decode()
    assert load_programs(path) == {
        "w|S|cpu:0|float32|jit": run_programs(run)[
            program_key(("w", "S", "cpu:0", "float32"), "jit")
        ]
    }
    loaded = load_run(path)
    assert loaded == run  # the text is no part of a run's equality, nor of its file
    [m] = [m for m in loaded.measurements if m.compile is not None]
    assert m.compile is not None and m.compile.program_text is None
    # A run loaded from its file holds no texts: saving it again leaves the archive be.
    before = archive.stat().st_mtime_ns
    save_run(loaded, path)
    assert archive.stat().st_mtime_ns == before and load_programs(path)


def test_a_program_over_the_cap_is_stored_trimmed_and_says_so() -> None:
    text = "\n".join(f"  %v{i} = f32[] constant({i})" for i in range(1000))
    trimmed = trimmed_program(text, cap=200)
    assert len(trimmed) < 300 and trimmed.startswith("  %v0 = f32[] constant(0)\n")
    assert trimmed.splitlines()[-1].startswith("… trimmed by jitbench:")
    assert trimmed_program("short", cap=200) == "short"


def test_the_programs_archive_replaces_only_its_own_and_reads_no_link(tmp_path: Path) -> None:
    foreign = tmp_path / "r.hlo.gz"
    foreign.write_bytes(b"\x1f\x8bsomething else")
    with pytest.raises(OutputError, match="not written by jitbench"):
        save_run(_run_with_programs(), tmp_path / "r.json")
    assert foreign.read_bytes() == b"\x1f\x8bsomething else"
    assert load_programs(tmp_path / "r.json") == {}  # not jitbench's: nothing read
    save_run(_run_with_programs(), tmp_path / "s.json")
    (tmp_path / "t.hlo.gz").symlink_to(tmp_path / "s.hlo.gz")
    assert load_programs(tmp_path / "s.json") and load_programs(tmp_path / "t.json") == {}
    assert load_programs(tmp_path / "missing.json") == {}


def test_program_diffs_are_written_beside_the_new_side_never_through_a_link(
    tmp_path: Path,
) -> None:
    (tmp_path / "runs").mkdir()
    folder = program_diff_folder(tmp_path, "base/1", "new")
    assert folder == tmp_path / "runs" / "new.vs.base_1.diffs"
    diff = "--- jitbench program base\n+++ jitbench program new\n@@ -1 +1 @@\n-a\n+b\n"
    [path] = write_program_diffs(folder, {"w|S|cpu:0|float32|jit": diff}).values()
    assert path == folder / "w-S-cpu_0-float32-jit.diff" and path.read_text() == diff
    write_program_diffs(folder, {"w|S|cpu:0|float32|jit": diff})  # its own: replaced
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    linked = tmp_path / "linked.diffs"
    linked.symlink_to(elsewhere)
    with pytest.raises(OutputError, match="symbolic link"):
        write_program_diffs(linked, {"k": diff})
    assert list(elsewhere.iterdir()) == []


def test_a_side_folder_gives_the_programs_of_its_runs(tmp_path: Path) -> None:
    save_run(_run_with_programs(run_id="a"), tmp_path / "runs" / "a.json")
    assert list(side_programs(tmp_path)) == ["w|S|cpu:0|float32|jit"]
    assert side_programs(tmp_path / "runs" / "a.json") == side_programs(tmp_path)


def test_a_resumed_run_adds_to_the_programs_its_earlier_session_kept(tmp_path: Path) -> None:
    from dataclasses import replace

    from jitbench.results import files

    earlier = _run_with_programs("first session")
    path = save_run(earlier, tmp_path / "r.json")
    files._programs_written.clear()  # a new process resumes it
    later = load_run(path)
    later = replace(later, measurements=tuple(
        replace(m, case=replace(m.case, size="M"),
                compile=replace(m.compile, program_text="second session"))
        if m.compile is not None else m
        for m in later.measurements
    ))  # fmt: skip
    save_run(later, path)
    assert sorted(load_programs(path).values()) == ["first session", "second session"]
    other = replace(later, run_id="another")
    files._programs_written.clear()
    save_run(other, path)  # another run's file at that path: nothing of the first kept
    assert list(load_programs(path).values()) == ["second session"]


def test_a_link_is_replaced_never_written_through(tmp_path: Path) -> None:
    """Run files, checkpoints, pages and index entries are jitbench's own: a link planted
    where one goes must not make jitbench write wherever it points."""
    from jitbench.results import write_text_atomic

    (tmp_path / "precious.txt").write_text("keep me")
    link = tmp_path / "entry.json"
    link.symlink_to("precious.txt")
    write_text_atomic(link, "new")
    assert not link.is_symlink() and link.read_text() == "new"
    assert (tmp_path / "precious.txt").read_text() == "keep me"
