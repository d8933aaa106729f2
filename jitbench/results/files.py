"""Files of results: the output folder layout, atomic writes, writable folders, saving a run.

An output folder (`jitbench run --out`, `jitbench report --out`, default `reports/`) holds:

    index.html            every run found in runs/, newest first
    history.html          each workload across the runs
    plotly.min.js         plotly.js, written once beside the pages
    runs/<run-id>.json    run data
    runs/<run-id>.html    one page per run
    runs/<run-id>.csv     its measurements as CSV
    runs/<run-id>.hlo.gz  its jit/sharded programs' optimised HLO (names and metadata
                          aside), gzip-compressed JSON: what a program diff shows
    runs/.index-cache/    what the index shows of each run file (`report.summary`)
    report-<digest>.html  several runs side by side

`OutputLayout` is the one place that knows these names. Whatever else the folder holds
stays as it is: jitbench writes only files it wrote before, inside the folder, never
through a symbolic link (a link at runs/ is refused, a link at runs/.index-cache is not
followed), and refuses to replace a file it did not write (a hand-written index.html).
"""

from __future__ import annotations

import contextlib
import fcntl
import gzip
import io
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from jitbench.errors import JitbenchError, OutputError
from jitbench.results.codec import dump_run, load_run
from jitbench.results.model import Run
from jitbench.results.safe_io import (
    FileTooBig,
    NotRegularFile,
    describe,
    lstat_or_none,
    read_regular,
)


def write_text_atomic(
    path: Path, text: str, *, fix: str = "choose another folder with --out."
) -> None:
    """Write `text` to `path` through a temp file and rename, so readers never see half.

    Raises:
        OutputError: the folder cannot be created or written (`fix` says what to do).
    """
    write_bytes_atomic(path, text.encode("utf-8"), fix=fix)


