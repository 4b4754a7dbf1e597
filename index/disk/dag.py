"""A tag's dependency DAG, read back: edges, their reverse (parents), and hub sets.

Node ids are the tag's spec rows `0..n-1`, then `n + row` for the rows of its `nodes/`
table (see `index.disk.dagwrite`). "What depends on these nodes" is a walk up the
parents from them (`index.disk.walk`), so its cost follows the answer; the packages that
most of the tag depends on (`zlib`, `gcc-runtime`) have their answer precomputed as one
bit per spec, as a walk from them would visit most of the tag.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from cachegql.index.disk.columns import (
    IdArray,
    Mask,
    Narrow,
    Offsets,
    Postings,
    Rows,
    load_array,
)
from cachegql.index.disk.layout import DAG_FILE, DEPTYPES
from cachegql.index.disk.walk import ancestors, reaching

__all__ = ["Dag", "EdgeData"]

# Above this share of the nodes, testing candidates walks more than the whole answer.
_TEST_SHARE = 0.02
# Hubs whose rows are kept once generated (4 bytes a row: 16 MB at 1M specs for four).
_KEPT_HUBS = 4


@dataclass(frozen=True, slots=True)
class EdgeData:
    """A direct dependency, as node ids and names."""

    target: int
    deptypes: tuple[str, ...]
    virtuals: tuple[str, ...]


class Dag:
    """The edges of every node, the nodes that depend on each, and the hubs' answers."""

    def __init__(self, folder: Path) -> None:
        meta = json.loads((folder / DAG_FILE).read_text())
        self.num_specs: int = meta["specs"]
        self.num_nodes: int = meta["nodes"]
        self.virtual_sets = [tuple(v) for v in meta["virtuals"]]
        self.name_ids = {name: i for i, name in enumerate(meta["names"])}
        self.hub_bits = {name: i for i, name in enumerate(meta["hubs"])}
        self.edge_offsets: Offsets = load_array(folder, "edges.offsets")
        self.edge_targets: Rows = load_array(folder, "edges.targets")
        self.edge_deptypes: Rows = load_array(folder, "edges.deptypes")
        self.edge_virtuals: Narrow = load_array(folder, "edges.virtuals")
        self.recorded: npt.NDArray[np.bool_] = load_array(folder, "edges.recorded")
        self.parents = Postings.read(folder, "parents", self.num_nodes, self.num_nodes)
        self.by_name = Postings.read(folder, "names", len(self.name_ids), self.num_nodes)
        self.hubs: npt.NDArray[np.uint64] = load_array(folder, "hubs", "uint64", self.num_specs)
        self._hub_answers: dict[int, Rows] = {}
        self._hub_lock = threading.Lock()

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

    def dependents(self, node: int) -> Rows:
        """The spec rows that depend on `node` directly, ascending."""
        parents = self.parents(node)
        rows: Rows = parents[: int(np.searchsorted(parents, self.num_specs))]
        return rows

    def named(self, name: str) -> Rows:
        """The nodes of package `name`, ascending."""
        name_id = self.name_ids.get(name)
        return _EMPTY if name_id is None else self.by_name(name_id)

    def hub_rows(self, bit: int, rows: Rows | None = None) -> Mask:
        """Whether each of `rows` (every spec row by default) depends on a node of the hub
        package `bit` (see `hub_bits`)."""
        words = self.hubs if rows is None else self.hubs[rows]
        found: Mask = (words >> np.uint64(bit)) & np.uint64(1) != 0
        return found

    def hub_answer(self, bit: int) -> Rows:
        """The spec rows that depend on the hub package `bit`, ascending: kept for the
        last few hubs asked, as `^zlib` is asked again and again."""
        with self._hub_lock:  # queries run in threads
            rows = self._hub_answers.pop(bit, None)
        if rows is None:
            rows = np.flatnonzero(self.hub_rows(bit)).astype(np.int32)
            rows.flags.writeable = False
        with self._hub_lock:
            self._hub_answers[bit] = rows  # the last asked, last in line to go
            while len(self._hub_answers) > _KEPT_HUBS:
                del self._hub_answers[next(iter(self._hub_answers))]
        return rows

    def depending_on(self, nodes: IdArray) -> Rows:
        """The node ids whose DAG contains any of `nodes` (at any depth), ascending."""
        if not len(nodes):
            return _EMPTY
        seen = ancestors(
            self.parents, nodes, self.num_nodes, children=(self.edge_offsets, self.edge_targets)
        )
        return np.flatnonzero(seen).astype(np.int32)

    def test_depending_on(self, matched: Mask, candidates: Rows) -> Mask | None:
        """For each of the `candidates` node ids, whether its DAG contains a `matched`
        node; None when so many candidates are cheaper to answer with the whole set."""
        if len(candidates) > _TEST_SHARE * self.num_nodes:
            return None
        return reaching(self.parents, self.edge_offsets, self.edge_targets, matched, candidates)


def _deptypes(mask: int) -> tuple[str, ...]:
    return tuple(name for bit, name in enumerate(DEPTYPES) if mask & (1 << bit))


_EMPTY: Rows = np.zeros(0, dtype=np.int32)
