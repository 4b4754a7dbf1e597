"""Build-cache indexes as read by an earlier build, kept to be taken instead of read again.

A tag is the unit a build reuses whole (index/disk/reuse.py); when one of its build
caches changes, the tag is made again from all of them. Reading an index into nodes is
most of that (some 40 µs a record: 2 s for a root index of 50,000 binaries), while the
tag's other caches did not change. So a build keeps, for each index file of a tag of
several caches, its nodes as read (a *part*, named by the sha256 of the index's bytes,
the build's code and the limits bodies are read within), and a later build that knows
an index's sha256 before reading it takes its nodes from the part: 0.24 s instead of 2.

A part is what `read_database` gave, record by record, with what `SeenNodes` needs to
give the same nodes again: each record's key and, for a record that an earlier cache of
the tag gave alike, only that key (and its flag). Taken from a part, such a record is
asked of the tag's `SeenNodes` as it would have been; if the cache it came from is not
read before this one any more, the part is not taken and the index is read. So a tag
made from parts holds the nodes that reading its indexes gives, in the same order.

A local v3 mirror's spec manifests (one per binary, read for its tarball's size: half of
reading a mirror of 5,000 binaries) are kept so too: their sizes and problems, named by
the folder and its `FileStock` (the manifests' names and statuses, which the build
looks at before reading the tag, for its fingerprint), and taken while that is the same.

Parts live beside the builds (`DIR.parts/`, never served), written atomically as
`<code>-<sha256>.part` (`<code>-sizes-<sha256>.part` for spec manifests): a header, the
blake2b of the rest, and the rest in `marshal`'s format. One that is damaged, cut short
or of other code is not taken (the index is read, and its part written again). They are
written by the builds of this `--out` alone, under its lock, and are trusted as its
builds are; the build keeps those its tags name and removes the rest (`prune`).
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from cachegql.index.ingest.dag_nodes import Database, Edge, Node, compiler_edges
from cachegql.index.ingest.locations import Location, Opener
from cachegql.index.ingest.seen_nodes import SeenNodes
from cachegql.index.ingest.size_packing import packed_sizes, unpacked_sizes
from cachegql.index.ingest.spackdb import PartEntry
from cachegql.index.ingest.tarball_sizes import Sizes
from cachegql.index.records import Problem
from cachegql.index.spack.compilers import Compiler
from cachegql.index.spack.variants import Variant

__all__ = [
    "CacheParts",
    "decode_part",
    "decode_sizes",
    "encode_part",
    "encode_sizes",
]

_MAGIC = b"cachegql part 2\n"
_SIZES_MAGIC = b"cachegql sizes 1\n"
_CHECK = 16  # bytes of the blake2b after the header
_SUFFIX = ".part"


def encode_part(
    version: int | None, entries: Iterable[PartEntry], problems: list[str], *, keyed: bool
) -> bytes:
    """The bytes of a part: an index's database version, the messages of the records it
    left out, whether it was read with a tag's `SeenNodes` (`keyed`: its rows have their
    keys), and its nodes as read, in order (PartEntry): each row's hash, key and, for a
    row an earlier cache gave, its flag; the other rows' nodes, a column per field."""
    rows = list(entries)
    digests = [row[0] for row in rows]
    keys = [row[1] for row in rows]
    flags = [row[2].in_buildcache if row[3] else None for row in rows]
    read = [row[2] for row in rows if not row[3]]
    columns: list[Any] = list(zip(*read, strict=True))[:_WRITTEN] if read else [()] * _WRITTEN
    # Nodes of one index share their variants, edges and compilers (node_reader.py):
    # each written once, `marshal` refers to it again, and reading shares it alike. An
    # edge is written once in a table, and a node's edges as their places in it.
    columns[_VARIANTS] = _shared(columns[_VARIANTS], _variants_payload)
    table, columns[_EDGES] = _edge_table(columns[_EDGES])
    columns[_COMPILER] = _shared(
        columns[_COMPILER], lambda c: None if c is None else (c.name, c.version, c.raw)
    )
    body = marshal.dumps((version, problems, keyed, digests, keys, flags, table, columns), 4)
    return _MAGIC + hashlib.blake2b(body, digest_size=_CHECK).digest() + body