def write_bytes_atomic(
    path: Path, data: bytes, *, fix: str = "choose another folder with --out."
) -> None:
    """`write_text_atomic` for bytes. A symbolic link at `path` is replaced, never written
    through (a link planted in a results folder must not make jitbench write elsewhere).

    Raises:
        OutputError: the folder cannot be created or written (`fix` says what to do).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            # mkstemp makes 0600 files; results are meant to be shared like any output.
            os.chmod(tmp, 0o666 & ~_umask())
            # No fsync: the rename protects against an interrupted or killed run (the
            # case that matters here); an fsync per checkpoint cost seconds on slow disks.
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise OutputError(f"cannot write {str(path)!r}: {exc.strerror or exc}; {fix}") from None


def lock_path(run_file: Path) -> Path:
    """The lock beside a run file that a run writing it holds: `.NAME.lock`."""
    return run_file.with_name(f".{run_file.name}.lock")


@contextlib.contextmanager
def run_file_lock(run_file: str | os.PathLike[str]) -> Iterator[None]:
    """Hold the run file's lock (`fcntl.flock` on `lock_path`) while the block writes it,
    so two jitbench processes never measure into one file: a second `--resume` of a run,
    or a resume of a run still measuring, is refused at once. The lock goes with the
    process (a killed run leaves none held); the lock file is removed on the way out.

    Where no lock file can be made (the folder is missing or read-only), the block runs
    unlocked: the checks that follow say what is wrong with the folder.

    Raises:
        OutputError: another process holds the lock; names its process id.
    """
    lock = lock_path(Path(run_file))
    fd = -1
    while fd < 0:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o666)
        except OSError:
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise OutputError(
                f"{str(run_file)!r} is being written by another jitbench process (pid "
                f"{holder}) right now; wait for it to finish, or stop it (its partial run is "
                "kept) and resume then with `jitbench run --resume`."
            ) from None
        # The holder before us may have removed the file between our open and our lock:
        # then what we hold is no longer the lock; take the one at the path again.
        try:
            current = os.stat(lock, follow_symlinks=False).st_ino
        except FileNotFoundError:
            current = -1
        if current != os.fstat(fd).st_ino:
            os.close(fd)
            fd = -1
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)


def ensure_writable_dir(folder: str | os.PathLike[str]) -> Path:
    """Create `folder` if needed and check a file can be written there (before measuring).

    Raises:
        OutputError: the folder cannot be created or is not writable.
    """
    p = Path(folder)
    try:
        p.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".jitbench-write-check.", dir=p)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise OutputError(
            f"output folder {str(p)!r} is not writable ({exc.strerror or exc}); "
            "choose another folder with --out."
        ) from None
    return p


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def save_run(run: Run, path: str | os.PathLike[str], *, figures: bool = True) -> Path:
    """Write `run` to `path` atomically and return the path; the programs' texts its
    measurements hold (`CompileInfo.program_text`) go beside it (`save_programs`). Without
    `figures`, the measurements carry none of the figures readers recompute (`dump_run`)."""
    p = Path(path)
    write_text_atomic(p, dump_run(run, figures=figures))
    save_programs(run, p)
    return p


#: The programs archive: one gzip-compressed JSON file per run, beside its run file.
PROGRAMS_SUFFIX = ".hlo.gz"
#: The name inside the gzip header, which marks the archive as jitbench's own.
_PROGRAMS_MEMBER = "jitbench-programs.json"
PROGRAMS_FORMAT = "jitbench.programs"
#: A program text above this many characters is stored trimmed to it (with a last line
#: that says so): a diff of a multi-megabyte program is read by no one.
PROGRAM_TEXT_CAP = 1 << 20
#: What a programs archive may hold once decompressed (read back).
_PROGRAMS_READ_LIMIT = 64 << 20
#: What `save_programs` last wrote to each path (its keys and sizes): a checkpoint after
#: each case writes the archive again only when a program was added.
_programs_written: dict[Path, tuple[tuple[str, int], ...]] = {}


def programs_path(run_file: str | os.PathLike[str]) -> Path:
    """Where the programs of the run stored at `run_file` go: `NAME.hlo.gz` beside it."""
    p = Path(run_file)
    return p.with_name((p.name[: -len(p.suffix)] if p.suffix else p.name) + PROGRAMS_SUFFIX)


def program_key(case: tuple[str, ...], mode: str) -> str:
    """A measurement's key in a programs archive: 'workload|size|device|dtype|mode'."""
    return "|".join((*case, mode))


def trimmed_program(text: str, cap: int = PROGRAM_TEXT_CAP) -> str:
    """`text`, or its first `cap` characters (whole lines) and a line saying how much of it
    was left out."""
    if len(text) <= cap:
        return text
    head = text[:cap].rsplit("\n", 1)[0]
    left_out = len(text) - len(head)
    return f"{head}\n… trimmed by jitbench: {left_out:,} of {len(text):,} characters left out"


def run_programs(run: Run) -> dict[str, str]:
    """The program texts `run`'s measurements hold in memory, by `program_key` (trimmed)."""
    return {
        program_key(m.case.key, m.mode.value): trimmed_program(m.compile.program_text)
        for m in run.measurements
        if m.compile is not None and m.compile.program_text
    }


