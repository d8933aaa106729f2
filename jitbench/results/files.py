"""Files of results: atomic writes, writable output folders, saving a run."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from jitbench.errors import OutputError
from jitbench.results.codec import dump_run
from jitbench.results.model import Run


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temp file and rename, so readers never see half.

    Raises:
        OutputError: the folder cannot be created or written.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            # mkstemp makes 0600 files; results are meant to be shared like any output.
            os.chmod(tmp, 0o666 & ~_umask())
            # No fsync: the rename protects against an interrupted or killed run (the
            # case that matters here); an fsync per checkpoint cost seconds on slow disks.
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise OutputError(
            f"cannot write {str(path)!r}: {exc.strerror or exc}; choose another folder with --out."
        ) from None


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


def save_run(run: Run, path: str | os.PathLike[str]) -> Path:
    """Write `run` to `path` atomically and return the path."""
    p = Path(path)
    write_text_atomic(p, dump_run(run))
    return p
