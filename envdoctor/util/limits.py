"""Bounded reads: only regular files, never more than a cap, never a wait on a FIFO.

A config path can be a FIFO (opening it waits for a writer forever), /dev/zero (endless) or a
huge file; a snapshot given with --from can be any of those too. Reading goes through here, and
anything but a regular file of sensible size is an OSError whose strerror says what it is, which
callers already report as that file's status.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import TextIO

MIB = 1024 * 1024
CONFIG_FILE_LIMIT = 4 * MIB  # pip.conf, .condarc, uv.toml, version.json, /proc files
SNAPSHOT_LIMIT = 64 * MIB
_CHUNK = 1024 * 1024


# The reason read_bytes gives for a FIFO: pip and uv would wait forever reading such a file.
FIFO_REASON = "not a regular file (a FIFO)"


class NotRegularFile(OSError):
    """A FIFO, device or socket where a file was expected."""


class TooLarge(OSError):
    """A file past the size cap."""


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def small_int(text: str) -> int | None:
    """The number in `text` when it is 1 to 18 ASCII digits; else None. str.isdigit() is also
    true for "²" and "⑧", which int() refuses, and int() refuses 4,300 digits: values from files,
    snapshots and options go through here before int()."""
    if 0 < len(text) <= 18 and text.isascii() and text.isdigit():
        return int(text)
    return None


def read_bytes(path: str, limit: int = CONFIG_FILE_LIMIT) -> bytes:
    """The bytes of the regular file at `path`; OSError for anything else or past `limit` bytes."""
    # O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", path)
        if not stat.S_ISREG(mode):
            raise NotRegularFile(errno.EINVAL, f"not a regular file ({_kind(mode)})", path)
        chunks: list[bytes] = []
        size = 0
        while True:  # st_size is 0 for /proc files: read to the end, up to the limit
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            size += len(chunk)
            if size > limit:
                raise TooLarge(errno.EFBIG, f"larger than {limit // MIB} MiB", path)
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text(path: str, limit: int = CONFIG_FILE_LIMIT, errors: str = "strict") -> str:
    """The UTF-8 text of a regular file (see read_bytes); UnicodeDecodeError when `errors` is strict."""
    return read_bytes(path, limit).decode("utf-8", errors)


def open_output(path: str, append: bool = False) -> TextIO:
    """`path` opened to write text: a FIFO nobody reads is an OSError at once, never a wait
    (a pipe somebody reads, such as /dev/stdout or `>(cat)`, works as before)."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_TRUNC)
    try:
        fd = os.open(path, flags | getattr(os, "O_NONBLOCK", 0), 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # open(2): a FIFO with no reader
            raise OSError(errno.ENXIO, "a FIFO that nobody reads", path) from None
        raise
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)  # writes then wait for a slow reader, as a plain open's do
    return os.fdopen(fd, "a" if append else "w", encoding="utf-8")
