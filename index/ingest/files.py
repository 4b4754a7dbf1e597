"""Opening local files without hanging or running out of memory.

A source folder may hold anything: a named pipe blocks `open()` until some writer comes
(forever), a link to /dev/zero reads without end, a huge file costs its size in memory.
So every local read goes through `open_regular`: it refuses anything but a regular
file before opening it, opens without blocking and checks again on the opened file
(the path may have changed in between). A file that a folder's listing shows as regular
(`listed_regular`) is opened without the look before, and without following links.
What is refused is named in words a user understands ("a named pipe (FIFO)"), for the
problem line.
"""

from __future__ import annotations

import errno
import hashlib
import mmap
import os
import stat
import threading
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "Blob",
    "NotRegularFileError",
    "PendingSha256",
    "TooLargeError",
    "describe_mode",
    "map_regular",
    "map_regular_status",
    "open_listed_regular",
    "open_regular",
    "read_head",
    "read_regular",
    "read_regular_status",
    "reason",
    "regular_status",
    "release",
    "sha256_of",
    "sha256_regular_status",
]

Blob = bytes | mmap.mmap
"""A file's content: bytes, or a large local file mapped (see `map_regular`)."""

# Not regular files, by what `stat` says they are; anything else is "a special file".
_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)
# Opened for reading only, never blocking (a FIFO), never becoming our terminal (a tty).
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK = 1 << 20
# Files from this size on are mapped rather than read; a mapped file gives back the pages
# used already a span at a time (`release`).
_MAP_FROM = 64 << 20
_SPAN = 64 << 20
# Data from this size is hashed in a thread (`PendingSha256`): starting one costs ~0.1 ms.
_HASH_BESIDE_FROM = 1 << 20


class NotRegularFileError(OSError):
    """The path is not a regular file (a pipe, device, socket or folder); not read.

    An OSError, so that every handler of unreadable files handles it too; `strerror`
    says what the path is instead.
    """

    def __init__(self, path: Path | str, mode: int) -> None:
        self.what = describe_mode(mode)
        super().__init__(errno.EINVAL, f"{self.what}, not a regular file", str(path))


class TooLargeError(OSError):
    """The file is larger than its reader allows (`limit`): not read, or read no further.

    An OSError, as `NotRegularFileError` is; `strerror` says the size against the limit.
    """

    def __init__(self, path: Path | str, size: int, limit: int, *, growing: bool = False) -> None:
        self.size, self.limit = size, limit
        if growing:  # read on past its status's size: how much more is not known
            message = f"more than the {limit:,} bytes allowed, as read"
        else:
            message = f"{size:,} bytes, more than the {limit:,} allowed"
        super().__init__(errno.EFBIG, message, str(path))


def describe_mode(mode: int) -> str:
    """What a non-regular file is, from its `st_mode`: "a named pipe (FIFO)", ..."""
    return next((what for test, what in _KINDS if test(mode)), "a special file")


def reason(error: OSError) -> str:
    """Why a read failed, in words: the system's message when there is one."""
    return error.strerror or str(error)


def open_regular(path: Path) -> BinaryIO:
    """Open a regular file for reading; NotRegularFileError for anything else.

    Checked before opening (opening a device can have effects of its own) and after,
    on the open file, so a path swapped for a pipe in between is still refused.
    """
    fd, _ = _open_checked(path)
    return os.fdopen(fd, "rb")


def read_regular(path: Path | str, limit: int | None = None) -> bytes:
    """The whole content of a regular file (index files: legitimately large); a file
    over `limit` bytes is a TooLargeError (see `read_regular_status`).

    Read with `os.read` on the checked descriptor, not through a buffered file object:
    a mirror has a small spec manifest per binary, and the file object's set-up was
    most of the cost of reading one (20 of 47 us). A path may be given as text: without a
    `Path` made of each, a manifest takes 16 us, not 27.
    """
    return read_regular_status(path, limit=limit)[0]


def read_regular_status(
    path: Path | str, *, listed_regular: bool = False, limit: int | None = None
) -> tuple[bytes, os.stat_result]:
    """`read_regular`, with the status of the file read, taken before reading it: what
    stands for the file in a fingerprint (file_stock.py) is then never newer than what
    was read.

    `listed_regular`: the folder's listing said the path is a regular file itself (not a
    link). That stands for the look before opening (a spec manifest per binary: the
    `stat` was a third of reading one), and the path is opened without following a link
    (a link swapped in since the listing fails to open); the opened file is still checked.
    A device mounted over a listed file (which takes privileges) would be opened.

    `limit`: a file of more bytes (by its status, or as it is read: it may grow) is a
    TooLargeError, so that a huge or sparse file where small ones are expected costs
    nothing.
    """
    fd, status = _open_checked(path, listed_regular)
    try:
        if limit is not None and status.st_size > limit:
            raise TooLargeError(path, status.st_size, limit)
        return _read_fd(fd, status, limit, path), status
    finally:
        os.close(fd)


def regular_status(path: Path | str) -> os.stat_result:
    """The status of the regular file at `path`, taken on it opened: a network file
    system's client then asks its server (close-to-open) rather than its cache of
    attributes. NotRegularFileError (an OSError) for anything else."""
    fd, status = _open_checked(path)
    os.close(fd)
    return status


