"""The records a tag's build caches gave so far, so that a record read once is not read again.

The caches of one tag repeat each other: a tag's root mirror holds every binary of its
stacks, and the stacks share their dependencies (`zlib`, `gcc-runtime`...). Parsing a
record and reading it into a `Node` is most of a build's time (some 35 us a record), and
two records of the same hash whose bytes are the same read into equal nodes. Spack writes
a record as `{"spec": {...}, "ref_count": N, "in_buildcache": true}`, and the count differs
from one index to the next (a dependency has more dependents in the root than in a stack),
so a record is known by the digest of its bytes *before* that tail, and its flag is taken
from the tail. A record of another shape is known by all of its bytes. A record whose bytes
differ is read as before, so its problems are still told.
"""

from __future__ import annotations

import hashlib
import re

from cachegql.index.ingest.dag_nodes import Node

__all__ = ["SeenNodes"]

# The tail of a record as Spack writes it: its last members, top-level since only the
# record's closing brace follows. JSON's own whitespace and integers, so that two records
# alike but for this tail are both valid JSON or neither.
_TAIL = re.compile(
    rb',[ \t\n\r]*(?:"ref_count"[ \t\n\r]*:[ \t\n\r]*(?:0|[1-9][0-9]*)[ \t\n\r]*,[ \t\n\r]*)?'
    rb'"in_buildcache"[ \t\n\r]*:[ \t\n\r]*(true|false)[ \t\n\r]*\}\Z'
)
_TAIL_WINDOW = 128  # bytes at a record's end searched for its tail
_FLAG_KEY = b'"in_buildcache"'


class SeenNodes:
    """The nodes read so far in one tag, by hash and by the digest of their record.

    `same(hash, record_bytes)` is asked before a record is parsed: it gives the node of a
    record read before whose bytes are the same (but for the tail), or None; then, once
    the caller has read that record into a node, `keep(hash, node)` remembers it under
    the digest `same` found (one record at a time, in the order they are read).
    """

    __slots__ = ("_pending", "_read", "taken")

    def __init__(self) -> None:
        self._read: dict[str, tuple[bytes, Node]] = {}
        self._pending: tuple[str, bytes] | None = None
        self.taken = 0  # records answered by a node read before (tests, benchmarks)

    def same(self, digest: str, record: bytes) -> Node | None:
        key, flag = _identity(record)
        earlier = self._read.get(digest)
        if earlier is None or earlier[0] != key:
            self._pending = (digest, key) if earlier is None else None
            return None
        self.taken += 1
        self._pending = None
        node = earlier[1]
        if flag is None or node.in_buildcache == flag:
            return node
        return node._replace(in_buildcache=flag)

    def keep(self, digest: str, node: Node) -> None:
        """Remember `node`, just read from the record `same` was last asked about."""
        if self._pending is not None and self._pending[0] == digest:
            self._read[digest] = (self._pending[1], node)
        self._pending = None


def _identity(record: bytes) -> tuple[bytes, bool | None]:
    """The digest of a record's bytes before its tail, and the tail's flag; of all of its
    bytes (and None) when it has no such tail, or when its head could hold another flag
    (the key, or any escape that might spell it)."""
    tail = _TAIL.search(record, max(0, len(record) - _TAIL_WINDOW))
    if tail is not None:
        head = memoryview(record)[: tail.start()]
        if record.find(_FLAG_KEY, 0, tail.start()) < 0 and record.find(b"\\", 0, tail.start()) < 0:
            digest = hashlib.blake2b(head, digest_size=16, person=b"head").digest()
            return digest, tail.group(1) == b"true"
    return hashlib.blake2b(record, digest_size=16, person=b"record").digest(), None
