"""Remember which run files passed schema validation, so they are not validated again.

An index refresh loads every stored run; validating each against the schema every time
made a stray big file slow down every later `jitbench run`. A file that passed is
remembered by its stamp (size, modification time in nanoseconds, inode): in this process,
and in `runs/.jitbench-validated` beside the files of an output folder's `runs/`. Any
write to a run file (atomic writes replace the inode) changes the stamp, and a stamp is
only trusted under the same schema and jitbench version. The cache is a hint, never a
source of truth: a file it vouches for that then fails to load is validated in full, and
a cache that cannot be read or written is ignored.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from importlib import metadata, resources
from pathlib import Path
from typing import Any

from jitbench.results.safe_io import read_regular

#: The cache file in a runs/ folder (not *.json: readers glob runs/*.json for runs).
CACHE_NAME = ".jitbench-validated"
#: Only files in a folder of this name get an on-disk entry (an output folder's runs/).
RUNS_FOLDER = "runs"

Stamp = tuple[int, int, int]

_CACHE_LIMIT = 64 * 2**20  # a stamp per run file: far more than any folder's

_seen: set[tuple[str, Stamp]] = set()  # this process: (absolute path, stamp)


def stamp_of(st: os.stat_result) -> Stamp:
    """What identifies one version of a file: size, mtime (ns) and inode."""
    return (st.st_size, st.st_mtime_ns, st.st_ino)


@functools.cache
def _generation() -> str:
    """Cache entries hold only for the schema and the jitbench version that wrote them."""
    schema = resources.files("jitbench").joinpath("results/schema/run.schema.json").read_bytes()
    try:
        version = metadata.version("jitbench")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return hashlib.sha256(schema + version.encode()).hexdigest()[:16]


def _cache_file(path: Path) -> Path | None:
    folder = path.parent
    return folder / CACHE_NAME if folder.name == RUNS_FOLDER else None


def _read_cache(cache: Path) -> dict[str, Any]:
    try:  # a link or a named pipe put there is no cache: never followed, never waited on
        raw, _ = read_regular(cache, limit=_CACHE_LIMIT, follow_links=False)
        data = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("generation") != _generation():
        return {}
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def is_validated(path: Path, stamp: Stamp) -> bool:
    """Whether this version of `path` (its `stamp`) already passed validation."""
    key = str(path.absolute())
    if (key, stamp) in _seen:
        return True
    cache = _cache_file(path.absolute())
    if cache is None:
        return False
    entry = _read_cache(cache).get(path.name)
    if isinstance(entry, list) and tuple(entry) == stamp:
        _seen.add((key, stamp))
        return True
    return False


def remember(path: Path, stamp: Stamp) -> None:
    """Record that this version of `path` passed validation (best effort, never raises)."""
    absolute = path.absolute()
    _seen.add((str(absolute), stamp))
    cache = _cache_file(absolute)
    if cache is None:
        return
    files = _read_cache(cache)
    files[absolute.name] = list(stamp)
    # Forget files that are gone, so the cache stays as small as the folder.
    files = {name: v for name, v in files.items() if (absolute.parent / name).is_file()}
    text = json.dumps({"generation": _generation(), "files": files}, sort_keys=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{CACHE_NAME}.", suffix=".tmp", dir=cache.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, cache)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError:
        pass  # a read-only folder, a full disk: validate again next time


def forget() -> None:
    """Drop what this process remembers (the on-disk caches stay); for tests."""
    _seen.clear()
