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
from collections.abc import Callable, Iterable, Mapping
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
    result = Database(source=source, version=version)
    edges_of: dict[int, tuple[Edge, ...]] = {}
    edge_of: dict[int, Edge] = {}
    variants_of: dict[int, tuple[Variant, ...]] = {}
    compilers: dict[tuple[Any, ...], Compiler] = {}
    nodes = result.nodes
    for digest, key, flag, fields in rows:
        if fields is None:  # given by an earlier cache of the tag when this one was read
            node = seen.take_keyed(digest, key, flag) if seen is not None else None
            if node is None:
                return None
            nodes[digest] = node
            continue
        found = seen.take_keyed(digest, key, fields[11]) if seen is not None and key else None
        if found is not None:  # read alike from an earlier cache this time
            nodes[digest] = found
            continue
        (hash_, name, version_, os_, platform, target, namespace, variants, flags, edges) = fields[
            :10
        ]
        made_edges = edges_of.get(id(edges))
        if made_edges is None:
            made_edges = edges_of[id(edges)] = tuple([_made_edge(e, edge_of) for e in edges])
        made_variants = variants_of.get(id(variants))
        if made_variants is None:
            made_variants = variants_of[id(variants)] = tuple([Variant(*v) for v in variants])
        compiler = fields[10]
        if compiler is not None and compiler not in compilers:
            compilers[compiler] = Compiler(*compiler)
        node = Node(
            hash_,
            name,
            version_,
            os_,
            platform,
            target,
            namespace,
            made_variants,
            flags,
            made_edges,
            None if compiler is None else compilers[compiler],
            fields[11],
        )
        if seen is not None and key:
            seen.keep(key, node)
        nodes[digest] = node
    result.problems.extend(Problem(source, message) for message in problems)
    return result


def _made_edge(edge: tuple[Any, ...], made: dict[int, Edge]) -> Edge:
    found = made.get(id(edge))
    if found is None:
        found = made[id(edge)] = Edge(*edge)
    return found


class CacheParts:
    """The parts of one build's tag: those it takes (`load`), and those it keeps of the
    indexes it reads (`keep`, written by `save`).

    `folder` holds the parts; `code` names the code that reads indexes (a part of other
    code is never taken); `known` gives the sha256 of a location's bytes where it is known
    before they are read (a local file whose status is the one an earlier build recorded:
    digest_memo.py), the only locations a part is taken for.
    """

    def __init__(self, folder: Path, code: str, known: Mapping[str, str]) -> None:
        self.folder, self.code, self.known = folder, code, known
        self.names: set[str] = set()  # the parts this tag took or kept
        self.taken: list[str] = []  # the locations taken from parts (tests, benchmarks)
        self._kept: list[tuple[Location, int | None, list[PartEntry], list[str]]] = []

    def name(self, sha256: str) -> str:
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

    def keep(self, location: Location, database: Database, entries: list[PartEntry]) -> None:
        """Keep the nodes of the index read at `location`, to `save` once its digest is known."""
        messages = [problem.message for problem in database.problems]
        self._kept.append((location, database.version, entries, messages))

    def save(self, digest_of: Callable[[str], str | None]) -> None:
        """Write the parts kept, each named by the digest `digest_of` gives its location
        (none: not written); a part written already is left as it is, and one that
        cannot be written (a full disk, a folder not ours to write) is left out."""
        kept, self._kept = self._kept, []
        for location, version, entries, messages in kept:
            sha256 = digest_of(location.text)
            if sha256 is None:
                continue
            name = self.name(sha256)
            path = self.folder / name
            try:
                if not path.is_file():
                    self.folder.mkdir(parents=True, exist_ok=True)
                    _write_atomically(path, encode_part(version, entries, messages))
            except OSError:  # a part only saves time: the build goes on without it
                continue
            self.names.add(name)


def prune(folder: Path, keep: set[str]) -> None:
    """Remove the parts in `folder` not named in `keep` (best effort)."""
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if entry.name not in keep:
                with contextlib.suppress(OSError):
                    entry.unlink()


def _write_atomically(path: Path, data: bytes) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        temporary.write_bytes(data)
        temporary.replace(path)
    finally:
        temporary.unlink(missing_ok=True)
