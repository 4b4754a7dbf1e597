"""A tag's direct edges as typed arrays: what the DAG writer needs once the nodes are gone.

Nodes are numbered by hash as they are first met (`ids`); each recorded node's edges are
a run of `kinds` (`start`, `count`). An edge's kind is a distinct edge object as the
sources share them (a source's nodes share their equal edges, see node_reader.py): 10M
edges at 1M specs are some 600k kinds, each a target's number and codes into the
distinct deptype and virtual tuples (`kind_targets`, `kind_deptypes`, `kind_virtuals`,
`deptype_sets`, `virtual_sets`). An edge is then one number (40 MB at 1M), where three
lookups per edge took a third of the tag's finishing and 120 MB. An edge object carries
its kind (`Edge.number`, stamped with these arrays' token), read from the object its
node already points to; nodes may come in any order, and the order they were read in
keeps them and their edges near each other in memory. At 1M specs, a dict of kinds keyed
by `id(edge)` and the nodes by hash took 10.3 to 10.8 s; the kinds on the objects, in the
order read, 4.0 s.
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
        """Record the direct edges of `digest`, once per node, nodes in any order."""
        self._check_open()
        node = self.id(digest)
        if self.start[node] >= 0:
            raise ValueError(f"the edges of {digest} are already recorded")
        kinds, kind, token = self.kinds, self._kind, self._token
        before = self.start[node] = len(kinds)
        for edge in edges:
            kinds.append(edge.kind if edge.numbered_by is token else kind(edge))
        self.count[node] = len(kinds) - before

    def dangling(self, known: Container[str]) -> dict[str, Edge]:
        """An edge to each node not `known`, by its hash, in the order a walk of the
        nodes by hash meets them: the first that walk meets to each. Such a node is
        known by that edge alone (its package name), so which edge names it must not
        depend on the order the nodes were added in."""
        self._check_open()
        lost = [kind for kind, edge in enumerate(self._kept) if edge.hash not in known]
        if not lost:
            return {}
        kinds = np.frombuffer(self.kinds, dtype=np.int32)
        is_lost = np.zeros(len(self._kept), dtype=np.bool_)
        is_lost[lost] = True
        places = np.flatnonzero(is_lost[kinds])
        # Each place's node (the run it is in: runs do not overlap, each node has one),
        # its rank by hash, and its place within the run.
        start = np.frombuffer(self.start, dtype=np.int64)
        runs = np.flatnonzero(np.frombuffer(self.count, dtype=np.int32) > 0)
        runs = runs[np.argsort(start[runs])]
        owners = runs[np.searchsorted(start[runs], places, side="right") - 1]
        distinct, owner_of = np.unique(owners, return_inverse=True)
        hashes = list(self.ids)
        owner_hashes = [hashes[owner] for owner in distinct.tolist()]
        ranks = np.empty(len(distinct), dtype=np.int64)
        ranks[sorted(range(len(distinct)), key=owner_hashes.__getitem__)] = np.arange(len(distinct))
        walk = np.lexsort((places - start[owners], ranks[owner_of]))
        met = kinds[places[walk]]
        targets = np.frombuffer(self.kind_targets, dtype=np.int32)[met]
        firsts = np.sort(np.unique(targets, return_index=True)[1])
        found: dict[str, Edge] = {}
        for kind in met[firsts].tolist():
            edge = self._kept[kind]
            found[edge.hash] = edge
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
