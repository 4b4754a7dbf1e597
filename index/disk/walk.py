"""Walks over a tag's DAG held as CSR arrays: the cost follows the nodes reached.

`parents` lists, per node, the nodes that depend on it directly; `children` (the edges)
the nodes it depends on. A walk keeps a visited mask over the nodes and gathers the
next frontier's lists in one numpy call per level, so a query that reaches few nodes
costs little however large the tag is.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from cachegql.index.budget import check
from cachegql.index.disk.columns import IdArray, Mask, Offsets, Postings, Rows

__all__ = ["ancestors", "gather", "reaching"]


def gather(offsets: Offsets, items: Rows, nodes: IdArray) -> Rows:
    """The lists of `nodes` (`items[offsets[n]:offsets[n + 1]]`), concatenated."""
    starts = offsets[nodes]
    lengths = offsets[nodes + 1] - starts
    return _gather(items, starts, lengths, int(lengths.sum()))


def _gather(items: Rows, starts: Offsets, lengths: Offsets, total: int) -> Rows:
    if not total:
        return _EMPTY
    # The index of each gathered item: its list's start plus its place in the list, in
    # 32 bits while the items allow (half the memory traffic of 64), read with `np.take`
    # (a fancy index converts its index to 64 bits first: twice as slow at 1M nodes).
    kind = np.int32 if len(items) <= _INT32_MAX else np.int64
    shift = np.repeat((starts - (np.cumsum(lengths) - lengths)).astype(kind), lengths)
    shift += np.arange(total, dtype=kind)
    picked: Rows = np.take(items, shift)
    return picked


_INT32_MAX = np.iinfo(np.int32).max


def ancestors(
    parents: Postings,
    seeds: IdArray,
    num_nodes: int,
    allowed: Mask | None = None,
    children: tuple[Offsets, Rows] | None = None,
) -> Mask:
    """The nodes that depend on any of `seeds` at any depth (a seed only when it depends
    on another seed), walked up only through `allowed` nodes when given.

    With the `children` (the edges: offsets and targets), a level whose frontier has more
    parents than a quarter of the edges is taken the other way round: every node is
    tested for an edge into the frontier, one pass over the edges rather than gathering,
    filtering and deduplicating millions of parents (`^zlib@1.3.1` reaches most nodes).
    """
    seen = np.zeros(num_nodes, dtype=np.bool_)
    frontier = np.asarray(seeds, dtype=np.int64)
    dense = -1 if children is None else len(children[1]) >> 2
    slots: npt.NDArray[np.int64] | None = None
    while len(frontier):
        check()
        starts = parents.offsets[frontier]
        lengths = parents.offsets[frontier + 1] - starts
        total = int(lengths.sum())
        if children is not None and total > dense:
            fresh = _into(children, frontier, num_nodes)
            fresh &= ~seen
            if allowed is not None:
                fresh &= allowed
            seen |= fresh
            frontier = np.flatnonzero(fresh)
            continue
        up = _gather(parents.items, starts, lengths, total)
        keep = ~np.take(seen, up)
        if allowed is not None:
            keep &= np.take(allowed, up)
        up = up[keep]
        if len(up) > num_nodes >> 6:
            # Many: deduplicated through a mask, one byte a node, not 8 as the slots take.
            fresh = np.zeros(num_nodes, dtype=np.bool_)
            fresh[up] = True
            frontier = np.flatnonzero(fresh)
        else:
            if slots is None:
                slots = np.empty(num_nodes, dtype=np.int64)
            frontier = _once(up, slots)
        seen[frontier] = True
    return seen


def _into(children: tuple[Offsets, Rows], frontier: npt.NDArray[np.int64], num_nodes: int) -> Mask:
    """The nodes with an edge into `frontier`: one pass over every edge."""
    offsets, targets = children
    inside = np.zeros(num_nodes, dtype=np.bool_)
    inside[frontier] = True
    if not len(targets):
        return np.zeros(num_nodes, dtype=np.bool_)
    # One False past the last edge: the nodes without edges at the end start there (a
    # valid index for `reduceat`), and the last node with edges still ends at its own end.
    hit = np.empty(len(targets) + 1, dtype=np.bool_)
    np.take(inside, targets, out=hit[:-1])
    hit[-1] = False
    # `reduceat` gives an empty list its next item: cleared.
    found: Mask = np.logical_or.reduceat(hit, offsets[:-1])
    found &= offsets[1:] != offsets[:-1]
    return found


def _once(nodes: Rows, slots: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """`nodes` without repeats, in no order: each position writes itself into its node's
    slot, and the one position per node whose write stayed is kept (a sort of the
    frontier, as `np.unique` does, cost more than the rest of the walk)."""
    places = np.arange(len(nodes), dtype=np.int64)
    slots[nodes] = places
    kept: npt.NDArray[np.int64] = nodes[slots[nodes] == places].astype(np.int64)
    return kept


def reaching(
    parents: Postings, offsets: Offsets, targets: Rows, matched: Mask, candidates: Rows
) -> Mask:
    """For each of `candidates`, whether it depends (at any depth) on a `matched` node.

    Walks down from the candidates to the nodes below them, then up from the matched
    ones among those, through that cone only: the cost follows the candidates' DAGs.
    """
    num_nodes = len(matched)
    cone = np.zeros(num_nodes, dtype=np.bool_)
    slots = np.empty(num_nodes, dtype=np.int64)
    frontier = _once(candidates, slots)
    cone[frontier] = True
    below = np.zeros(num_nodes, dtype=np.bool_)
    while len(frontier):
        check()
        down = gather(offsets, targets, frontier)
        below[down] = True
        frontier = _once(down[~cone[down]], slots)
        cone[frontier] = True
    hits = np.flatnonzero(below & matched)
    if not len(hits):
        return np.zeros(len(candidates), dtype=np.bool_)
    found: Mask = ancestors(parents, hits, num_nodes, cone, (offsets, targets))[candidates]
    return found


_EMPTY: Rows = np.zeros(0, dtype=np.int32)
