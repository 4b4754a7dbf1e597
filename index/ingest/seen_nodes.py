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
from collections.abc import Callable

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
    """The nodes read so far in one tag, each by its record's key (hash and digest).

    `take(hash, record_bytes)` is asked before a record is parsed: it gives the node of a
    record read before with the same bytes (but for the tail), and the record's key, to
    `keep` the node under once the caller has read the record (the first node of a hash
    stays: a record of that hash with other bytes read later is not kept).
    `take_keyed` is the same for a record whose key and flag are known already (a part
    kept by an earlier build: index/ingest/cache_parts.py).
    """

    __slots__ = ("_read", "taken")

    def __init__(self) -> None:
        self._read: dict[str, tuple[bytes, Node]] = {}
        self.taken = 0  # records answered by a node read before (tests, benchmarks)

    def take(self, digest: str, record: bytes) -> tuple[Node | None, bytes]:
        key, flag = _identity(record)
        return self.take_keyed(digest, key, flag), key

    def take_keyed(self, digest: str, key: bytes, flag: bool | None) -> Node | None:
        """The node read before for a record of `digest` whose key is `key`, with the
        `in_buildcache` flag `flag` (None: the node's own); None if there is none."""
        earlier = self._read.get(digest)
        if earlier is None or earlier[0] != key:
            return None
        self.taken += 1
        node = earlier[1]
        if flag is not None and node.in_buildcache != flag:
            node = node.flagged(flag)
        return node

    def keep(self, key: bytes, node: Node) -> None:
        """Remember `node`, read from the record `take` gave `key` for."""
        self._read.setdefault(node.hash, (key, node))

    def mark(self) -> tuple[int, int]:
        """Where this stands now, to `rewind` to."""
        return len(self._read), self.taken

    def rewind(self, mark: tuple[int, int]) -> None:
        """Forget what was kept and taken since `mark` (nodes are kept in order)."""
        kept, taken = mark
        while len(self._read) > kept:
            self._read.popitem()
        self.taken = taken

    def __len__(self) -> int:
        return len(self._read)

    def __contains__(self, digest: str) -> bool:
        """Whether a node of this hash was kept (the first of a hash stays)."""
        return digest in self._read

    @property
    def holds(self) -> Callable[[str], bool]:
        """`digest in self`, as the dict's own test: for a loop over an index's rows,
        where a method call each was a tenth of taking an index from its part."""
        return self._read.__contains__

    def absorb(self, other: SeenNodes) -> None:
        """Keep what `other` kept, in its order, and count what it took."""
        for key, node in other._read.values():
            self.keep(key, node)
        self.taken += other.taken


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
