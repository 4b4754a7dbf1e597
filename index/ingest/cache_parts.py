"""Build-cache indexes as read by an earlier build, kept to be taken instead of read again.

A tag is the unit a build reuses whole (index/disk/reuse.py); when one of its build
caches changes, the tag is made again from all of them. Reading an index into nodes is
most of that (some 40 µs a record: 2 s for a root index of 50,000 binaries), while the
tag's other caches did not change. So a build keeps, for each index file of a tag of
several caches, its nodes as read (a *part*, named by the sha256 of the index's bytes
and by the build's code), and a later build whose sources name an index of that sha256
takes its nodes from the part: 0.3 s instead of 2.

A part is what `read_database` gave, record by record, with what `SeenNodes` needs to
give the same nodes again: each record's key and, for a record that an earlier cache of
the tag gave alike, only that key (and its flag). Taken from a part, such a record is
asked of the tag's `SeenNodes` as it would have been; if the cache it came from is not
read before this one any more, the part is not taken and the index is read. So a tag
made from parts holds the nodes that reading its indexes gives, in the same order.

Parts live beside the builds (`DIR.parts/`, never served), written atomically as
`<code>-<sha256>.part`: a header, the blake2b of the rest, and the rest in `marshal`'s
format. One that is damaged, cut short or of other code is not taken (the index is
read). They are written by the builds of this `--out` alone, under its lock, and are
trusted as its builds are; the build keeps those its tags name and removes the rest
(`prune`).
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from cachegql.index.ingest.dag_nodes import Database, Edge, Node
from cachegql.index.ingest.locations import Location, Opener
from cachegql.index.ingest.seen_nodes import SeenNodes
from cachegql.index.ingest.spackdb import PartEntry
from cachegql.index.records import Problem
from cachegql.index.spack.compilers import Compiler
from cachegql.index.spack.variants import Variant

__all__ = ["CacheParts", "decode_part", "encode_part"]

_MAGIC = b"cachegql part 1\n"
_CHECK = 16  # bytes of the blake2b after the header
_SUFFIX = ".part"


def encode_part(version: int | None, entries: Iterable[PartEntry], problems: list[str]) -> bytes:
    """The bytes of a part: an index's database version, its nodes as read, in order
    (PartEntry), and the messages of the records it left out."""
    edges_of: dict[int, tuple[Any, ...]] = {}  # by the id of a node's tuple of edges
    edge_of: dict[int, tuple[Any, ...]] = {}  # by the id of one edge
    variants_of: dict[int, tuple[Any, ...]] = {}
    rows: list[tuple[Any, ...]] = []
    for digest, key, node, taken in entries:
        if taken:
            rows.append((digest, key, node.in_buildcache, None))
            continue
        # Nodes of one index share their edge objects (node_reader.py); written once
        # each, `marshal` refers to them again, and reading shares them alike.
        edges = edges_of.get(id(node.edges))
        if edges is None:
            edges = edges_of[id(node.edges)] = tuple([_edge(edge, edge_of) for edge in node.edges])
        variants = variants_of.get(id(node.variants))
        if variants is None:
            variants = variants_of[id(node.variants)] = tuple(
                [(v.name, v.value, v.raw) for v in node.variants]
            )
        compiler = node.compiler
        fields = (*node[:7], variants, node.flags, edges)
        made = None if compiler is None else (compiler.name, compiler.version, compiler.raw)
        rows.append((digest, key, None, (*fields, made, node.in_buildcache)))
    body = marshal.dumps((version, rows, problems), 4)
    return _MAGIC + hashlib.blake2b(body, digest_size=_CHECK).digest() + body


def _edge(edge: Edge, made: dict[int, tuple[Any, ...]]) -> tuple[Any, ...]:
    found = made.get(id(edge))
    if found is None:
        found = made[id(edge)] = (edge.name, edge.hash, edge.deptypes, edge.virtuals)
    return found


def decode_part(data: bytes, source: str, seen: SeenNodes | None) -> Database | None:
    """The database a part holds, its records asked of `seen` as reading them would
    have; None for bytes that are no sound part, or a record `seen` does not give."""
    body = memoryview(data)[len(_MAGIC) + _CHECK :]
    check = hashlib.blake2b(body, digest_size=_CHECK).digest()
    if not data.startswith(_MAGIC) or data[len(_MAGIC) : len(_MAGIC) + _CHECK] != check:
        return None
    try:
        version, rows, problems = marshal.loads(body)
        return _database(version, rows, problems, source, seen)
    except (EOFError, ValueError, TypeError, IndexError):
        return None


def _database(
    version: int | None,
    rows: list[tuple[Any, ...]],
    problems: list[str],
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
    mine = SeenNodes()
    made = _Made()
    nodes = result.nodes
    taken_before = seen.taken if seen is not None else 0
    for digest, key, flag, fields in rows:
        wanted = flag if fields is None else fields[11]
        node = None
        if seen is not None and key:
            asked = seen if digest in seen else mine
            node = asked.take_keyed(digest, key, wanted)
        if node is None:
            if fields is None:  # given by an earlier cache when this one was read
                if seen is not None:
                    seen.taken = taken_before
                return None
            node = made.node(fields)
            if seen is not None and key and digest not in seen:
                mine.keep(key, node)
        nodes[digest] = node
    if seen is not None:
        seen.absorb(mine)
    result.problems.extend(Problem(source, message) for message in problems)
    return result


class _Made:
    """The objects of one part's nodes, each made once: nodes of one index share their
    edges, variants and compilers (node_reader.py), and `marshal` gives a shared value
    back as one object, so they are shared again by the id of what it gave."""

    def __init__(self) -> None:
        self.edges: dict[int, tuple[Edge, ...]] = {}
        self.edge: dict[int, Edge] = {}
        self.variants: dict[int, tuple[Variant, ...]] = {}
        self.compilers: dict[tuple[Any, ...], Compiler] = {}

    def node(self, fields: tuple[Any, ...]) -> Node:
        (hash_, name, version, os_, platform, target, namespace, variants, flags, edges) = fields[
            :10
        ]
        made_edges = self.edges.get(id(edges))
        if made_edges is None:
            made_edges = self.edges[id(edges)] = tuple([self._edge(e) for e in edges])
        made_variants = self.variants.get(id(variants))
        if made_variants is None:
            made_variants = self.variants[id(variants)] = tuple([Variant(*v) for v in variants])
        compiler = fields[10]
        if compiler is not None and compiler not in self.compilers:
            self.compilers[compiler] = Compiler(*compiler)
        return Node(
            hash_,
            name,
            version,
            os_,
            platform,
            target,
            namespace,
            made_variants,
            flags,
            made_edges,
            None if compiler is None else self.compilers[compiler],
            fields[11],
        )

    def _edge(self, edge: tuple[Any, ...]) -> Edge:
        found = self.edge.get(id(edge))
        if found is None:
            found = self.edge[id(edge)] = Edge(*edge)
        return found


class CacheParts:
    """The parts of one build's tag: those it takes (`load`), and those it writes of the
    indexes it reads (`keep`).

    `folder` holds the parts; `code` names what decides what reading an index gives (a
    part of other code is never taken); `known` gives the sha256 of the body at a
    location where it is known before that location is read by the ingest: a local file
    whose status is the one an earlier build recorded (digest_memo.py), and any body the
    build read to find the tag's fingerprint (a file whose status moved, a remote index
    downloaded or revalidated). A part is taken for those locations only.
    """

    def __init__(self, folder: Path, code: str, known: Mapping[str, str]) -> None:
        self.folder, self.code, self.known = folder, code, known
        self.names: set[str] = set()  # the parts this tag took or wrote
        self.taken: list[str] = []  # the locations taken from parts (tests, benchmarks)

    def name(self, sha256: str) -> str:
        """The file name of the part of an index whose bytes have this sha256."""
        return f"{self.code[:16]}-{sha256}{_SUFFIX}"

    def load(
        self, location: Location, source: str, seen: SeenNodes | None, opener: Opener
    ) -> Database | None:
        """The database of the index at `location` from its part, if there is one that
        gives it; the opener is told its digest, as if it had read it."""
        sha256 = self.known.get(location.text)
        if sha256 is None:
            return None
        name = self.name(sha256)
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

    def keep(self, sha256: str | None, database: Database, entries: Iterable[PartEntry]) -> None:
        """Write the part of an index just read, whose bytes had the sha256 `sha256` (None:
        not known, not kept). One there already is replaced: it was not taken (damaged,
        or given by caches read in another order), or it is the same. One that cannot be
        written (a full disk, a folder not ours to write) is left out: a part only saves
        time."""
        if sha256 is None:
            return
        name = self.name(sha256)
        messages = [problem.message for problem in database.problems]
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            _write_atomically(self.folder / name, encode_part(database.version, entries, messages))
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
