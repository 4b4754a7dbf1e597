"""A tag's direct edges as typed arrays: what the DAG writer needs once the nodes are gone.

Nodes are numbered by hash as they are first met (`ids`); each recorded node's edges are
a run of the edge arrays (`start`, `count`), each edge its target's number and codes into
the distinct deptype and virtual tuples (`deptype_sets`, `virtual_sets`). At 1M specs
that is 10M edges in some 120 MB, where tuples of edge objects held per node kept every
node's objects alive until the tag was written.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping

from cachegql.index.ingest.dag_nodes import Edge

__all__ = ["EdgeArrays"]


class EdgeArrays:
    """Direct edges by node number; a node without a run (`start` -1) has none recorded
    (known only by an edge, or from a page), unlike a leaf (a run of none)."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.start: array[int] = array("q")
        self.count: array[int] = array("i")
        self.targets: array[int] = array("i")
        self.deptypes: array[int] = array("i")
        self.virtuals: array[int] = array("i")
        self.deptype_sets: list[tuple[str, ...]] = []
        self.virtual_sets: list[tuple[str, ...]] = [()]  # code 0: provides nothing
        self._deptype_codes: dict[tuple[str, ...], int] = {}
        self._virtual_codes: dict[tuple[str, ...], int] = {(): 0}

    @classmethod
    def of(cls, edges: Mapping[str, Iterable[Edge]]) -> EdgeArrays:
        """The edges of each node of `edges` (by hash), in its order."""
        arrays = cls()
        for digest, node_edges in edges.items():
            arrays.add(digest, node_edges)
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
        node = self.id(digest)
        self.start[node] = len(self.targets)
        before = len(self.targets)
        ids, id_of = self.ids, self.id
        deptype_codes, virtual_codes = self._deptype_codes, self._virtual_codes
        targets, deptypes, virtuals = self.targets, self.deptypes, self.virtuals
        for edge in edges:
            target = ids.get(edge.hash)
            targets.append(id_of(edge.hash) if target is None else target)
            code = deptype_codes.get(edge.deptypes)
            if code is None:
                code = deptype_codes[edge.deptypes] = len(self.deptype_sets)
                self.deptype_sets.append(edge.deptypes)
            deptypes.append(code)
            code = virtual_codes.get(edge.virtuals)
            if code is None:
                code = virtual_codes[edge.virtuals] = len(self.virtual_sets)
                self.virtual_sets.append(edge.virtuals)
            virtuals.append(code)
        self.count[node] = len(self.targets) - before
