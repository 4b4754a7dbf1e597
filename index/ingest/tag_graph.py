"""The DAG of one tag, gathered from its build caches and finished into records and edges."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from cachegql.index.ingest.buildcache import CacheData
from cachegql.index.ingest.dag_nodes import Database, Edge
from cachegql.index.ingest.edge_arrays import EdgeArrays
from cachegql.index.ingest.tables import TagTable
from cachegql.index.records import SpecRecord
from cachegql.index.spack.compilers import Compiler

__all__ = ["Finisher", "TagGraph", "finish_after_fill"]

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
    stacks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Each binary's stack labels, sorted: one tuple per set of labels, shared (a set per
    binary was 200 MB at 1M specs)."""
    sizes: dict[str, int] = field(default_factory=dict)
    extras: TagTable | None = None
    edges: EdgeArrays = field(default_factory=EdgeArrays)
    _sorted: list[str] | None = field(default=None, init=False, repr=False, compare=False)
    # Labels joined so far: (labels, label) -> their sorted union, and ((), label) -> (label,).
    _joined: dict[tuple[tuple[str, ...], str], tuple[str, ...]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def _order(self) -> list[str]:
        """Every node's hash, sorted once for `fill` (1 s at 1M)."""
        if self._sorted is None:
            self._sorted = sorted(self.database.nodes)
        return self._sorted

    def add(self, data: CacheData) -> None:
        self.database.merge(data.database)
        stacks, joined = self.stacks, self._joined
        for label, hashes in data.stacks.items():
            alone = joined.setdefault(((), label), (label,))
            for digest in hashes:
                held = stacks.get(digest)
                if held is None:
                    stacks[digest] = alone
                elif label not in held:
                    key = (held, label)
                    both = joined.get(key)
                    if both is None:
                        both = joined[key] = _shared(joined, (*held, label))
                    stacks[digest] = both
        self.sizes.update(data.sizes)
        self._sorted = None

    def fill(self, table: TagTable, page_id: int) -> Iterator[tuple[SpecRecord, int]]:
        """Add the binaries to `table`, by hash; yield the record of each one whose hash
        it already held, with that row (every binary is a node: a view's binaries that
        its index lacks are left out as it is read).

        Binaries alike but for their hash, stacks and size (one package's build in many
        stacks, against other dependencies: 200k specs have 25k such shapes) are added
        as the first of them was (`TagTable.add_like`), without a record each; the table
        is settled at the end (`TagTable.settle`).
        """
        database, labels, sizes = self.database, self.stacks, self.sizes
        compiler_of, nodes, tag = database.compiler_of, database.nodes, self.tag
        # A shape names its variants and flags by object: one source's nodes share equal
        # ones, and every node stays alive while this runs, so no id is reused.
        rows: dict[tuple[object, ...], int] = {}
        added = 0
        for digest in self._order():
            if digest not in labels:
                continue
            node = nodes[digest]
            compiler = compiler_of(node)
            stacks = labels[digest]
            size = sizes.get(digest)
            added += 1
            shape = (
                node.name,
                node.version,
                node.os,
                node.platform,
                node.target,
                node.namespace,
                compiler.raw,
                compiler.name,
                compiler.version,
                id(node.variants),
                id(node.flags),
            )
            like = rows.get(shape)
            if like is not None:
                earlier = table.add_like(like, digest, stacks, size, page_id)
                if earlier is not None:
                    yield node.record(tag, compiler, stacks, size), earlier
                continue
            record = node.record(tag, compiler, stacks, size)
            earlier = table.add(record, page_id)
            if earlier is not None:
                yield record, earlier
            else:
                rows[shape] = len(table) - 1
        table.settle()
        if added != len(labels):  # a reader's bug, not a source's: say so, drop nothing
            missing = sorted(set(labels) - nodes.keys())
            raise RuntimeError(f"binaries of tag {tag} that are no node: {missing[:5]}")

    def finish(self, *, drop: bool = True) -> list[Edge]:
        """Fill `extras` and `edges`, drop the nodes (unless not `drop`: a process about
        to end, index/disk/graph_writer.py, is spared freeing each); return the edges to
        hashes no source knows."""
        database, stacks = self.database, self.stacks
        self._sorted = None  # `fill`'s: the walk below is in the order read
        self.extras = TagTable(self.tag)
        self.edges = EdgeArrays()
        # In the order read, not by hash: the nodes and their edges are then near each
        # other in memory (edge_arrays.py); the arrays do not depend on it.
        others = []
        for digest, node in database.nodes.items():
            self.edges.add(digest, node.edges)
            if digest not in stacks:
                others.append(digest)
        for digest in sorted(others):
            node = database.nodes[digest]
            self.extras.add(node.record(self.tag, database.compiler_of(node), (), None), -1)
        dangling = self.edges.dangling(known=database.nodes)
        self.edges.seal()
        for _, edge in sorted(dangling.items()):
            self.extras.add(_unknown_node(self.tag, edge), -1)
        if drop:
            self.database = Database(database.source, database.version)
            self.stacks, self.sizes, self._sorted, self._joined = {}, {}, None, {}
        return list(dangling.values())


Finisher = Callable[[TagGraph], Callable[[], list[Edge]]]
"""How a tag's graph is finished: given the graph before its binaries fill the tag's
table, it returns what gives the dangling edges once they have (`TagGraph.finish`)."""


def finish_after_fill(graph: TagGraph) -> Callable[[], list[Edge]]:
    """The graph finished in this process, once its binaries are in the table."""
    return graph.finish


def _shared(
    joined: dict[tuple[tuple[str, ...], str], tuple[str, ...]], labels: tuple[str, ...]
) -> tuple[str, ...]:
    """`labels` sorted, as the one tuple of them that `joined` holds: stored under the
    key (all labels but the last, the last), so that every way to the same set of labels
    finds the same tuple."""
    ordered = tuple(sorted(labels))
    return joined.setdefault((ordered[:-1], ordered[-1]), ordered)


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
