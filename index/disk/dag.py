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
    narrowest,
)
from cachegql.index.disk.layout import DAG_FILE, DEPTYPES
from cachegql.index.disk.verify import IndexLoadError
from cachegql.index.disk.walk import ancestors, reaching

__all__ = ["Dag", "EdgeData", "EdgeKind", "edge_kinds"]

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
        deptypes = load_array(folder, "edges.deptypes", "uint8", len(self.edge_targets))
        virtuals = load_array(folder, "edges.virtuals", "int32", len(self.edge_targets))
        if len(virtuals) and not 0 <= virtuals.min() <= virtuals.max() < len(self.virtual_sets):
            raise IndexLoadError(
                f"{folder / 'edges.virtuals.npy'} is damaged: an edge's virtuals are none of "
                f"the {len(self.virtual_sets)} sets of {DAG_FILE}"
            )
        self.edge_kinds, self.kinds = edge_kinds(deptypes, virtuals, self.virtual_sets)
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
            kinds = self.edge_kinds[start:end].tolist()
            result.append(
                [EdgeData(t, *self.kinds[k]) for t, k in zip(targets, kinds, strict=True)]
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


_SPAN = 1 << 20  # edges combined at a time
_TABLE_LIMIT = 1 << 22  # pairs that may be counted in a table, else sorted
_KNOWN_BITS = (1 << len(DEPTYPES)) - 1

EdgeKind = tuple[tuple[str, ...], tuple[str, ...]]
"""What an edge is besides its ends: its deptypes and the virtuals it provides."""


def edge_kinds(
    deptypes: Narrow,
    virtuals: Narrow,
    virtual_sets: list[tuple[str, ...]],
    table_limit: int = _TABLE_LIMIT,
) -> tuple[Narrow, list[EdgeKind]]:
    """Each edge's deptypes (a mask of `DEPTYPES`: other bits are left out, as they always
    were read) and virtuals (a code into `virtual_sets`, checked by the caller) as one code
    into the pairs that occur, in the narrowest type that holds them: a byte an edge where
    the two took two (10 MB of a worker's memory at 1M specs), as a tag has a few dozen
    such pairs.

    A pair is `mask * len(virtual_sets) + virtuals`. While there can be at most
    `table_limit` pairs, a table of them marks those that occur and gives their codes
    (flags, and the codes in 1 to 4 bytes each); past that (tens of thousands of sets of
    virtuals), the pairs are sorted instead. Either way a span of edges at a time, so
    that loading holds no 64-bit copy of every edge."""
    width = max(len(virtual_sets), 1)
    tabled = (width << len(DEPTYPES)) <= table_limit
    pair_type = np.int32 if tabled else np.int64
    spans = [slice(lo, lo + _SPAN) for lo in range(0, len(deptypes), _SPAN)]

    def pairs(span: slice) -> Narrow:
        paired: Narrow = deptypes[span] & _KNOWN_BITS
        paired = paired.astype(pair_type)
        paired *= width
        paired += virtuals[span]
        return paired

    codes: Narrow
    if tabled:
        seen = np.zeros(width << len(DEPTYPES), dtype=np.bool_)
        for span in spans:
            seen[pairs(span)] = True
        used = np.flatnonzero(seen)
        code_of = np.zeros(len(seen), dtype=narrowest(len(used)) or np.uint32)
        code_of[used] = np.arange(len(used))
        codes = np.empty(len(deptypes), dtype=code_of.dtype)  # type: ignore[assignment]
        for span in spans:
            codes[span] = code_of[pairs(span)]
    else:
        found = [np.unique(pairs(span)) for span in spans]
        used = np.unique(np.concatenate(found or [np.zeros(0, dtype=pair_type)]))
        codes = np.empty(len(deptypes), dtype=narrowest(len(used)) or np.uint32)
        for span in spans:
            codes[span] = np.searchsorted(used, pairs(span))
    codes.flags.writeable = False
    kinds = [(_deptypes(pair // width), virtual_sets[pair % width]) for pair in used.tolist()]
    return codes, kinds


def _deptypes(mask: int) -> tuple[str, ...]:
    return tuple(name for bit, name in enumerate(DEPTYPES) if mask & (1 << bit))


_EMPTY: Rows = np.zeros(0, dtype=np.int32)
