"""Local files hashed by an earlier build, known again by their status, not their bytes.

A tag's fingerprint (identity.py) holds the sha256 of each local index file its caches
name, so a rebuild that compares fingerprints hashed every local index again even when
nothing had changed: 750 MB and most of a second for 30 indexes of 50,000 binaries a tag.
A build records, with each tag, the status of each local file whose digest went into its
fingerprint (device, inode, size, modification and change times in nanoseconds); the
next build takes a file whose status is the same as holding the same bytes, as a web
server's ETag does (nginx's is the modification time and size; Apache's adds the inode).
The change time is the kernel's: `touch`, `cp -p` and `rsync -t` can set the modification
time but not it, and any write, rename or `chmod` moves it.

A status is recorded only once it stood still: the same before and after the read, with
both times at least `SETTLED_NS` before the read began. Otherwise a file written twice in
one tick of the file system's clock, once just before the read and once after, would show
one status for two contents; a file that settled is re-read only if it changes, and any
change then moves its change time to a later tick.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "SETTLED_NS",
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


def status_of(path: str) -> Status | None:
    """The status of the file at `path` now; None if it cannot be looked at."""
    try:
        found = os.stat(path)  # noqa: PTH116 (a location's text path)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return None
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
    return (
        isinstance(entry, list)
        and len(entry) == 6
        # `type(...) is int`: JSON's true is a bool, which Python counts as an int.
        and all(type(n) is int for n in entry[:5])
        and min(entry[:3]) >= 0  # the times may be before 1970
        and isinstance(entry[5], str)
        and _SHA256.fullmatch(entry[5]) is not None
    )
