"""Write a tag's dependency DAG: direct edges, their reverse (parents), the nodes of
each package, and the hubs' answers.

Node ids: the tag's binaries are its spec rows `0..n-1`; its other nodes (outside the
cache, or known only by an edge) are the rows of its `nodes/` table, as `n + row`. No
closure is stored (it grows as nodes x ancestors: 2.4 GB at 1M specs): a query walks
the parents from the nodes it matched. The packages most edges point to (`HUBS`) keep
one bit per spec instead, as a walk from them would visit most of the tag.
"""

from __future__ import annotations

import itertools
import json
from array import array
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from cachegql.index.disk.columns import Offsets, Postings, Rows
from cachegql.index.disk.layout import DAG_FILE, DAG_FOLDER, DEPTYPES
from cachegql.index.disk.walk import gather
from cachegql.index.ingest.edge_arrays import EdgeArrays

__all__ = ["CycleError", "write_dag"]


MAX_DEPTH = 10_000
# Packages whose answer is kept as a bit per spec: one 64-bit word per spec.
HUBS = 64


class CycleError(ValueError):
    """The dependencies form a cycle, which a Spack DAG cannot (or a chain deeper than
    `MAX_DEPTH`); `nodes` names the nodes on cycles (and any between two) as (package
    name, hash), none for a chain."""

    def __init__(self, message: str, nodes: Sequence[tuple[str, str]] = ()) -> None:
        super().__init__(message)
        self.nodes = list(nodes)


def write_dag(
    folder: Path,
    edges: EdgeArrays,
    spec_hashes: Sequence[str],
    node_hashes: Sequence[str],
    names: Sequence[str],
) -> None:
    """Write the DAG of a tag whose spec rows hold `spec_hashes` and whose nodes table
    rows hold `node_hashes`, both in row order; `names` is each node's package name."""
    folder = folder / DAG_FOLDER
    folder.mkdir()
    num_specs = len(spec_hashes)
    num_nodes = num_specs + len(node_hashes)
    written = itertools.chain(spec_hashes, node_hashes)
    ids = edges.ids
    # Each row's number in `edges` (-1: none), and each number's row: the last row of
    # its hash, a hash being both a spec row (from a page) and a node row.
    number = np.fromiter((ids.get(h, -1) for h in written), dtype=np.int64, count=num_nodes)
    known = np.flatnonzero(number >= 0)
    row_of = np.full(len(ids), -1, dtype=np.int64)
    np.maximum.at(row_of, number[known], known)
    start = np.frombuffer(edges.start, dtype=np.int64)
    count = np.frombuffer(edges.count, dtype=np.int32).astype(np.int64)
    # A spec read from a page has no recorded edges (unknown), unlike a leaf (none).
    recorded = np.zeros(num_nodes, dtype=np.bool_)
    recorded[known] = start[number[known]] >= 0
    rows = np.flatnonzero(recorded)
    lengths = np.zeros(num_nodes, dtype=np.int64)
    lengths[rows] = count[number[rows]]
    offsets = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    # The edges of the recorded rows, in row order, each row's run of `edges` in turn.
    runs = lengths[rows]
    run_start = start[number[rows]] - (np.cumsum(runs) - runs)
    taken = np.repeat(run_start, runs) + np.arange(int(offsets[-1]), dtype=np.int64)
    kinds = _numbers(edges.kinds)[taken]
    targets = _numbers(edges.kind_targets)[kinds]
    target_ids = row_of[targets].astype(np.int32) if len(targets) else _EMPTY
    if len(target_ids) and int(target_ids.min()) < 0:
        # Every dependency is a row (a spec or a node): a target without one is a bug of
        # the ingest, refused here rather than written for the server to refuse on load.
        raise ValueError("an edge points to a node that is neither a spec nor a node row")
    masks = np.array([_mask(d) for d in edges.deptype_sets] or [0], dtype=np.uint8)
    deptypes = masks[_numbers(edges.kind_deptypes)[kinds]]
    virtuals, virtual_sets = _first_seen(_numbers(edges.kind_virtuals)[kinds], edges.virtual_sets)
    np.save(folder / "edges.offsets.npy", offsets)
    np.save(folder / "edges.targets.npy", target_ids)
    np.save(folder / "edges.deptypes.npy", deptypes)
    np.save(folder / "edges.virtuals.npy", virtuals)
    np.save(folder / "edges.recorded.npy", recorded)

    sources = np.repeat(np.arange(num_nodes, dtype=np.int32), lengths)
    parents = _group(target_ids, sources, num_nodes)
    _save(folder, "parents", parents)
    package_names = sorted(set(names))
    name_ids = {name: i for i, name in enumerate(package_names)}
    name_of = np.array([name_ids[n] for n in names], dtype=np.int32)
    _save(
        folder, "names", _group(name_of, np.arange(num_nodes, dtype=np.int32), len(package_names))
    )
    depth = _depths(parents, num_nodes)
    if int(depth.min(initial=0)) < 0:  # a node could not be placed
        if int(depth.max()) >= MAX_DEPTH:
            raise CycleError(f"a chain of its dependencies is deeper than {MAX_DEPTH}")
        rows = _on_cycles(offsets, sources, target_ids, depth < 0).tolist()
        raise CycleError(
            "its dependencies form a cycle",
            [
                (names[r], spec_hashes[r] if r < num_specs else node_hashes[r - num_specs])
                for r in rows
            ],
        )
    hubs = _hub_names(name_of, target_ids, len(package_names))
    np.save(folder / "hubs.npy", _hub_bits(offsets, target_ids, depth, name_of, hubs)[:num_specs])
    meta = {
        "specs": num_specs,
        "nodes": num_nodes,
        "names": package_names,
        "hubs": [package_names[h] for h in hubs.tolist()],
        "virtuals": [list(v) for v in virtual_sets],
    }
    (folder / DAG_FILE).write_text(json.dumps(meta), encoding="utf-8")