def map_regular(path: Path) -> Blob:
    """The content of a regular file, mapped when large (read whole otherwise).

    A mapped file is read as it is used, and `release` drops the pages used already: a
    1.8 GB index (1M specs) read whole was 1.8 GB of the build's peak memory.
    """
    return map_regular_status(path)[0]


def sha256_regular_status(path: Path | str) -> tuple[str, os.stat_result]:
    """The sha256 of the regular file `path`, read a chunk at a time (never held whole, nor
    mapped: a file cut short as it is hashed gives other bytes, not SIGBUS), and its
    status, taken on it opened (as `read_regular_status` gives it)."""
    fd, status = _open_checked(path)
    with os.fdopen(fd, "rb", buffering=0) as file:  # closes `fd`
        return hashlib.file_digest(file, "sha256").hexdigest(), status


def map_regular_status(path: Path | str) -> tuple[Blob, os.stat_result]:
    """`map_regular`, with the status of the file mapped, taken on it opened (as
    `read_regular_status` gives it)."""
    fd, status = _open_checked(path)
    try:
        if status.st_size < _MAP_FROM:
            return _read_fd(fd, status, None, path), status
        return mmap.mmap(fd, 0, access=mmap.ACCESS_READ), status
    finally:
        os.close(fd)  # a mapping keeps its own reference to the file


def release(data: Blob, end: int) -> None:
    """Drop from memory the pages of a mapped `data` before `end` (read again if used
    again); nothing for bytes."""
    if isinstance(data, mmap.mmap):
        end -= end % mmap.PAGESIZE
        if end > 0:
            data.madvise(mmap.MADV_DONTNEED, 0, end)


def sha256_of(data: Blob) -> str:
    """The sha256 of `data`, a mapped file's a span at a time, each dropped once hashed."""
    if isinstance(data, bytes):
        return hashlib.sha256(data).hexdigest()
    digest = hashlib.sha256()
    with memoryview(data) as view:
        for start in range(0, len(view), _SPAN):
            digest.update(view[start : start + _SPAN])
            release(data, start + _SPAN)
    return digest.hexdigest()


class PendingSha256:
    """The sha256 of `data`, found in a thread of its own while the caller goes on
    (hashlib gives up the GIL on large buffers: the other core, where one is free);
    `result()` waits for it. Data under `_HASH_BESIDE_FROM` is hashed at once.

    At 1M specs, hashing a v3 index blob of 1.8 GB took 1.6 to 2.9 s before its parse
    could start; beside the parse, it takes that time from the other core instead.
    """

    def __init__(self, data: Blob) -> None:
        self._digest: str | None = None
        self._error: Exception | None = None
        self._thread: threading.Thread | None = None
        if len(data) < _HASH_BESIDE_FROM:
            self._run(data)
            return
        self._thread = threading.Thread(target=self._run, args=(data,), name="sha256", daemon=True)
        self._thread.start()

    def _run(self, data: Blob) -> None:
        try:
            self._digest = sha256_of(data)
        except Exception as exc:  # handed to whoever waits for the digest
            self._error = exc

    @property
    def done(self) -> bool:
        """Whether `result()` would return without waiting."""
        return self._thread is None or not self._thread.is_alive()

    def result(self) -> str:
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        if self._digest is None:  # the thread ended without a digest or an error
            raise RuntimeError("the sha256 thread ended without a digest")
        return self._digest


def _read_fd(fd: int, status: os.stat_result, limit: int | None, path: Path | str) -> bytes:
    """The rest of an open file, `status` its status; TooLargeError past `limit` bytes."""
    # The size plus one: a file of the size its status gives comes in one read, short by
    # that one byte (its end); otherwise (it grew, or the system reads less at once: 2 GB)
    # it is read on to its end.
    want = status.st_size + 1
    chunk = os.read(fd, want)
    if len(chunk) == status.st_size:
        return chunk
    chunks, total = [], 0
    while chunk:
        chunks.append(chunk)
        total += len(chunk)
        if limit is not None and total > limit:
            raise TooLargeError(path, total, limit, growing=True)
        chunk = os.read(fd, _CHUNK)
    return b"".join(chunks)


def _open_checked(path: Path | str, listed_regular: bool = False) -> tuple[int, os.stat_result]:
    """A blocking descriptor on the regular file `path`, and its status (see open_regular);
    `listed_regular`: see read_regular_status."""
    flags = _OPEN_FLAGS
    if listed_regular:
        flags |= os.O_NOFOLLOW
    else:
        mode = os.stat(path).st_mode  # noqa: PTH116 (the path may be text, not to be parsed)
        if not stat.S_ISREG(mode):
            raise NotRegularFileError(path, mode)
    fd = os.open(path, flags)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise NotRegularFileError(path, status.st_mode)
        os.set_blocking(fd, True)
        return fd, status
    except BaseException:
        os.close(fd)
        raise


def open_listed_regular(path: Path | str) -> tuple[int, os.stat_result]:
    """A descriptor on `path`, listed as a regular file, and its status: a link put in its
    place is not followed, a FIFO not waited on, and one no longer regular is refused
    (NotRegularFileError)."""
    return _open_checked(path, listed_regular=True)


def read_head(path: Path, size: int) -> bytes:
    """At most `size` bytes from the start of a regular file."""
    with open_regular(path) as stream:
        return stream.read(size)