# Where the fields made of objects are among a `Node`'s.
_VARIANTS, _EDGES, _COMPILER = map(Node._fields.index, ("variants", "edges", "compiler"))
_WRITTEN = Node._fields.index("compiler_edges")  # the last, worked out again from edges


def _shared(values: Sequence[Any], convert: Callable[[Any], Any]) -> list[Any]:
    """`convert` of each value, once per object: the same object gives the same result.
    A sequence, held whole while this runs: objects known by their `id` must live on (a
    freed one's id may be another's)."""
    done: dict[int, Any] = {}
    return [
        done[key] if (key := id(value)) in done else done.setdefault(key, convert(value))
        for value in values
    ]


def _variants_payload(variants: tuple[Variant, ...]) -> tuple[Any, ...]:
    return tuple([(v.name, v.value, v.raw) for v in variants])


def _edge_table(
    edges_of_nodes: Iterable[tuple[Edge, ...]],
) -> tuple[list[tuple[Any, ...]], list[tuple[int, ...]]]:
    """Each edge object once (its fields), and each node's edges as places in that list:
    a tag's nodes hold some ten edges each, of a few distinct objects per index."""
    every = list(edges_of_nodes)
    place: dict[int, int] = {}
    table: list[tuple[Any, ...]] = []
    flat = list(chain.from_iterable(every))
    for edge in dict(zip(map(id, flat), flat, strict=True)).values():
        place[id(edge)] = len(table)
        table.append((edge.name, edge.hash, edge.deptypes, edge.virtuals))
    found = place.__getitem__
    return table, _shared(every, lambda edges: tuple(map(found, map(id, edges))))


def encode_sizes(sizes: Sizes) -> bytes:
    """The bytes of a sizes part: the hashes as one text (a spec hash holds no "/"), the
    sizes in a typed array, the problems as (path, message)."""
    found, problems = sizes
    hashes, counts = packed_sizes(found)
    body = marshal.dumps((hashes, counts.tobytes(), [(p.path, p.message) for p in problems]), 4)
    return _SIZES_MAGIC + hashlib.blake2b(body, digest_size=_CHECK).digest() + body


def decode_sizes(data: bytes) -> Sizes | None:
    """The sizes a sizes part holds, their hashes interned as the tag's nodes' are
    (tarball_sizes.py); None for bytes that are no sound sizes part."""
    body = _checked(data, _SIZES_MAGIC)
    if body is None:
        return None
    try:
        hashes, counts, problems = marshal.loads(body)
        sizes = array("q")
        sizes.frombytes(counts)
        return unpacked_sizes(hashes, sizes), [Problem(p, message) for p, message in problems]
    except (EOFError, ValueError, TypeError, AttributeError):
        return None


def _checked(data: bytes, magic: bytes) -> memoryview | None:
    """The body of a part that starts with `magic` and whose check holds, else None."""
    body = memoryview(data)[len(magic) + _CHECK :]
    check = hashlib.blake2b(body, digest_size=_CHECK).digest()
    if not data.startswith(magic) or data[len(magic) : len(magic) + _CHECK] != check:
        return None
    return body


def decode_part(data: bytes, source: str, seen: SeenNodes | None) -> Database | None:
    """The database a part holds, its records asked of `seen` as reading them would
    have; None for bytes that are no sound part, or a record `seen` does not give."""
    body = _checked(data, _MAGIC)
    if body is None:
        return None
    try:
        version, problems, keyed, digests, keys, flags, table, columns = marshal.loads(body)
        if seen is not None and not keyed:  # its rows have no keys to keep its nodes under
            return None
        made = _made_nodes(table, columns)
        if not len(digests) == len(keys) == len(flags) or flags.count(None) != len(made):
            return None
        rows = zip(digests, keys, flags, strict=True)
        return _database(version, problems, rows, made, source, seen)
    except (EOFError, ValueError, TypeError, IndexError, KeyError):
        return None