def save_programs(run: Run, run_file: Path) -> Path | None:
    """Write `run`'s program texts gzip-compressed beside `run_file` (`programs_path`),
    atomically, once per set of programs; None when it holds none (a run of NumPy only,
    a run loaded from a file). Only texts that the process measuring the program kept are
    there: one process's are enough, the code is the same in every worker.

    Raises:
        OutputError: the archive's path holds something jitbench did not write, or
            cannot be written.
    """
    programs = run_programs(run)
    if not programs:
        return None
    path = programs_path(run_file)
    if path not in _programs_written:
        # A resumed run: the programs its earlier session kept stay beside it.
        earlier, run_id = _read_programs(path)
        if run_id == run.run_id:
            programs = {**earlier, **programs}
    marker = tuple(sorted((k, len(v)) for k, v in programs.items()))
    if _programs_written.get(path) == marker and path.exists():
        return path
    check_replaceable(path)
    body = json.dumps(
        {"format": PROGRAMS_FORMAT, "version": 1, "run_id": run.run_id, "programs": programs},
        ensure_ascii=False,
        sort_keys=True,
    ).encode("utf-8")
    buffer = io.BytesIO()
    with gzip.GzipFile(filename=_PROGRAMS_MEMBER, mode="wb", fileobj=buffer, mtime=0) as gz:
        gz.write(body)
    write_bytes_atomic(path, buffer.getvalue())
    _programs_written[path] = marker
    return path


def load_programs(run_file: str | os.PathLike[str]) -> dict[str, str]:
    """The program texts stored beside the run file `run_file`, by `program_key`; empty
    where there are none (a run written before they were kept, NumPy only) or the archive
    is unreadable, not a regular file or not jitbench's."""
    return _read_programs(programs_path(run_file))[0]


def _read_programs(path: Path) -> tuple[dict[str, str], str | None]:
    """The programs of the archive at `path` and the run id it names ({} and None where
    it is missing, unreadable, not a regular file or not jitbench's)."""
    try:
        data, _ = read_regular(path, limit=_PROGRAMS_READ_LIMIT, follow_links=False)
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as gz:
            body = gz.read(_PROGRAMS_READ_LIMIT + 1)
        if len(body) > _PROGRAMS_READ_LIMIT:
            return {}, None
        doc = json.loads(body)
    except (OSError, EOFError, ValueError, FileTooBig, NotRegularFile):
        return {}, None
    if not isinstance(doc, dict) or doc.get("format") != PROGRAMS_FORMAT:
        return {}, None
    programs, run_id = doc.get("programs"), doc.get("run_id")
    if not isinstance(programs, dict):
        return {}, None
    return (
        {k: v for k, v in programs.items() if isinstance(k, str) and isinstance(v, str)},
        run_id if isinstance(run_id, str) else None,
    )


_UNSAFE_FILE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_stem(run_id: str) -> str:
    """A file name stem for a run id that cannot leave its folder (ids come from files)."""
    stem = _UNSAFE_FILE_CHARS.sub("_", run_id).strip(".") or "run"
    return stem[:120]


def side_programs(path: str | os.PathLike[str]) -> dict[str, str]:
    """The programs stored for a comparison's side: beside a run file, or beside the run
    files of a folder (loose and in runs/; the first run holding a program gives it)."""
    p = Path(path)
    if not p.is_dir():
        return load_programs(p)
    found: dict[str, str] = {}
    for run_file in sorted([*p.glob("*.json"), *p.glob(f"{OutputLayout.RUNS}/*.json")]):
        for key, text in load_programs(run_file).items():
            found.setdefault(key, text)
    return found


def program_diff_folder(beside: str | os.PathLike[str], base_id: str, new_id: str) -> Path:
    """Where the program diffs of a comparison go: `NEW.vs.BASE.diffs/` in the folder of
    the new side (`beside`: its run file's folder, or the folder of runs it is)."""
    p = Path(beside)
    folder = p if p.is_dir() else p.parent
    if (folder / OutputLayout.RUNS).is_dir():
        folder = folder / OutputLayout.RUNS
    return folder / f"{safe_file_stem(new_id)}.vs.{safe_file_stem(base_id)}.diffs"


