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
    total = int(lengths.sum())
    if not total:
        return _EMPTY
    # The index of each gathered item: its list's start plus its place in the list.
    shift = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    picked: Rows = items[shift + np.arange(total, dtype=np.int64)]
    return picked


def ancestors(
    parents: Postings, seeds: IdArray, num_nodes: int, allowed: Mask | None = None
) -> Mask:
    """The nodes that depend on any of `seeds` at any depth (a seed only when it depends
    on another seed), walked up only through `allowed` nodes when given."""
    seen = np.zeros(num_nodes, dtype=np.bool_)
    slots = np.empty(num_nodes, dtype=np.int64)
    frontier = np.asarray(seeds, dtype=np.int64)
    while len(frontier):
        check()
        up = gather(parents.offsets, parents.items, frontier)
        up = up[~seen[up]] if allowed is None else up[allowed[up] & ~seen[up]]
        frontier = _once(up, slots)
        seen[frontier] = True
    return seen


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
    found: Mask = ancestors(parents, hits, num_nodes, cone)[candidates]
    return found


_EMPTY: Rows = np.zeros(0, dtype=np.int32)
