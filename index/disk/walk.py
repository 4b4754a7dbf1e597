"""Walks over a tag's DAG held as CSR arrays: the cost follows the nodes reached.

`parents` lists, per node, the nodes that depend on it directly; `children` (the edges)
the nodes it depends on. A walk keeps a visited mask over the nodes and gathers the
next frontier's lists in one numpy call per level, so a query that reaches few nodes
costs little however large the tag is.
"""

from __future__ import annotations

import numpy as np

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
    frontier = np.asarray(seeds, dtype=np.int64)
    while len(frontier):
        check()
        up = gather(parents.offsets, parents.items, frontier)
        up = up[~seen[up]] if allowed is None else up[allowed[up] & ~seen[up]]
        seen[up] = True
        frontier = np.unique(up).astype(np.int64)
    return seen


def reaching(
    parents: Postings, offsets: Offsets, targets: Rows, matched: Mask, candidates: Rows
) -> Mask:
    """For each of `candidates`, whether it depends (at any depth) on a `matched` node.

    Walks down from the candidates to the nodes below them, then up from the matched
    ones among those, through that cone only: the cost follows the candidates' DAGs.
    """
    num_nodes = len(matched)
    cone = np.zeros(num_nodes, dtype=np.bool_)
    frontier = np.unique(candidates).astype(np.int64)
    cone[frontier] = True
    below = np.zeros(num_nodes, dtype=np.bool_)
    while len(frontier):
        check()
        down = gather(offsets, targets, frontier)
        below[down] = True
        down = down[~cone[down]]
        cone[down] = True
        frontier = np.unique(down).astype(np.int64)
    hits = np.flatnonzero(below & matched)
    if not len(hits):
        return np.zeros(len(candidates), dtype=np.bool_)
    found: Mask = ancestors(parents, hits, num_nodes, cone)[candidates]
    return found


_EMPTY: Rows = np.zeros(0, dtype=np.int32)