def write_program_diffs(folder: Path, diffs: Mapping[str, str]) -> dict[str, Path]:
    """Write each diff (`gate.program.program_diffs`, by program key) to `folder` as
    `KEY.diff`, atomically; the paths by key. The folder is made where missing and never
    written through a link; a file there that jitbench did not write is not replaced.

    Raises:
        OutputError: the folder is a link or not a folder, a file is not jitbench's, or
            a write failed.
    """
    if not diffs:
        return {}
    st = lstat_or_none(folder)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise OutputError(
            f"{str(folder)!r} is {describe(st.st_mode)}, where jitbench writes program "
            "diffs; move it away, or choose another folder with --out."
        )
    written: dict[str, Path] = {}
    for key, diff in diffs.items():
        path = folder / f"{safe_file_stem(key.replace('|', '-'))}.diff"
        check_replaceable(path)
        write_text_atomic(path, diff)
        written[key] = path
    return written


@dataclass(frozen=True)
class OutputLayout:
    """The files of one output folder (see the module docstring)."""

    root: Path

    RUNS = "runs"

    @property
    def runs_dir(self) -> Path:
        return self.root / self.RUNS

    @property
    def index(self) -> Path:
        return self.root / "index.html"

    @property
    def history(self) -> Path:
        return self.root / "history.html"

    @property
    def plotly_js(self) -> Path:
        return self.root / "plotly.min.js"

    @property
    def index_cache(self) -> Path:
        return self.runs_dir / ".index-cache"

    def run_json(self, run_id: str) -> Path:
        return self.runs_dir / f"{safe_file_stem(run_id)}.json"

    def run_page(self, run_id: str) -> Path:
        return self.runs_dir / f"{safe_file_stem(run_id)}.html"

    def run_csv(self, run_id: str) -> Path:
        return self.runs_dir / f"{safe_file_stem(run_id)}.csv"

    def relative(self, path: Path) -> str:
        """`path` as a link from a page at the folder's root, e.g. 'runs/x.html'."""
        return path.relative_to(self.root).as_posix()

    @classmethod
    def of_run_file(cls, path: str | os.PathLike[str]) -> OutputLayout | None:
        """The output folder a run file belongs to: ROOT when it is ROOT/runs/NAME.json,
        else None (a file kept anywhere else has no folder of its own)."""
        p = Path(path).absolute()
        if p.suffix != ".json" or p.parent.name != cls.RUNS:
            return None
        return cls(p.parent.parent)

    def ensure_writable(self, run_id: str | None = None) -> OutputLayout:
        """Check, before measuring, that everything this folder gets can be written: the
        folder itself (index.html, history.html, plotly.min.js), runs/ (created when
        missing) and, given `run_id`, that run's page and CSV in runs/.

        Raises:
            OutputError: a folder cannot be created or written, or one of those files is
                a folder.
        """
        ensure_writable_dir(self.root)
        self.check_runs_folder()
        ensure_writable_dir(self.runs_dir)
        pages = [self.index, self.history, self.plotly_js]
        if run_id is not None:
            pages += [self.run_page(run_id), self.run_csv(run_id)]
        for path in pages:
            check_replaceable(path)
        return self

    def check_runs_folder(self) -> None:
        """runs/ is a folder of this output folder, or not there yet.

        Raises:
            OutputError: runs/ is a symbolic link (what jitbench writes there would land
                wherever it points) or something else than a folder.
        """
        st = lstat_or_none(self.runs_dir)
        if st is None or stat.S_ISDIR(st.st_mode):
            return
        if stat.S_ISLNK(st.st_mode):
            raise OutputError(
                f"{str(self.runs_dir)!r} is a symbolic link; jitbench writes runs inside "
                "the output folder, never through a link: replace the link with a copy of "
                "the folder, or choose another folder with --out."
            )
        raise OutputError(
            f"{str(self.runs_dir)!r} is {describe(st.st_mode)}, where the output folder "
            "keeps its runs; move it away, or choose another folder with --out."
        )


