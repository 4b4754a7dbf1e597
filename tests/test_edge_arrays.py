"""`EdgeArrays`: nodes numbered as first met, edges as kinds of shared edge objects."""

from __future__ import annotations

import numpy as np
import pytest

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


def test_dangling_edges_are_the_first_met_to_each_unknown_node() -> None:
    first, later = _edge("x", ("build",)), _edge("x", ("run",))
    arrays = EdgeArrays()
    arrays.add("a", (_edge("y"), first))
    arrays.add("b", (later, _edge("w")))
    dangling = arrays.dangling(known={"a", "b", "yyyy"})
    assert list(dangling) == ["xxxx", "wwww"]
    assert dangling["xxxx"] is first


def test_nothing_is_added_or_asked_for_after_seal() -> None:
    arrays = EdgeArrays.of({"a": [_edge("z")]})
    assert list(arrays.kind_targets) == [1]
    with pytest.raises(RuntimeError, match="after seal"):
        arrays.add("b", [_edge("z")])
    with pytest.raises(RuntimeError, match="after seal"):
        arrays.dangling(known=set())
