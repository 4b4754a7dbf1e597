"""`TagGraph.fill`: binaries alike but for hash, stacks and size share their codes, and
the table holds what one record per binary would have given."""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Any

from cachegql.index.ingest.buildcache import CacheData
from cachegql.index.ingest.dag_nodes import Database, Edge, Node
from cachegql.index.ingest.tables import TagTable
from cachegql.index.ingest.tag_graph import TagGraph
from cachegql.index.records import SpecRecord
from cachegql.index.spack.compilers import Compiler
from cachegql.index.spack.variants import parse_variant

SHARED = (parse_variant("+shared"),)
STATIC = (parse_variant("~shared"),)
FLAGS = (("cflags", ("-O2",)),)
PAGE = 5
# What the nodes below vary, besides the hash: a field added to `SpecRecord` must be
# added here (and to the shape of `TagGraph.fill`).
VARIED = {"package", "versions", "compiler", "os", "platform", "target", "variants", "flags"}
VARIED |= {"namespace", "stacks", "size", "hash", "tag", "tarball"}


def test_every_field_of_a_record_is_varied_below() -> None:
    assert set(SpecRecord._fields) == VARIED


def _node(digest: str, name: str = "zlib", **changes: Any) -> Node:
    node = Node(
        hash=(digest * 32)[:32],
        name=name,
        version="1.3",
        os="ubuntu22.04",
        platform="linux",
        target="x86_64",
        namespace="builtin",
        variants=SHARED,
        flags=(),
        edges=(),
        compiler=Compiler("gcc", "12", "gcc@12"),
        in_buildcache=True,
    )
    return node._replace(**changes)


def _graph(nodes: list[Node], stacks: dict[str, set[str]], sizes: dict[str, int]) -> TagGraph:
    """A tag of one cache: `stacks` gives each binary's stack labels."""
    database = Database("cache", 8, {node.hash: node for node in nodes})
    by_label: dict[str, AbstractSet[str]] = {}
    for digest, labels in stacks.items():
        for label in labels:
            by_label[label] = {*by_label.get(label, ()), digest}
    graph = TagGraph("develop")
    graph.add(CacheData("cache", database, by_label, sizes))
    return graph


def _one_by_one(graph: TagGraph) -> TagTable:
    """The table as a record per binary makes it."""
    table = TagTable("develop")
    database = graph.database
    for digest in sorted(graph.stacks):
        node = database.nodes[digest]
        stacks = tuple(sorted(graph.stacks[digest]))
        size = graph.sizes.get(digest)
        table.add(node.record("develop", database.compiler_of(node), stacks, size), PAGE)
    return table


def _rows(table: TagTable) -> list[SpecRecord]:
    return [table.record(row) for row in range(len(table))]


def _columns(table: TagTable) -> dict[str, object]:
    columns = {**table.fields, **table.parts}
    return {
        **{name: (list(c.values), list(c.codes)) for name, c in columns.items()},
        "source_page": list(table.source_page),
        "rows_by_hash": table.rows_by_hash,
        "sizes": list(table.sizes),
        "tarballs": table.tarballs,
    }


def test_alike_binaries_are_added_as_one_record_per_binary_adds_them() -> None:
    nodes = [
        _node("a"),
        _node("b"),  # alike "a": other stacks, size
        _node("c", variants=STATIC),
        _node("d", variants=(parse_variant("+shared"),)),  # equal, another object: a shape
        _node("e", flags=FLAGS),
        _node("f", compiler=Compiler("gcc", "13", "gcc@13")),
        _node("fa", compiler=Compiler("gcc", "12", "c=gcc@12")),  # as "a" but for its raw
        _node("g", name="cmake"),
        _node("h", version="1.2"),
        _node("i", target="aarch64"),
        _node("j", namespace="site"),
        _node("k", os="rocky9"),
        _node("l", platform="darwin"),
        _node("m"),  # alike "a" again, without a size
        _node("n", in_buildcache=False),  # a node, not a binary of any stack
    ]
    stacks = {node.hash: {"root"} for node in nodes[:-1]}
    stacks["b" * 32] = {"hep", "e4s"}
    sizes = {node.hash: ord(node.hash[0]) for node in nodes[:-2]}
    graph = _graph(nodes, stacks, sizes)
    table = TagTable("develop")
    assert list(graph.fill(table, PAGE)) == []
    expected = _one_by_one(graph)
    assert _rows(table) == _rows(expected)
    assert _columns(table) == _columns(expected)
    assert table.hashes == sorted(stacks)
    assert table.record(1).stacks == ("e4s", "hep") and table.record(1).size == ord("b")
    assert table.record(13).size is None


def test_a_hash_the_table_already_held_is_yielded_with_its_row() -> None:
    """A tag's pages and caches may both list a binary: the caller reports it."""
    nodes = [_node("a"), _node("b")]
    graph = _graph(nodes, {"a" * 32: {"root"}, "b" * 32: {"root"}}, {})
    table = TagTable("develop")
    from_page = nodes[1].record("develop", nodes[1].compiler or Compiler("", None, ""), (), 7)
    table.add(from_page, 3)
    (duplicate,) = graph.fill(table, 0)
    record, earlier = duplicate
    assert earlier == 0 and record.hash == "b" * 32 and record.stacks == ("root",)
    assert table.hashes == ["b" * 32, "a" * 32]  # "b" kept as the page gave it
    assert table.record(0) == from_page