#: What the first bytes of each kind of file jitbench writes in an output folder hold
#: (any one of them): its pages' titles start with "jitbench", plotly.js names itself, the
#: CSV's header starts with run_id, a run file names its schema.
_SIGNATURES = {
    ".html": (b"<title>jitbench", b'<meta name="generator" content="jitbench'),
    ".js": (b"plotly.js",),
    ".csv": (b"run_id,",),
    ".json": (b'"jitbench.run"',),
    ".diff": (b"--- jitbench program",),
    # gzip keeps the member's name in its header: a programs archive's is jitbench's own.
    ".gz": (_PROGRAMS_MEMBER.encode(),),
}


def check_replaceable(path: Path) -> None:
    """Refuse to replace `path` unless nothing is there or it is a file jitbench wrote (a
    page, plotly.js, a run's CSV or JSON, by their first bytes). A hand-written index.html,
    a link, a folder or a named pipe under a name jitbench uses is never replaced.

    Raises:
        OutputError: what is there, and how to proceed.
    """
    st = lstat_or_none(path)
    if st is None:
        return
    if not stat.S_ISREG(st.st_mode):
        raise OutputError(
            f"{str(path)!r} is {describe(st.st_mode)}, where jitbench writes a file of its "
            "own; remove it, or choose another folder with --out."
        )
    signatures = _SIGNATURES.get(path.suffix)
    if signatures is None:
        return
    try:
        with open(path, "rb") as fh:
            head = fh.read(8192)
    except OSError:
        head = b""
    if not any(s in head for s in signatures):
        raise OutputError(
            f"{str(path)!r} was not written by jitbench, so it is not replaced; move it "
            "away (jitbench then writes its own), or choose another folder with --out."
        )


def check_run_copies(runs: Sequence[tuple[Run, Path | None]], root: str | os.PathLike[str]) -> None:
    """`check_run_copy` for several (run, source file) pairs written into one folder
    together, refusing too two different runs given under one run id.

    Raises:
        OutputError: see `check_run_copy`, or two of `runs` claim the same id.
    """
    seen: dict[str, tuple[Run, Path | None]] = {}
    for run, source in runs:
        first = seen.setdefault(run.run_id, (run, source))
        if first[0] is not run and dump_run(first[0]) != dump_run(run):
            names = " and ".join(repr(str(p)) for p in (first[1], source) if p is not None)
            raise OutputError(
                f"{names or 'two runs'} are different runs with the same run id "
                f"{run.run_id!r}, so their files would replace each other; report them into "
                "separate folders with --out."
            )
        check_run_copy(run, root, source=source)


def check_run_copy(run: Run, root: str | os.PathLike[str], *, source: Path | None = None) -> None:
    """Refuse to replace a different run file: the copy of `run` that its page keeps in
    ROOT/runs/ may be written only where no file is, where that file is `source` itself,
    or where it already holds exactly this run. An older partial copy of a run, or a file
    that merely claims a stored run's id, must never replace what is stored.

    Raises:
        OutputError: ROOT/runs/<run-id>.json holds something else; the message says what
            is there and what to do.
    """
    target = OutputLayout(Path(root)).run_json(run.run_id)
    st = lstat_or_none(target)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputError(
            f"{str(target)!r} is {describe(st.st_mode)}, where run {run.run_id!r} would be "
            "stored; remove it, or report into another folder with --out."
        )
    try:
        if not target.exists() or (source is not None and target.samefile(source)):
            return
        if target.read_text("utf-8") == dump_run(run):
            return
        # The same run written by an older jitbench (another schema version, another
        # layout of the JSON): `report` of a stored run into its own folder re-renders it.
        if load_run(target) == run:
            return
    except (OSError, UnicodeDecodeError, JitbenchError):
        pass  # unreadable: not known to be this run, so it is not replaced either
    what = f"run {run.run_id!r}" + (f" from {str(source)!r}" if source is not None else "")
    raise OutputError(
        f"{str(target)!r} already holds a different version of run {run.run_id!r} (or "
        f"another file under its name); refusing to replace it with {what}. Report into "
        "another folder with --out, or remove the stored file if it is the one to drop."
    )
