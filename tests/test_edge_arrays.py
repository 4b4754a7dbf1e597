"""`EdgeArrays`: nodes numbered as first met, edges as kinds of shared edge objects, and
nothing written that depends on the order the nodes were added in."""

from __future__ import annotations

import copy
import pickle
import random
from pathlib import Path

import numpy as np
import pytest

from cachegql.index.disk.dagwrite import write_dag
from cachegql.index.ingest.dag_nodes import Edge
from cachegql.index.ingest.edge_arrays import EdgeArrays


def _edge(
    name: str, deptypes: tuple[str, ...] = ("build", "link"), virtuals: tuple[str, ...] = ()
) -> Edge:
    return Edge(name, name * 4, deptypes, virtuals)


def _rows(arrays: EdgeArrays, digest: str) -> list[tuple[int, tuple[str, ...], tuple[str, ...]]]:
    """The edges recorded for `digest`: target number, deptypes, virtuals."""
    node = arrays.ids[digest]
    start, count = arrays.start[node], arrays.count[node]
    kinds = np.frombuffer(arrays.kinds, dtype=np.int32)[start : start + count]
    return [
        (
            arrays.kind_targets[k],
            arrays.deptype_sets[arrays.kind_deptypes[k]],
            arrays.virtual_sets[arrays.kind_virtuals[k]],
        )
        for k in kinds
    ]


def test_shared_and_equal_edge_objects_record_the_same_edges() -> None:
    zlib, mpi = _edge("z"), _edge("m", ("link",), ("mpi",))
    twin = _edge("z")  # equal to `zlib`, another object: a kind of its own, the same edge
    arrays = EdgeArrays()
    arrays.add("a", (zlib, mpi))
    arrays.add("b", (mpi, twin, zlib))
    arrays.add("zzzz", ())
    assert list(arrays.ids) == ["a", "zzzz", "mmmm", "b"]  # numbered as first met
    assert _rows(arrays, "a") == [(1, ("build", "link"), ()), (2, ("link",), ("mpi",))]
    assert _rows(arrays, "b") == [
        (2, ("link",), ("mpi",)),
        (1, ("build", "link"), ()),
        (1, ("build", "link"), ()),
    ]
    assert _rows(arrays, "zzzz") == []
    assert list(arrays.start) == [0, 5, -1, 2]  # "mmmm" is known only by an edge
    assert len(arrays.kind_targets) == 3  # zlib, mpi, twin


def test_dangling_edges_are_the_first_a_walk_in_hash_order_meets() -> None:
    first, later = _edge("x", ("build",)), _edge("x", ("run",))
    arrays = EdgeArrays()
    arrays.add("b", (later, _edge("w")))  # added first, met second
    arrays.add("ab", ())  # a leaf: a run of none, starting where the next run starts
    arrays.add("a", (_edge("y"), first, _edge("x", ("link",))))
    dangling = arrays.dangling(known={"a", "ab", "b", "yyyy"})
    assert list(dangling) == ["xxxx", "wwww"]
    assert dangling["xxxx"] is first


def _dangling_by_walk(
    edges: dict[str, tuple[Edge, ...]], known: set[str]
) -> list[tuple[str, Edge]]:
    """What `dangling` must give: each unknown node's first edge, walking by hash."""
    found: dict[str, Edge] = {}
    for digest in sorted(edges):
        for edge in edges[digest]:
            if edge.hash not in known:
                found.setdefault(edge.hash, edge)
    return list(found.items())


def _random_graph(rng: random.Random) -> dict[str, tuple[Edge, ...]]:
    """Nodes whose edges share objects, some to nodes with no run (unknown), of a few
    names each (the edge met first names an unknown node); acyclic, as edges point to
    greater hashes."""
    hashes = [f"{n:04d}" for n in rng.sample(range(10_000), 40)]
    shared = [
        Edge(
            rng.choice("pqr"),
            rng.choice(hashes),
            rng.choice((("build",), ("link", "run"))),
            rng.choice(((), ("mpi",), ("c", "cxx"), ("blas", "lapack"))),
        )
        for _ in range(60)
    ]
    recorded = rng.sample(hashes, 25)
    return {
        h: tuple(e for e in rng.choices(shared, k=rng.randrange(0, 9)) if e.hash > h)
        for h in recorded
    }


def test_dangling_and_the_dag_written_do_not_depend_on_the_order_nodes_were_added(
    tmp_path: Path,
) -> None:
    rng = random.Random(7)
    for case in range(60):
        edges = _random_graph(rng)
        orders = [list(edges), sorted(edges), rng.sample(list(edges), len(edges))]
        spec_hashes = sorted({e.hash for run in edges.values() for e in run} | edges.keys())
        names = [f"name{h[0]}" for h in spec_hashes]
        written = []
        for number, order in enumerate(orders):
            arrays = EdgeArrays()
            for digest in order:
                arrays.add(digest, edges[digest])
            dangling = arrays.dangling(known=edges.keys())
            assert list(dangling.items()) == _dangling_by_walk(edges, set(edges)), case
            arrays.seal()
            folder = tmp_path / f"{case}-{number}"
            folder.mkdir()
            write_dag(folder, arrays, spec_hashes, [], names)
            written.append({p.name: p.read_bytes() for p in sorted(folder.rglob("*.*"))})
        assert written[0] == written[1] == written[2], case


def test_an_edge_numbered_by_other_arrays_is_given_a_kind_of_these() -> None:
    zlib, mpi = _edge("z"), _edge("m", ("link",), ("mpi",))
    earlier = EdgeArrays()
    earlier.add("a", (zlib, mpi))
    earlier.seal()
    arrays = EdgeArrays()
    arrays.add("b", (_edge("q"), mpi, zlib))  # the objects carry `earlier`'s kinds 1 and 0
    arrays.add("c", (zlib,))
    assert _rows(arrays, "b") == [
        (1, ("build", "link"), ()),
        (2, ("link",), ("mpi",)),
        (3, ("build", "link"), ()),
    ]
    assert _rows(arrays, "c") == [(3, ("build", "link"), ())]
    assert len(arrays.kind_targets) == 3


def test_a_node_s_edges_are_recorded_once() -> None:
    arrays = EdgeArrays()
    arrays.add("a", (_edge("z"),))
    arrays.add("zzzz", ())
    with pytest.raises(ValueError, match="edges of a are already recorded"):
        arrays.add("a", (_edge("y"),))
    with pytest.raises(ValueError, match="edges of zzzz are already recorded"):
        arrays.add("zzzz", ())


def test_an_edge_is_a_value_to_copy_and_pickle_numbered_or_not() -> None:
    zlib = _edge("z", ("build",), ("c",))
    fresh = [pickle.loads(pickle.dumps(zlib)), copy.copy(zlib)]
    EdgeArrays.of({"a": [zlib]})
    numbered = pickle.loads(pickle.dumps(zlib))
    assert [*fresh, numbered] == [zlib] * 3
    assert numbered.languages == ("c",)
    arrays = EdgeArrays()  # a stamp that crossed a pickle is another arrays' token
    arrays.add("b", (_edge("q"), numbered))
    assert _rows(arrays, "b")[1] == (2, ("build",), ("c",))


def test_nothing_is_added_or_asked_for_after_seal() -> None:
    arrays = EdgeArrays.of({"a": [_edge("z")]})
    assert list(arrays.kind_targets) == [1]
    with pytest.raises(RuntimeError, match="after seal"):
        arrays.add("b", [_edge("z")])
    with pytest.raises(RuntimeError, match="after seal"):
        arrays.dangling(known=set())
