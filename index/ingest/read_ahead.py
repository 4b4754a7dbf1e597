"""A v3 mirror's spec manifests asked of the disk ahead of their reading.

From a cold disk, a million spec manifests are a million disk requests (a 451-byte
manifest is one data block; their inodes come many to a block). Asked one at a time,
this machine's disk answered 9,000 to 11,000 a second: most of a cold build at 1M
(129.9 s, against 42.0 s from memory). A thread here lists the folders ahead of the
reader and, for each manifest of a folder, asks the kernel for it
(`posix_fadvise(WILLNEED)`: the read is queued, and only the open may wait, for an inode
not in memory), in the order of their inodes (the order they were written in, near the
order of their blocks). The disk then has many requests at once, and the reader finds
its manifests in memory: the cold build took 67.5 to 70.3 s
(docs/benchmarks/ingest-speed.md).

It asks for no more than the reader reads: a file that is regular once opened (the
listing's type is checked again, no link followed, no FIFO waited on), up to the bytes
the reader would read of it. A file it cannot open, or a folder it cannot list, is the
reader's to report. Where the system takes no advice (`posix_fadvise` is Linux's and
BSD's), the folders are only listed ahead.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Generator, Iterable
from typing import TypeVar

from cachegql.index.ingest.files import open_listed_regular

__all__ = ["AHEAD_FOLDERS", "read_ahead"]

AHEAD_FOLDERS = 4
"""Folders listed and asked for ahead of the one being read (and one more being asked
for): the page cache holds their manifests (a few KB each) until read."""

_Folder = TypeVar("_Folder", bound=tuple[str, list[os.DirEntry[str]]])
_END = object()
_ADVISE = getattr(os, "posix_fadvise", None)
_WILLNEED = getattr(os, "POSIX_FADV_WILLNEED", 0)
_NOWAIT = getattr(os, "RWF_NOWAIT", 0)  # Linux


class _Failed:
    """The listing raised: the reader raises it in turn."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def read_ahead(
    folders: Iterable[_Folder], max_bytes: int, ahead: int = AHEAD_FOLDERS
) -> Generator[_Folder, None, None]:
    """`folders` (each a folder's path and its entries, as the manifests' listing gives
    them), listed in a thread up to `ahead` folders before they are taken, each folder's
    regular files asked of the disk (their first `max_bytes`, what the reader reads of
    one) before it is handed over. Closing the iterator stops the thread."""
    handed: queue.Queue[object] = queue.Queue(maxsize=ahead)
    stop = threading.Event()

    def list_and_ask() -> None:
        try:
            for folder in folders:
                if stop.is_set():
                    return
                _ask(folder[1], max_bytes, stop)
                handed.put(folder)
        except BaseException as exc:  # the reader's to raise, in its own thread
            handed.put(_Failed(exc))
        handed.put(_END)

    thread = threading.Thread(target=list_and_ask, name="manifests-read-ahead", daemon=True)
    thread.start()
    try:
        while (item := handed.get()) is not _END:
            if isinstance(item, _Failed):
                raise item.error
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        while thread.is_alive():  # empty the queue, so that a put blocked in it returns
            with contextlib.suppress(queue.Empty):
                while True:
                    handed.get_nowait()
            thread.join(0.01)


def _ask(entries: list[os.DirEntry[str]], max_bytes: int, stop: threading.Event) -> None:
    """Ask the kernel for each regular file of `entries`, in inode order, unless the first
    and last are in memory already (a warm folder: asking costs an open per file, in the
    reader's process, which took a 40 s warm build at 1M 4 to 7 s longer)."""
    if _ADVISE is None:
        return
    regular = []
    for entry in entries:
        try:
            if entry.is_file(follow_symlinks=False):
                regular.append((entry.inode(), entry.path))
        except OSError:
            continue
    if not regular:
        return
    regular.sort()
    if _in_memory(regular[0][1]) and _in_memory(regular[-1][1]):
        return
    for _, path in regular:
        if stop.is_set():
            return
        opened = _open_regular(path)
        if opened is None:
            continue
        fd, size = opened
        try:
            if 0 < size <= max_bytes:
                with contextlib.suppress(OSError):  # a file system that takes no advice
                    _ADVISE(fd, 0, size, _WILLNEED)
        finally:
            os.close(fd)


def _in_memory(path: str) -> bool:
    """Whether the start of the regular file at `path` is in the page cache (a read that
    may not wait for the disk reads a byte); False where that cannot be told, or the file
    is empty or not regular."""
    if not _NOWAIT:
        return False
    opened = _open_regular(path)
    if opened is None:
        return False
    fd = opened[0]
    try:
        return os.preadv(fd, [bytearray(1)], 0, _NOWAIT) > 0
    except OSError:  # EAGAIN: on the disk; EOPNOTSUPP: a file system that cannot tell
        return False
    finally:
        os.close(fd)


def _open_regular(path: str) -> tuple[int, int] | None:
    """A descriptor on `path` and its size, if it is a regular file once opened (not a
    link), else None."""
    try:
        fd, status = open_listed_regular(path)
    except OSError:
        return None
    return fd, status.st_size
