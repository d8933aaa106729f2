"""Reading files whose kind nobody promised: a run file, a cache entry, a page to replace.

A path may hold anything a filesystem can: a named pipe (opening it for reading waits for a
writer, forever), a device (/dev/zero never ends), a folder, a symbolic link to another
folder. `read_regular` opens without waiting, refuses anything but a regular file (and,
where asked, a link), and reads no more than a limit, so such a path costs an error
message, never a hang or unbounded memory. `describe` names what is there, for that
message.
"""

from __future__ import annotations

import os
import stat


class NotRegularFile(OSError):
    """The path is not a regular file (or is a link where none is followed); `kind` says
    what it is ("a named pipe (FIFO)", "a symbolic link", …)."""

    def __init__(self, path: str | os.PathLike[str], kind: str) -> None:
        super().__init__(f"{os.fspath(path)!r} is {kind}, not a regular file")
        self.kind = kind


class FileTooBig(OSError):
    """The file holds more bytes than the reader's limit."""

    def __init__(self, path: str | os.PathLike[str], size: int, limit: int) -> None:
        super().__init__(f"{os.fspath(path)!r} holds {size:,} bytes, more than {limit:,}")
        self.size, self.limit = size, limit


def describe(mode: int) -> str:
    """What a file of this `st_mode` is, as a message says it ('a named pipe (FIFO)')."""
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a regular file" if stat.S_ISREG(mode) else "not a file"


def read_regular(
    path: str | os.PathLike[str], *, limit: int, follow_links: bool = True
) -> tuple[bytes, os.stat_result]:
    """The bytes of the regular file at `path` and its stat, read without blocking.

    Raises:
        FileNotFoundError, PermissionError, …: as `open` does.
        IsADirectoryError: `path` is a folder.
        NotRegularFile: a named pipe, a device, a socket, or (without `follow_links`) a
            symbolic link.
        FileTooBig: more than `limit` bytes.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if not follow_links and os.path.islink(path):  # ELOOP from O_NOFOLLOW
            raise NotRegularFile(path, "a symbolic link") from exc
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "Is a directory", os.fspath(path))
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(path, describe(st.st_mode))
        if st.st_size > limit:
            raise FileTooBig(path, st.st_size, limit)
        chunks, total = [], 0
        while chunk := os.read(fd, min(1 << 24, limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:  # grew while read
                raise FileTooBig(path, total, limit)
        return b"".join(chunks), st
    finally:
        os.close(fd)


def lstat_or_none(path: str | os.PathLike[str]) -> os.stat_result | None:
    """`os.lstat(path)` (the link itself, not what it points to), or None when nothing is
    there."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def is_real_folder(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is a folder itself, not a link to one."""
    st = lstat_or_none(path)
    return st is not None and stat.S_ISDIR(st.st_mode)
