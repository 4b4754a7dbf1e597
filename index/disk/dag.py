"""A tag's dependency DAG, read back: edges, direct dependents and closure postings.

Node ids are the tag's spec rows `0..n-1`, then `n + row` for the rows of its `nodes/`
table (see `index.disk.dagwrite`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from cachegql.index.budget import check
from cachegql.index.disk.columns import IdArray, Postings, Rows, load_array
from cachegql.index.disk.layout import DAG_FILE, DEPTYPES

__all__ = ["Dag", "EdgeData"]

# Above this share of the specs, a union of posting lists costs more than a mask.
_MASK_SHARE = 0.05
# Nodes whose closures are merged between two checks of the time budget.
_NODES_PER_CHECK = 1024


@dataclass(frozen=True, slots=True)
class EdgeData:
    """A direct dependency, as node ids and names."""

    target: int
    deptypes: tuple[str, ...]
    virtuals: tuple[str, ...]


class Dag:
    """The edges of every node and, per node, the nodes that depend on it."""

    def __init__(self, folder: Path) -> None:
        meta = json.loads((folder / DAG_FILE).read_text())
        self.num_specs: int = meta["specs"]
        self.num_nodes: int = meta["nodes"]
        self.virtual_sets = [tuple(v) for v in meta["virtuals"]]
        self.name_ids = {name: i for i, name in enumerate(meta["names"])}
        self.edge_offsets: Rows = load_array(folder, "edges.offsets")
        self.edge_targets: Rows = load_array(folder, "edges.targets")
        self.edge_deptypes: Rows = load_array(folder, "edges.deptypes")
        self.edge_virtuals: Rows = load_array(folder, "edges.virtuals")
        self.recorded: npt.NDArray[np.bool_] = load_array(folder, "edges.recorded")
        self.dependents = Postings.load(folder, "dependents")
        self.closure = Postings.load(folder, "closure")
        self.by_name = Postings.load(folder, "names")

    def edges(self, nodes: list[int]) -> list[list[EdgeData] | None]:
        """The direct edges of each node, in the order its source lists them; None for a
        node whose source records no dependencies (a spec read from a page)."""
        starts = self.edge_offsets[nodes].tolist()
        ends = self.edge_offsets[np.asarray(nodes, dtype=np.int64) + 1].tolist()
        recorded = self.recorded[nodes].tolist()
        result: list[list[EdgeData] | None] = []
        for start, end, known in zip(starts, ends, recorded, strict=True):
            if not known:
                result.append(None)
                continue
            targets = self.edge_targets[start:end].tolist()
            masks = self.edge_deptypes[start:end].tolist()
            virtuals = self.edge_virtuals[start:end].tolist()
            result.append(
                [
                    EdgeData(t, _deptypes(m), self.virtual_sets[v])
                    for t, m, v in zip(targets, masks, virtuals, strict=True)
                ]
            )
        return result

    def specs_depending_on_name(self, name: str) -> Rows:
        """The spec rows whose DAG has a node of package `name`, ascending."""
        name_id = self.name_ids.get(name)
        return _EMPTY if name_id is None else self.by_name(name_id)

    def specs_depending_on(self, nodes: IdArray) -> Rows:
        """The spec rows whose DAG contains any of `nodes` (at any depth), ascending."""
        merged = self.depending_on(nodes)
        # Node ids below num_specs are spec rows; the postings are sorted.
        rows: Rows = merged[: int(np.searchsorted(merged, self.num_specs))]
        return rows

    def depending_on(self, nodes: IdArray) -> Rows:
        """The node ids whose DAG contains any of `nodes` (at any depth), ascending."""
        closure = self.closure
        if not len(nodes):
            return _EMPTY
        offsets = closure.offsets
        total = int((offsets[nodes + 1] - offsets[nodes]).sum())
        if len(nodes) == 1 or total <= _MASK_SHARE * self.num_specs:
            parts = [closure(int(node)) for node in nodes.tolist()]
            merged = np.unique(np.concatenate(parts)) if len(parts) > 1 else parts[0]
        else:
            mask = np.zeros(self.num_nodes, dtype=np.bool_)
            for i, node in enumerate(nodes.tolist()):
                if not i % _NODES_PER_CHECK:
                    check()
                mask[closure(node)] = True
            merged = np.flatnonzero(mask).astype(np.int32)
        result: Rows = merged
        return result


def _deptypes(mask: int) -> tuple[str, ...]:
    return tuple(name for bit, name in enumerate(DEPTYPES) if mask & (1 << bit))


_EMPTY: Rows = np.zeros(0, dtype=np.int32)
