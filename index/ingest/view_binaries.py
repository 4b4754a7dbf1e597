"""Which binaries each view of a v3 mirror holds (a view is an index of one stack).

A view's index is read only for which of its records are binaries (`binary_hashes`); its
blob is still read, verified and scanned whole: at 200k specs the demo mirror's ten views
took 2.5 s of an 18 s build. Their manifests are read by the build, through its opener
(they are part of the mirror's fingerprint); their blobs, named by checksum, are read by
the process that reads the spec manifests when one runs (tarball_sizes.py), on the other
core while the index is parsed, else by the build itself, with the same function.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from cachegql.index.ingest.inflate import inflated
from cachegql.index.ingest.locations import Location, Opener, ReadError
from cachegql.index.ingest.spackdb import Database, SourceFormatError, binary_hashes
from cachegql.index.records import Problem

__all__ = [
    "PackedOutcome",
    "ViewBlob",
    "ViewOutcome",
    "held_binaries",
    "pack",
    "unpack",
    "view_outcome",
]


@dataclass(frozen=True, slots=True)
class ViewBlob:
    """A view whose manifest was read: the blob it names, with its checksum."""

    name: str
    source: str
    """The view's folder, as its problems name it."""
    blob: Location
    checksum: str


@dataclass(frozen=True, slots=True)
class ViewOutcome:
    """What reading a view's blob gave: its binaries, or why it is skipped. A failed read
    (`read_failed`: missing, unreadable, checksum mismatch) is also the opener's to know."""

    hashes: frozenset[str] = frozenset()
    problem: str | None = None
    read_failed: bool = False


# An outcome as the reading process keeps and sends it: the hashes as one text, separated
# by "/" (a million hashes so are 33 MB, against some 100 MB as a set of strings). The
# hashes are record keys as `record_spans.RECORD` matches them: 32 base32 characters,
# never a "/" nor anything but ASCII.
PackedOutcome = tuple[bytes, str | None, bool]


def pack(outcome: ViewOutcome) -> PackedOutcome:
    return "/".join(outcome.hashes).encode("ascii"), outcome.problem, outcome.read_failed


def unpack(packed: PackedOutcome) -> ViewOutcome:
    hashes, problem, read_failed = packed
    return ViewOutcome(
        frozenset(hashes.decode("ascii").split("/")) if hashes else frozenset(),
        problem,
        read_failed,
    )


def view_outcome(view: ViewBlob, opener: Opener) -> ViewOutcome:
    """The binaries of `view`; a problem instead when its blob cannot be read or scanned."""
    try:
        data = opener.read_verified(view.blob, view.checksum)
    except ReadError as exc:
        return ViewOutcome(problem=str(exc), read_failed=True)
    try:
        hashes = binary_hashes(inflated(data, view.blob, opener), view.source)
        return ViewOutcome(hashes=frozenset(hashes))
    except (ReadError, SourceFormatError) as exc:
        return ViewOutcome(problem=str(exc))


def held_binaries(
    outcome: ViewOutcome, view: ViewBlob, database: Database, problems: list[Problem]
) -> AbstractSet[str]:
    """The binaries of `view` (as its `outcome` has them) that the mirror's index holds:
    a view written after the index (a stack's pipeline pushes its view before the index
    is rebuilt) may list binaries the index does not have yet, named and left out."""
    hashes = outcome.hashes
    # A set's difference with a dict looks each hash up in C, with the hash it keeps.
    missing = sorted(hashes.difference(database.nodes))
    if not missing:
        return hashes
    examples = ", ".join(missing[:3]) + (", ..." if len(missing) > 3 else "")
    problems.append(
        Problem(
            view.source,
            f"view lists {len(missing)} {'binary' if len(missing) == 1 else 'binaries'} "
            "the mirror's index does not hold "
            f"({examples}); left out of stack {view.name}",
        )
    )
    return hashes - set(missing)
