"""A tag's direct edges as typed arrays: what the DAG writer needs once the nodes are gone.

Nodes are numbered by hash as they are first met (`ids`); each recorded node's edges are
a run of `kinds` (`start`, `count`). An edge's kind is a distinct edge object as the
sources share them (a source's nodes share their equal edges, see node_reader.py): 10M
edges at 1M specs are some 600k kinds, each a target's number and codes into the
distinct deptype and virtual tuples (`kind_targets`, `kind_deptypes`, `kind_virtuals`,
`deptype_sets`, `virtual_sets`). An edge is then one lookup and one number (40 MB at
1M), where three of each per edge took a third of the tag's finishing and 120 MB.
"""

from __future__ import annotations

from array import array
from collections.abc import Container, Iterable, Mapping

from cachegql.index.ingest.dag_nodes import Edge

__all__ = ["EdgeArrays"]


class EdgeArrays:
    """Direct edges by node number; a node without a run (`start` -1) has none recorded
    (known only by an edge, or from a page), unlike a leaf (a run of none)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.start: array[int] = array("q")
        self.count: array[int] = array("i")
        self.kinds: array[int] = array("i")
        self.kind_targets: array[int] = array("i")
        self.kind_deptypes: array[int] = array("i")
        self.kind_virtuals: array[int] = array("i")
        self.deptype_sets: list[tuple[str, ...]] = []
        self.virtual_sets: list[tuple[str, ...]] = [()]  # code 0: provides nothing
        self._deptype_codes: dict[tuple[str, ...], int] = {}
        self._virtual_codes: dict[tuple[str, ...], int] = {(): 0}
        # Each edge object's kind, by `id`: the objects are kept (`_kept`) so that no id
        # is reused while they are looked up; `seal` lets them go, and ends the adding.
        self._kind_of: dict[int, int] = {}
        self._kept: list[Edge] = []
        self._sealed = False

    @classmethod
    def of(cls, edges: Mapping[str, Iterable[Edge]]) -> EdgeArrays:
        """The edges of each node of `edges` (by hash), in its order."""
        arrays = cls()
        for digest, node_edges in edges.items():
            arrays.add(digest, node_edges)
        arrays.seal()
        return arrays

    def id(self, digest: str) -> int:
        """The number of the node `digest`, given it when first met."""
        found = self.ids.get(digest)
        if found is None:
            found = self.ids[digest] = len(self.ids)
            self.start.append(-1)
            self.count.append(0)
        return found

    def add(self, digest: str, edges: Iterable[Edge]) -> None:
        """Record the direct edges of `digest` (once per node)."""
        self._check_open()
        node = self.id(digest)
        kinds, kind_of, kind = self.kinds, self._kind_of, self._kind
        before = self.start[node] = len(kinds)
        for edge in edges:
            found = kind_of.get(id(edge))
            kinds.append(kind(edge) if found is None else found)
        self.count[node] = len(kinds) - before

    def dangling(self, known: Container[str]) -> dict[str, Edge]:
        """The first edge met to each node not `known`, by its hash, in the order
        met: the first edge to a node is always a new kind, so the kinds tell it."""
        self._check_open()
        found: dict[str, Edge] = {}
        for edge in self._kept:
            if edge.hash not in known:
                found.setdefault(edge.hash, edge)
        return found

    def seal(self) -> None:
        """No more edges: let go of the edge objects (the arrays hold all they said)."""
        self._kind_of, self._kept, self._sealed = {}, [], True

    def _check_open(self) -> None:
        if self._sealed:
            raise RuntimeError("edges added or asked for after seal(): the edge objects are gone")

    def _kind(self, edge: Edge) -> int:
        """A new kind for `edge` (its target numbered if first met)."""
        kind = self._kind_of[id(edge)] = len(self.kind_targets)
        self._kept.append(edge)
        self.kind_targets.append(self.id(edge.hash))
        code = self._deptype_codes.get(edge.deptypes)
        if code is None:
            code = self._deptype_codes[edge.deptypes] = len(self.deptype_sets)
            self.deptype_sets.append(edge.deptypes)
        self.kind_deptypes.append(code)
        code = self._virtual_codes.get(edge.virtuals)
        if code is None:
            code = self._virtual_codes[edge.virtuals] = len(self.virtual_sets)
            self.virtual_sets.append(edge.virtuals)
        self.kind_virtuals.append(code)
        return kind