def _numbers(values: array[int]) -> Rows:
    return np.frombuffer(values, dtype=np.int32) if values else _EMPTY


def _first_seen(codes: Rows, sets: Sequence[tuple[str, ...]]) -> tuple[Rows, list[tuple[str, ...]]]:
    """`codes` (into `sets`, the empty set 0) renumbered in the order they first occur,
    the empty set staying 0; and the sets in that order."""
    present, first = np.unique(codes, return_index=True)
    keep = present != 0
    order = present[keep][np.argsort(first[keep], kind="stable")]
    renumber = np.zeros(len(sets), dtype=np.int32)
    renumber[order] = np.arange(1, len(order) + 1, dtype=np.int32)
    return renumber[codes], [sets[0], *(sets[i] for i in order.tolist())]


def _mask(deptypes: tuple[str, ...]) -> int:
    """The deptypes of an edge as bits of `DEPTYPES` (one it does not know is left out;
    one given twice is one bit, not the next one up)."""
    bits = 0
    for deptype in deptypes:
        if deptype in DEPTYPES:
            bits |= 1 << DEPTYPES.index(deptype)
    return bits


def _group(keys: Rows, items: Rows, num_keys: int) -> Postings:
    """`items` grouped by `keys`, ascending within each group."""
    order = np.lexsort((items, keys))
    counts = np.bincount(keys, minlength=num_keys)
    offsets = np.zeros(num_keys + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    grouped = np.ascontiguousarray(items[order], dtype=np.int32)
    # The same edge listed twice (two deptypes of one dependency) counts once.
    starts = offsets[:-1].repeat(counts)
    keep = np.ones(len(grouped), dtype=np.bool_)
    keep[1:] = (grouped[1:] != grouped[:-1]) | (starts[1:] != starts[:-1])
    if keep.all():
        return Postings(grouped, offsets)
    kept_counts = np.bincount(keys[order][keep], minlength=num_keys)
    np.cumsum(kept_counts, out=offsets[1:])
    return Postings(grouped[keep], offsets)


def _depths(parents: Postings, num_nodes: int) -> npt.NDArray[np.int64]:
    """Each node's depth: 0 for a leaf, else one more than its deepest dependency; -1 for
    a node on a cycle or depending on one, or above `MAX_DEPTH`.

    Found a level at a time from the leaves up: a node's depth is the level at which its
    last dependency was settled. Each level looks only at the parents of the one before,
    so a cycle stops it after the DAG's real depth (a pass over every edge per level took
    `MAX_DEPTH` passes to see one: minutes at 1M specs).
    """
    depth = np.full(num_nodes, -1, dtype=np.int64)
    unsettled = np.bincount(parents.items, minlength=num_nodes)  # dependencies not placed
    level = np.flatnonzero(unsettled == 0)
    depth[level] = 0
    for height in range(1, MAX_DEPTH + 1):
        above = gather(parents.offsets, parents.items, level)
        if not len(above):
            break
        hits = np.bincount(above, minlength=num_nodes)
        unsettled -= hits
        level = np.flatnonzero((hits > 0) & (unsettled == 0))
        depth[level] = height
    return depth


def _on_cycles(
    offsets: Offsets, sources: Rows, targets: Rows, unplaced: npt.NDArray[np.bool_]
) -> Rows:
    """Of the nodes `_depths` could not place, those on a cycle (or between two): the
    others depend on one and nothing among them depends on them, so they are taken away
    from the top, a level at a time (at most `MAX_DEPTH` levels)."""
    within = unplaced[sources] & unplaced[targets]
    dependents = np.bincount(targets[within], minlength=len(unplaced))
    left = unplaced.copy()
    top = np.flatnonzero(left & (dependents == 0))
    for _ in range(MAX_DEPTH):
        if not len(top):
            break
        left[top] = False
        below = gather(offsets, targets, top)
        below = below[left[below]]
        np.subtract.at(dependents, below, 1)
        touched = np.unique(below)
        top = touched[dependents[touched] == 0]
    return np.flatnonzero(left).astype(np.int32)


def _hub_names(name_of: Rows, targets: Rows, num_names: int) -> Rows:
    """The packages depended on directly by the most edges, at most HUBS of them: those
    whose answer a walk would find by visiting most of the tag."""
    counts = np.bincount(name_of[targets], minlength=num_names) if len(targets) else _EMPTY
    ranked = np.argsort(-counts, kind="stable")[:HUBS]
    return np.sort(ranked[counts[ranked] > 0]).astype(np.int32)


def _hub_bits(
    offsets: Offsets, targets: Rows, depth: npt.NDArray[np.int64], name_of: Rows, hubs: Rows
) -> npt.NDArray[np.uint64]:
    """For each node, bit i set when it depends (at any depth) on a node of `hubs[i]`:
    computed a depth at a time, each node OR-ing what its direct dependencies hold."""
    bit_of = np.full(int(name_of.max(initial=0)) + 1, 0, dtype=np.uint64)
    bit_of[hubs] = np.left_shift(np.uint64(1), np.arange(len(hubs), dtype=np.uint64))
    own = bit_of[name_of] if len(name_of) else np.zeros(0, dtype=np.uint64)
    bits = np.zeros(len(depth), dtype=np.uint64)
    order = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[order], np.arange(1, int(depth.max(initial=0)) + 2))
    for lo, hi in itertools.pairwise(bounds.tolist()):
        level = order[lo:hi]
        below = gather(offsets, targets, level)
        lengths = offsets[level + 1] - offsets[level]  # above depth 0: never empty
        starts = np.cumsum(lengths) - lengths
        bits[level] = np.bitwise_or.reduceat(bits[below] | own[below], starts)
    return bits


def _save(folder: Path, name: str, postings: Postings) -> None:
    np.save(folder / f"{name}.items.npy", postings.items)
    np.save(folder / f"{name}.offsets.npy", postings.offsets)


_EMPTY: Rows = np.zeros(0, dtype=np.int32)
