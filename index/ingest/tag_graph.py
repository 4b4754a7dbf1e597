"""The DAG of one tag, gathered from its build caches and finished into records and edges."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from cachegql.index.ingest.buildcache import CacheData
from cachegql.index.ingest.dag_nodes import Database, Edge
from cachegql.index.ingest.edge_arrays import EdgeArrays
from cachegql.index.ingest.tables import TagTable
from cachegql.index.records import SpecRecord
from cachegql.index.spack.compilers import Compiler

__all__ = ["TagGraph"]

_UNKNOWN_COMPILER = Compiler(name="", version=None, raw="")


@dataclass
class TagGraph:
    """The DAG of one tag from its build caches: every node, the binaries' stacks, sizes.

    `finish` turns it into the nodes that are not binaries of the tag (`extras`: nodes
    outside the cache, and dependencies the index lacks, known only by name and hash)
    and the direct edges of every node (`edges`), and drops the nodes: what is left
    is columns and arrays.
    """

    tag: str
    database: Database = field(default_factory=lambda: Database(source="", version=None))
    stacks: dict[str, set[str]] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    extras: TagTable | None = None
    edges: EdgeArrays = field(default_factory=EdgeArrays)
    _sorted: list[str] | None = field(default=None, init=False, repr=False, compare=False)

    def _order(self) -> list[str]:
        """Every node's hash, sorted once for `binaries` and `finish` (1 s at 1M)."""
        if self._sorted is None:
            self._sorted = sorted(self.database.nodes)
        return self._sorted

    def add(self, data: CacheData) -> None:
        self.database.merge(data.database)
        for label, hashes in data.stacks.items():
            for digest in hashes:
                self.stacks.setdefault(digest, set()).add(label)
        self.sizes.update(data.sizes)
        self._sorted = None

    def binaries(self) -> Iterable[SpecRecord]:
        """The binaries' records, by hash (every binary is a node: a view's binaries
        that its index lacks are left out as it is read)."""
        database, labels = self.database, self.stacks
        yielded = 0
        for digest in self._order():
            if digest not in labels:
                continue
            node = database.nodes[digest]
            stacks = tuple(sorted(labels[digest]))
            size = self.sizes.get(digest)
            yielded += 1
            yield node.record(self.tag, database.compiler_of(node), stacks, size)
        if yielded != len(labels):  # a reader's bug, not a source's: say so, drop nothing
            missing = sorted(set(labels) - database.nodes.keys())
            raise RuntimeError(f"binaries of tag {self.tag} that are no node: {missing[:5]}")

    def finish(self) -> list[Edge]:
        """Fill `extras` and `edges`, drop the nodes; return the edges to hashes no
        source knows."""
        database = self.database
        self.extras = TagTable(self.tag)
        self.edges = EdgeArrays()
        for digest in self._order():
            node = database.nodes[digest]
            self.edges.add(digest, node.edges)
            if digest not in self.stacks:
                self.extras.add(node.record(self.tag, database.compiler_of(node), (), None), -1)
        dangling = self.edges.dangling(known=database.nodes)
        self.edges.seal()
        for _, edge in sorted(dangling.items()):
            self.extras.add(_unknown_node(self.tag, edge), -1)
        self.database = Database(database.source, database.version)
        self.stacks, self.sizes, self._sorted = {}, {}, None
        return list(dangling.values())


def _unknown_node(tag: str, edge: Edge) -> SpecRecord:
    """A node no source records: only its name and hash are known."""
    return SpecRecord(
        hash=edge.hash,
        package=edge.name,
        tag=tag,
        versions=("",),
        compiler=_UNKNOWN_COMPILER,
        os="",
        platform="",
        target="",
        variants=(),
        stacks=(),
        size=None,
        tarball=None,
    )
