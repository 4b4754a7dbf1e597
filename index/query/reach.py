"""The plan leaf of a dependency constraint (`^dep`, `dependsOn`): rows whose DAG holds a
matched node at any depth, answered by the tag's DAG walks (`index.disk.walk`).

Generating its rows walks up from the matched nodes (or reads a hub's bits); testing
given rows, as an AND does on its most selective child's rows, walks down from those
rows only: `hdf5 ^openmpi@5` visits the DAGs of the hdf5 specs, not every MPI user.
"""

from __future__ import annotations

import numpy as np

from cachegql.index.disk.columns import IdArray, Mask, Rows
from cachegql.index.disk.dag import Dag
from cachegql.index.query.plan import contains, within

__all__ = ["DependsLeaf"]


class DependsLeaf:
    """The rows `offset..offset + size` of the DAG's nodes (a tag's specs, or its nodes
    table) that depend on any of `matched` (node ids), or on a node of package `name`."""

    def __init__(
        self, dag: Dag, offset: int, size: int, matched: IdArray, name: str | None = None
    ) -> None:
        self._dag = dag
        self._offset = offset
        self._size = size
        self._matched = matched
        # A hub's bits cover the spec rows only.
        self._hub = dag.hub_bits.get(name) if name is not None and offset == 0 else None
        self._answer: Rows | None = None

    def estimate(self) -> int:
        return self._size if self._answer is None else len(self._answer)

    def _all(self) -> Rows:
        if self._answer is None:
            if self._hub is not None:
                self._answer = self._dag.hub_answer(self._hub)
            else:
                ids = self._dag.depending_on(self._matched)
                lo, hi = np.searchsorted(ids, (self._offset, self._offset + self._size))
                self._answer = (ids[lo:hi] - self._offset).astype(np.int32)
        return self._answer

    def rows(self, lo: int, hi: int) -> Rows:
        return within(self._all(), lo, hi)

    def test(self, rows: Rows) -> Mask:
        if self._answer is not None:
            return contains(self._answer, rows)
        if self._hub is not None:
            return self._dag.hub_rows(self._hub, rows)
        if not len(self._matched):
            return np.zeros(len(rows), dtype=np.bool_)
        matched = np.zeros(self._dag.num_nodes, dtype=np.bool_)
        matched[self._matched] = True
        tested = self._dag.test_depending_on(matched, rows + self._offset)
        return contains(self._all(), rows) if tested is None else tested