def _made_nodes(table: list[tuple[Any, ...]], columns: list[Any]) -> list[Node]:
    """The nodes of a part's columns, their shared parts made once (see `encode_part`)."""
    if len(columns) != _WRITTEN:
        raise ValueError("not a part's columns")
    columns[_VARIANTS] = _shared(columns[_VARIANTS], lambda vs: tuple([Variant(*v) for v in vs]))
    edge = [Edge(*fields) for fields in table].__getitem__
    columns[_EDGES] = _shared(columns[_EDGES], lambda places: tuple(map(edge, places)))
    columns[_COMPILER] = _shared(columns[_COMPILER], lambda c: None if c is None else Compiler(*c))
    sets: dict[tuple[int, ...], tuple[Edge, ...]] = {}
    columns.append(_shared(columns[_EDGES], lambda edges: compiler_edges(edges, sets)))
    return list(map(Node._make, zip(*columns, strict=True)))


def _database(
    version: int | None,
    problems: list[str],
    rows: Iterable[tuple[str, bytes, bool | None]],
    made: list[Node],
    source: str,
    seen: SeenNodes | None,
) -> Database | None:
    """The database of a part's rows, each asked of `seen` first as reading it would
    ask; None (and `seen` as it was) if a row that an earlier cache gave is not there.

    What the part itself gives is kept aside (`mine`) until every row is found, then
    given to `seen`: a part refused half way leaves nothing behind for the index read
    in its place. A row is asked of `mine` only for a hash `seen` has none of, as reading
    would find the first record of a hash in `seen` and no other.
    """
    result = Database(source=source, version=version)
    result.problems.extend(Problem(source, message) for message in problems)
    rows = list(rows)
    if (seen is None or not len(seen)) and len(made) == len(rows) == len({r[0] for r in rows}):
        # A tag's first index (or a lone one): every node its own, none asked of another.
        result.nodes.update(zip([row[0] for row in rows], made, strict=True))
        if seen is not None:
            for row, first in zip(rows, made, strict=True):
                if row[1]:
                    seen.keep(row[1], first)
        return result
    mine = SeenNodes()
    nodes = result.nodes
    taken_before = seen.taken if seen is not None else 0
    in_seen = seen.holds if seen is not None else mine.holds  # (asked only with `seen`)
    read = iter(made)
    for digest, key, flag in rows:
        own = next(read) if flag is None else None  # a node read from this index
        node = None
        if seen is not None and key:
            asked = seen if in_seen(digest) else mine
            node = asked.take_keyed(digest, key, flag if own is None else own.in_buildcache)
        if node is None:
            if own is None:  # given by an earlier cache when this one was read
                if seen is not None:
                    seen.taken = taken_before
                return None
            node = own
            if seen is not None and key and not in_seen(digest):
                mine.keep(key, node)
        nodes[digest] = node
    if seen is not None:
        seen.absorb(mine)
    return result


