"""A v3 mirror's spec manifests asked of the disk ahead of their reading.

From a cold disk, a million spec manifests are a million disk requests (a data block
each; their inodes come many to a block). Asked one at a time, this machine's disk
answered some 11,000 a second: 90 s at 1M, the most of a cold build (153.6 s). A thread
here lists the folders ahead of the reader and, for each manifest of a folder, asks the
kernel for it (`posix_fadvise(WILLNEED)`: the read is queued, nothing waits), in the
order of their inodes (the order they were written in, near the order of their blocks).
The disk then has many requests at once, and the reader finds its manifests in memory:
the cold build took 67 s (docs/benchmarks/ingest-speed.md).

It only asks: it opens what the listing says is a regular file, without following a link
or waiting on a FIFO swapped in since, and a file it cannot open, or a folder it cannot
list, is the reader's to report.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Generator, Iterable
from typing import TypeVar

__all__ = ["AHEAD_FOLDERS", "read_ahead"]

AHEAD_FOLDERS = 4
"""Folders listed and asked for ahead of the reader: the page cache holds their manifests
(a few KB each) until read."""

_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | os.O_NOFOLLOW
_Folder = TypeVar("_Folder", bound=tuple[str, list[os.DirEntry[str]]])
_END = object()
_NOWAIT = getattr(os, "RWF_NOWAIT", 0)  # Linux


class _Failed:
    """The listing raised: the reader raises it in turn."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def read_ahead(
    folders: Iterable[_Folder], ahead: int = AHEAD_FOLDERS
) -> Generator[_Folder, None, None]:
    """`folders` (each a folder's path and its entries, as the manifests' listing gives
    them), listed in a thread up to `ahead` folders before they are taken, each folder's
    regular files asked of the disk as it is listed. Closing the iterator stops the thread."""
    handed: queue.Queue[object] = queue.Queue(maxsize=ahead)
    stop = threading.Event()

    def list_and_ask() -> None:
        try:
            for folder in folders:
                if stop.is_set():
                    return
                _ask(folder[1])
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
        while thread.is_alive():  # unblock its last put, then it sees `stop`
            with contextlib.suppress(queue.Empty):
                handed.get(timeout=0.05)


def _ask(entries: list[os.DirEntry[str]]) -> None:
    """Ask the kernel for each regular file of `entries`, in inode order, unless the first
    and last are in memory already (a warm folder: asking costs an open per file, in the
    reader's process, which took a 40 s warm build at 1M 4 to 7 s longer); nothing
    waits for the disk."""
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
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except OSError:
            continue
        try:
            with contextlib.suppress(OSError):  # a file system that takes no advice
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
        finally:
            os.close(fd)


def _in_memory(path: str) -> bool:
    """Whether the start of the file at `path` is in the page cache (a read that may not
    wait for the disk succeeds); False where that cannot be told."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return False
    try:
        return bool(_NOWAIT) and os.preadv(fd, [bytearray(1)], 0, _NOWAIT) >= 0
    except OSError:  # EAGAIN: on the disk; or no such flag here
        return False
    finally:
        os.close(fd)
