"""Local files hashed by an earlier build, known again by their status, not their bytes.

A tag's fingerprint (identity.py) holds the sha256 of each local index file its caches
name, so a rebuild that compares fingerprints hashed every local index again even when
nothing had changed: 750 MB and 0.9 s of a 1.1 s build, for 30 indexes of 50,000 binaries
a tag. A build records, with each tag, the status of each local file whose digest went
into its fingerprint (device, inode, size, modification and change times in ns); the
next build takes a file whose status is the same as holding the same bytes, as a web
server's ETag does (nginx's is the modification time and size; Apache's adds the inode).
The change time is the kernel's: `touch`, `cp -p` and `rsync -t` can set the modification
time but not it, and any write, rename or `chmod` moves it.

A status is recorded only once it stood still: that of the file opened for the read, the
same as the path's after it, with both times at least `SETTLED_NS` before the read began.
Otherwise a file written twice in one tick of the file system's clock, once just before
the read and once after, would show one status for two contents; a file that settled is
read again only if it changes, and any change then moves its change time to a later tick.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from cachegql.index.ingest.files import regular_status

__all__ = [
    "SETTLED_NS",
    "FileStatuses",
    "Recorded",
    "Status",
    "read_recorded",
    "settled_status",
    "status_of",
    "write_recorded",
]

# Longer than the coarsest clock of a common file system (FAT's 2 s), and than the
# kernel's coarse clock lags the wall clock by.
SETTLED_NS = 3_000_000_000
_SHA256 = re.compile(r"[0-9a-f]{64}")

Status = tuple[int, int, int, int, int]
"""A file's device, inode, size, modification and change times (ns)."""

Recorded = tuple[Status, str]
"""A file's status and the sha256 of the bytes it held then."""


class FileStatuses:
    """The status of each local file a recording opener read, or took the digest of from
    an earlier build's record (`known`), where it stands for the bytes of that digest."""

    def __init__(self, known: Mapping[str, Recorded] | None = None) -> None:
        self.known: Mapping[str, Recorded] = known or {}
        self.settled: dict[str, Status] = {}  # by location
        self._opened: os.stat_result | None = None

    def opened(self, status: os.stat_result) -> None:
        """The status of the file a read opened, taken before it was read."""
        self._opened = status

    @contextmanager
    def reading(self, location: str, path: str) -> Iterator[None]:
        """Keep the status of the file the block reads from `path` (told by `opened`) if
        it stood still: the path's after the read is the opened file's, and settled. Not
        the path's before the read: a link swapped twice would give one file's status
        for another's bytes. A block that raises keeps none."""
        self.settled.pop(location, None)
        self._opened = None
        started = time.time_ns()
        yield
        opened, self._opened = self._opened, None
        if opened is not None:
            status = settled_status(_status(opened), status_of(path), started)
            if status is not None:
                self.settled[location] = status

    def take(self, location: str, path: str) -> str | None:
        """The digest recorded for the file at `path`, if its status now is the one
        recorded with it; else None (it is read)."""
        recorded = self.known.get(location)
        if recorded is None or status_of(path) != recorded[0]:
            return None
        self.settled[location] = recorded[0]
        return recorded[1]

    def forget(self, location: str) -> None:
        """A digest not read from the file (told by another process): no status for it."""
        self.settled.pop(location, None)


def status_of(path: str) -> Status | None:
    """The status of the regular file at `path` now, taken on it opened (`regular_status`);
    None if there is none."""
    try:
        return _status(regular_status(path))
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None


def _status(found: os.stat_result) -> Status:
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def settled_status(before: Status | None, after: Status | None, started_ns: int) -> Status | None:
    """The status of a file read between `before` and `after` (statuses taken around the
    read, which began at `time.time_ns()` == `started_ns`), if it can stand for the bytes
    read; else None."""
    if before is None or before != after:
        return None
    if max(before[3], before[4]) > started_ns - SETTLED_NS:
        return None
    return before


def read_recorded(value: object, tag: str) -> dict[str, Recorded]:
    """A manifest entry's `file_digests` (`{path: [dev, inode, size, mtime_ns, ctime_ns,
    sha256]}`) as written; ValueError if any value is not."""
    if not isinstance(value, Mapping):
        raise ValueError(f"tag {tag}: file_digests is not an object")
    recorded = {}
    for path, entry in value.items():
        if not _is_entry(entry):
            raise ValueError(f"tag {tag}: file_digests[{path!r}] is not as written")
        *numbers, digest = entry
        recorded[path] = ((numbers[0], numbers[1], numbers[2], numbers[3], numbers[4]), digest)
    return recorded


def write_recorded(recorded: Mapping[str, Recorded]) -> dict[str, list[int | str]]:
    """`recorded` as a manifest entry's `file_digests`, sorted by path."""
    return {path: [*status, digest] for path, (status, digest) in sorted(recorded.items())}


def _is_entry(entry: Any) -> bool:
    """Whether a `file_digests` value is five counts and times, and a sha256."""
    return (
        isinstance(entry, list)
        and len(entry) == 6
        # `type(...) is int`: JSON's true is a bool, which Python counts as an int.
        and all(type(n) is int for n in entry[:5])
        and min(entry[:3]) >= 0  # the times may be before 1970
        and isinstance(entry[5], str)
        and _SHA256.fullmatch(entry[5]) is not None
    )