def test_an_edge_providing_a_language_names_the_compiler_of_alike_binaries() -> None:
    """Binaries with no recorded compiler get it from their edges; alike ones share it."""
    gcc = _node("g", name="gcc", version="12.3", in_buildcache=False, compiler=None)
    edge = Edge("gcc", gcc.hash, ("build",), ("c", "cxx"))
    first = _node("a", compiler=None, edges=(edge,))
    second = _node("b", compiler=None, edges=(edge,))
    graph = _graph([gcc, first, second], {first.hash: {"root"}, second.hash: {"root"}}, {})
    table = TagTable("develop")
    list(graph.fill(table, 0))
    assert [table.record(row).compiler.raw for row in range(2)] == ["c,cxx=gcc@12.3"] * 2


def test_rows_added_alike_read_as_their_records_before_and_after_settle() -> None:
    """Until `settle`, a row added alike keeps no codes of its own: `record` reads them
    from the row it is like, and `settle` gives the columns one code per row."""
    nodes = [_node("a"), _node("b", version="1.2"), _node("c"), _node("d", version="1.2")]
    records = [
        n.record("develop", n.compiler or Compiler("", None, ""), ("root",), 1) for n in nodes
    ]
    table = TagTable("develop")
    assert table.add(records[0], PAGE) is None
    assert table.add(records[1], PAGE) is None
    assert table.add_like(0, records[2].hash, ("e4s",), 7, PAGE) is None
    assert table.add_like(2, records[3].hash, ("hep",), None, PAGE) is None  # like a like
    assert table.add(records[3]._replace(hash="e" * 32), PAGE) is None  # after the alike
    assert table.add_like(1, "b" * 32, ("x",), 1, PAGE) == 1  # a hash held: its row
    expected = [
        records[0],
        records[1],
        records[0]._replace(hash=records[2].hash, stacks=("e4s",), size=7),
        records[0]._replace(hash=records[3].hash, stacks=("hep",), size=None),
        records[3]._replace(hash="e" * 32),
    ]
    assert _rows(table) == expected
    table.settle()
    assert _rows(table) == expected
    one_by_one = TagTable("develop")
    for record in expected:
        one_by_one.add(record, PAGE)
    assert _columns(table) == _columns(one_by_one)
    table.settle()  # again: nothing left to do
    assert _columns(table) == _columns(one_by_one)


def test_stack_labels_from_several_caches_are_sorted_and_shared() -> None:
    a, b, c = ("a" * 32, "b" * 32, "c" * 32)
    graph = TagGraph("develop")
    nodes = {d: _node(d[0]) for d in (a, b, c)}
    graph.add(CacheData("one", Database("one", 8, dict(nodes)), {"hep": {a, b}, "e4s": {c}}))
    graph.add(CacheData("two", Database("two", 8, dict(nodes)), {"e4s": {a, b}, "root": {a}}))
    assert graph.stacks == {a: ("e4s", "hep", "root"), b: ("e4s", "hep"), c: ("e4s",)}
    graph.add(CacheData("three", Database("three", 8, dict(nodes)), {"root": {b}, "hep": {c}}))
    assert graph.stacks == {a: ("e4s", "hep", "root"), b: ("e4s", "hep", "root"), c: ("e4s", "hep")}
    assert graph.stacks[a] is graph.stacks[b]  # one tuple per set of labels
    held = graph.stacks[c]
    graph.add(CacheData("four", Database("four", 8, dict(nodes)), {"hep": {c}, "e4s": {c}}))
    assert graph.stacks[c] is held  # labels it had already: the same tuple, no repeats


def test_a_compiler_follows_its_node_when_a_later_cache_replaces_it() -> None:
    """Compilers are worked out once per set of edges: a merge that replaces the
    compiler's node (a binary over a mere node) names its version from then on."""
    gcc = _node("g", name="gcc", version="12.3", in_buildcache=False, compiler=None)
    c_edge = Edge("gcc", gcc.hash, ("build",), ("c",))
    fortran = Edge("gfortran", ("f" * 32), ("build", "link"), ("fortran",))
    run_only = Edge("gcc", gcc.hash, ("run",), ("cxx",))  # not the build's: no compiler
    mpi = Edge("openmpi", ("o" * 32), ("build", "link"), ("mpi",))
    node = _node("a", compiler=None, edges=(fortran, mpi, c_edge, run_only))
    alike = _node("b", compiler=None, edges=(fortran, mpi, c_edge))
    database = Database("one", 8, {n.hash: n for n in (gcc, node, alike)})
    assert database.compiler_of(node).raw == "c=gcc@12.3 fortran=gfortran"
    assert database.compiler_of(alike) is database.compiler_of(node)
    newer = gcc._replace(version="13.1", in_buildcache=True)
    database.merge(Database("two", 8, {gcc.hash: newer}))
    assert database.compiler_of(node).raw == "c=gcc@13.1 fortran=gfortran"
    assert database.compiler_of(node).version == "13.1"
    none = _node("n", compiler=None, edges=(run_only, mpi))
    assert database.compiler_of(none).raw == "none"
    recorded = _node("r", compiler=Compiler("none", None, "none"), edges=(run_only,))
    assert database.compiler_of(recorded).raw == "none"


def test_equal_compiler_names_of_other_nodes_name_their_own_versions() -> None:
    """The compilers are worked out once per set of edge objects, not per name: two
    `gcc` edges to gcc nodes of other versions name other compilers."""
    old = _node("g", name="gcc", version="12.3", in_buildcache=False, compiler=None)
    new = _node("h", name="gcc", version="14.1", in_buildcache=False, compiler=None)
    first = _node("a", compiler=None, edges=(Edge("gcc", old.hash, ("build",), ("c",)),))
    second = _node("b", compiler=None, edges=(Edge("gcc", new.hash, ("build",), ("c",)),))
    database = Database("one", 8, {n.hash: n for n in (old, new, first, second)})
    assert database.compiler_of(first).raw == "c=gcc@12.3"
    assert database.compiler_of(second).raw == "c=gcc@14.1"
