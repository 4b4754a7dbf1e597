"""Write a tag's dependency DAG: direct edges, direct dependents, and closure postings.

Node ids: the tag's binaries are its spec rows `0..n-1`; its other nodes (outside the
cache, or known only by an edge) are the rows of its `nodes/` table, as `n + row`. For
each node, the closure postings list every node that depends on it at any depth, so
that `^zlib` is a union of posting lists rather than a walk of the DAG per query.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from cachegql.index.disk.columns import Offsets, Postings, Rows
from cachegql.index.disk.layout import DAG_FILE, DAG_FOLDER, DEPTYPES
from cachegql.index.ingest.spackdb import Edge

__all__ = ["CycleError", "write_dag"]


MAX_DEPTH = 10_000
CHUNK = 20_000_000  # pairs sorted at once when inverting the closure


class CycleError(ValueError):
    """The dependencies form a cycle, which a Spack DAG cannot."""


def write_dag(
    folder: Path,
    edges: Mapping[str, Sequence[Edge]],
    spec_hashes: Sequence[str],
    node_hashes: Sequence[str],
    names: Sequence[str],
) -> None:
    """Write the DAG of a tag whose spec rows hold `spec_hashes` and whose nodes table
    rows hold `node_hashes`, both in row order; `names` is each node's package name."""
    folder = folder / DAG_FOLDER
    folder.mkdir()
    ids = {digest: i for i, digest in enumerate((*spec_hashes, *node_hashes))}
    num_nodes, num_specs = len(ids), len(spec_hashes)
    virtual_sets: dict[tuple[str, ...], int] = {(): 0}
    lengths = np.zeros(num_nodes, dtype=np.int64)
    # A spec read from a page has no recorded edges (unknown), unlike a leaf (none).
    recorded = np.zeros(num_nodes, dtype=np.bool_)
    targets: list[int] = []
    deptypes: list[int] = []
    virtuals: list[int] = []
    for node, digest in enumerate((*spec_hashes, *node_hashes)):
        node_edges = edges.get(digest, ())
        recorded[node] = digest in edges
        lengths[node] = len(node_edges)
        for edge in node_edges:
            targets.append(ids[edge.hash])
            deptypes.append(sum(1 << DEPTYPES.index(d) for d in edge.deptypes if d in DEPTYPES))
            virtuals.append(virtual_sets.setdefault(edge.virtuals, len(virtual_sets)))
    offsets = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    target_ids = np.array(targets, dtype=np.int32)
    np.save(folder / "edges.offsets.npy", offsets)
    np.save(folder / "edges.targets.npy", target_ids)
    np.save(folder / "edges.deptypes.npy", np.array(deptypes, dtype=np.uint8))
    np.save(folder / "edges.virtuals.npy", np.array(virtuals, dtype=np.int32))
    np.save(folder / "edges.recorded.npy", recorded)

    sources = np.repeat(np.arange(num_nodes, dtype=np.int32), lengths)
    from_specs = sources < num_specs
    _save(folder, "dependents", _group(target_ids[from_specs], sources[from_specs], num_nodes))
    below = _below(offsets, target_ids, num_nodes)
    _save(folder, "closure", _invert(below, num_nodes))
    package_names = sorted(set(names))
    name_ids = {name: i for i, name in enumerate(package_names)}
    name_of = np.array([name_ids[n] for n in names], dtype=np.int32)
    _save(folder, "names", _by_name(below, name_of, num_specs, len(package_names)))
    meta = {
        "specs": num_specs,
        "nodes": num_nodes,
        "names": package_names,
        "virtuals": [list(v) for v in sorted(virtual_sets, key=virtual_sets.__getitem__)],
    }
    (folder / DAG_FILE).write_text(json.dumps(meta), encoding="utf-8")


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


def _below(offsets: Offsets, targets: Rows, num_nodes: int) -> list[Rows]:
    """For each node, every node it depends on at any depth (itself excluded), sorted."""
    below: list[Rows] = [_EMPTY] * num_nodes
    for node in _dependencies_first(offsets, targets, num_nodes):
        direct = targets[offsets[node] : offsets[node + 1]]
        if not len(direct):
            continue
        parts = [direct, *(below[d] for d in direct.tolist() if len(below[d]))]
        below[node] = np.unique(np.concatenate(parts)) if len(parts) > 1 else np.unique(direct)
    return below


def _by_name(below: list[Rows], name_of: Rows, num_specs: int, num_names: int) -> Postings:
    """For each package name, the specs whose DAG has a node of that name: `^zlib` is then
    one posting list, however many zlib nodes there are (1,805 at 100k specs)."""
    per_spec = [np.unique(name_of[below[row]]) for row in range(num_specs)]
    return _invert(per_spec, num_names)


def _invert(below: list[Rows], num_keys: int) -> Postings:
    """Turn `below` (owner -> the keys it holds) into key -> its owners, ascending, in
    slices of the keys, so that no sort ever holds more than CHUNK pairs."""
    num_owners = len(below)
    lengths = np.fromiter((len(b) for b in below), dtype=np.int64, count=num_owners)
    members = np.concatenate(below).astype(np.int32) if num_owners else _EMPTY
    owners_start = np.zeros(num_owners + 1, dtype=np.int64)
    np.cumsum(lengths, out=owners_start[1:])
    counts = np.bincount(members, minlength=num_keys)
    offsets = np.zeros(num_keys + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    items = np.empty(len(members), dtype=np.int32)
    step = max(1, num_keys * CHUNK // max(len(members), 1))
    for lo in range(0, num_keys, step):
        hi = min(num_keys, lo + step)
        picked = np.flatnonzero((members >= lo) & (members < hi))
        # Owners of each pair, in ascending order since `below` is in node order.
        owner_ids = np.searchsorted(owners_start, picked, side="right").astype(np.int32) - 1
        order = np.argsort(members[picked], kind="stable")
        items[offsets[lo] : offsets[hi]] = owner_ids[order]
    return Postings(items, offsets)


def _dependencies_first(offsets: Offsets, targets: Rows, num_nodes: int) -> list[int]:
    """The nodes ordered so that each comes after all of its dependencies."""
    depth = np.zeros(num_nodes, dtype=np.int64)
    has_edges = np.flatnonzero(np.diff(offsets))
    for _ in range(min(num_nodes, MAX_DEPTH) + 1):
        if not len(has_edges):
            break
        below = np.maximum.reduceat(depth[targets], offsets[has_edges]) + 1
        changed = below != depth[has_edges]
        if not changed.any():
            return list(np.argsort(depth, kind="stable").tolist())
        depth[has_edges] = np.maximum(depth[has_edges], below)
    else:
        raise CycleError(f"the dependencies form a cycle (or a chain deeper than {MAX_DEPTH})")
    return list(range(num_nodes))


def _save(folder: Path, name: str, postings: Postings) -> None:
    np.save(folder / f"{name}.items.npy", postings.items)
    np.save(folder / f"{name}.offsets.npy", postings.offsets)


_EMPTY: Rows = np.zeros(0, dtype=np.int32)