class CacheParts:
    """The parts of one build's tag: those it takes (`load`), and those it writes of the
    indexes it reads (`keep`).

    `folder` holds the parts; `code` names what decides what reading an index gives (a
    part of other code is never taken); `known` gives the sha256 of the body at a
    location where it is known before that location is read by the ingest: a local file
    whose status is the one an earlier build recorded (digest_memo.py), and any body the
    build read to find the tag's fingerprint (a file whose status moved, a remote index
    downloaded or revalidated). A part is taken for those locations only. `stocks`
    gives, likewise, the `FileStock` of each folder of spec manifests the build looked at
    before the ingest (identity.py); `later`, of each folder it is looking at during the
    ingest (a tag known to have changed, look_ahead.py): asked for once, when needed.
    """

    def __init__(
        self,
        folder: Path,
        code: str,
        known: Mapping[str, str],
        stocks: Mapping[str, str] | None = None,
        later: Mapping[str, Callable[[], str | None]] | None = None,
    ) -> None:
        self.folder, self.code, self.known = folder, code, known
        self.stocks = dict(stocks or {})
        self._later = dict(later or {})
        self.names: set[str] = set()  # the parts this tag took or wrote
        self.taken: list[str] = []  # the locations taken from parts (tests, benchmarks)
        self.sizes_taken: set[str] = set()  # the folders of spec manifests likewise

    def name(self, sha256: str, inflated: bool = False) -> str:
        """The file name of the part of an index whose bytes have this sha256 (`inflated`:
        read as a blob is, inflated when gzipped; the same bytes read as a file are not)."""
        return f"{self.code[:16]}-{sha256}{'-inflated' if inflated else ''}{_SUFFIX}"

    def load(
        self,
        location: Location,
        source: str,
        seen: SeenNodes | None,
        opener: Opener,
        expected: str | None = None,
        *,
        inflated: bool = False,
    ) -> Database | None:
        """The database of the index at `location` from its part, if there is one that
        gives it; the opener is told its digest, as if it had read it. `expected`: the
        sha256 the index must have (a blob's name); other bytes are read, to be refused."""
        sha256 = self.known.get(location.text)
        if sha256 is None or (expected is not None and sha256 != expected):
            return None
        name = self.name(sha256, inflated)
        try:
            data = (self.folder / name).read_bytes()
        except OSError:
            return None
        database = decode_part(data, source, seen)
        if database is None:
            return None
        opener.read_elsewhere(location, sha256=sha256)
        self.names.add(name)
        self.taken.append(location.text)
        return database

    def keep(
        self,
        sha256: str | None,
        database: Database,
        entries: Iterable[PartEntry],
        *,
        keyed: bool,
        inflated: bool = False,
    ) -> None:
        """Write the part of an index just read (with a tag's `SeenNodes` if `keyed`),
        whose bytes had the sha256 `sha256` (None: not known, not kept). One there
        already is replaced: it was not taken (damaged, or given by caches read in
        another order), or it is the same. One that cannot be written (a full disk, a
        folder not ours to write) is left out: a part only saves time."""
        if sha256 is None:
            return
        name = self.name(sha256, inflated)
        messages = [problem.message for problem in database.problems]
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            part = encode_part(database.version, entries, messages, keyed=keyed)
            _write_atomically(self.folder / name, part)
        except OSError:
            return
        self.names.add(name)

    def sizes_name(self, folder: Location, stock: str) -> str:
        """The file name of the sizes part of a folder of spec manifests with this stock
        (the folder is part of it: its problems name its files)."""
        key = hashlib.sha256(f"{folder.text}\n{stock}".encode("utf-8", "surrogateescape"))
        return f"{self.code[:16]}-sizes-{key.hexdigest()}{_SUFFIX}"

    def stock_later(self, folder: Location) -> bool:
        """Whether `folder`'s stock is still being looked at (`load_sizes` may wait)."""
        return folder.text in self._later

    def load_sizes(self, folder: Location) -> tuple[Sizes, str] | None:
        """The sizes of the spec manifests in `folder`, and their stock, from the part of
        that stock, when the build looked at them (`later`: now) and one is there."""
        asked = self._later.pop(folder.text, None)
        if asked is not None and (found := asked()) is not None:
            self.stocks[folder.text] = found  # a mirror listed twice in a tag: asked once
        stock = self.stocks.get(folder.text)
        if stock is None:
            return None
        name = self.sizes_name(folder, stock)
        try:
            sizes = decode_sizes((self.folder / name).read_bytes())
        except OSError:
            return None
        if sizes is None:
            return None
        self.names.add(name)
        return sizes, stock

    def took_sizes(self, folder: Location) -> None:
        """Count the sizes of `folder` as taken from their part: once its mirror was read
        (its index too), and once however many times the tag lists it."""
        self.sizes_taken.add(folder.text)

    def keep_sizes(self, folder: Location, stock: str | None, sizes: Sizes) -> None:
        """Write the sizes part of the spec manifests in `folder`, just read as `stock`
        (None: one could not be looked at or read; nothing kept). Best effort, as `keep`."""
        if stock is None:
            return
        name = self.sizes_name(folder, stock)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            _write_atomically(self.folder / name, encode_sizes(sizes))
        except OSError:
            return
        self.names.add(name)


def prune(folder: Path, keep: set[str]) -> None:
    """Remove the parts in `folder` not named in `keep` (best effort)."""
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if entry.name not in keep:
                with contextlib.suppress(OSError):
                    entry.unlink()


def _write_atomically(path: Path, data: bytes) -> None:
    """Write `data` at `path` whole or not at all (a build killed half way, another
    writer): a file beside it, renamed over it."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        temporary.write_bytes(data)
        temporary.replace(path)
    finally:
        temporary.unlink(missing_ok=True)
