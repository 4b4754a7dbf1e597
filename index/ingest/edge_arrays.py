"""A tag's direct edges as typed arrays: what the DAG writer needs once the nodes are gone.

Nodes are numbered by hash as they are first met (`ids`); each recorded node's edges are
a run of `kinds` (`start`, `count`). An edge's kind is a distinct edge object as the
sources share them (a source's nodes share their equal edges, see node_reader.py): 10M
edges at 1M specs are some 600k kinds, each a target's number and codes into the
distinct deptype and virtual tuples (`kind_targets`, `kind_deptypes`, `kind_virtuals`,
`deptype_sets`, `virtual_sets`). An edge is then one number (40 MB at 1M), where three
lookups per edge took a third of the tag's finishing and 120 MB. An edge object carries
its kind (`Edge.number`, stamped with these arrays' token), so that finding it reads the
object the node already points to: by a dict keyed by `id(edge)`, the 10M lookups of 1M
specs took 10 s, missing the processor's caches three times each.
"""

from __future__ import annotations

from array import array
from collections.abc import Container, Iterable, Mapping

import numpy as np

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
        # Each kind's edge object, by kind; `seal` lets them go, and ends the adding. An
        # object's kind is on it, stamped with `_token`: stamps of other arrays are stale.
        self._kept: list[Edge] = []
        self._token = object()
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
        """Record the direct edges of `digest` (once per node, in any order of nodes:
        nodes added in the order they were read are near each other in memory)."""
        self._check_open()
        node = self.id(digest)
        kinds, kind, token = self.kinds, self._kind, self._token
        before = self.start[node] = len(kinds)
        for edge in edges:
            kinds.append(edge.kind if edge.numbered_by is token else kind(edge))
        self.count[node] = len(kinds) - before

    def dangling(self, known: Container[str]) -> dict[str, Edge]:
        """An edge to each node not `known`, by its hash: of the edges to that node, the
        first of the node with the least hash (as a walk of the nodes in hash order meets
        them), in the order that walk meets them."""
        self._check_open()
        lost = [kind for kind, edge in enumerate(self._kept) if edge.hash not in known]
        if not lost:
            return {}
        kinds = np.frombuffer(self.kinds, dtype=np.int32)
        places = np.flatnonzero(np.isin(kinds, lost))
        # Each place's node: the one whose run starts last at or before it.
        start = np.frombuffer(self.start, dtype=np.int64)
        runs = np.flatnonzero(np.frombuffer(self.count, dtype=np.int32) > 0)
        runs = runs[np.argsort(start[runs], kind="stable")]
        owners = runs[np.searchsorted(start[runs], places, side="right") - 1]
        hashes = list(self.ids)
        met = sorted(
            (hashes[owner], place - int(start[owner]), kind)
            for owner, place, kind in zip(
                owners.tolist(), places.tolist(), kinds[places].tolist(), strict=True
            )
        )
        found: dict[str, Edge] = {}
        for _, _, kind in met:
            edge = self._kept[kind]
            found.setdefault(edge.hash, edge)
        return found

    def seal(self) -> None:
        """No more edges: let go of the edge objects (the arrays hold all they said)."""
        self._kept, self._sealed = [], True

    def _check_open(self) -> None:
        if self._sealed:
            raise RuntimeError("edges added or asked for after seal(): the edge objects are gone")

    def _kind(self, edge: Edge) -> int:
        """A new kind for `edge` (its target numbered if first met)."""
        kind = len(self.kind_targets)
        edge.number(kind, self._token)
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
