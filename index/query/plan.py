"""Evaluate filters over a tag's rows: a tiny query planner over posting lists.

Every node can *generate* its rows (sorted, within a scope) and *test* given rows.
An AND generates from its most selective child and tests the others on those
candidates only, so the cost follows the smallest part of the answer rather than
the size of the tag. An OR adds its children's rows into one mask over the scope, one
child at a time, and tests a child only on the rows not matched yet once that is
cheaper than generating its rows: however many children it has, its working set is one
mask and one child's rows. The same nodes work for spec rows and for package ids.

Loops whose length follows the children or the scope call `budget.check()`, so that a
query over its time budget stops (each check costs ~100 ns: once per child or chunk).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from cachegql.index.budget import check
from cachegql.index.disk.columns import Column, IdArray, Mask, Rows
from cachegql.index.query.leaves import (
    Everything,
    ExceptLeaf,
    HashLeaf,
    Nothing,
    RangeLeaf,
    RowsLeaf,
    SetLeaf,
    ValuesLeaf,
)
from cachegql.index.query.rowsets import SCAN_SHARE, complement, contains, union, within

__all__ = [
    "And",
    "Everything",
    "ExceptLeaf",
    "HashLeaf",
    "Node",
    "Not",
    "Nothing",
    "Or",
    "RangeLeaf",
    "RowsLeaf",
    "SetLeaf",
    "ValuesLeaf",
    "conjunction",
    "contains",
    "disjunction",
    "negation",
    "union",
    "within",
]

# Scanning a mask of the scope for the rows left costs about as much as generating an
# eighth of the scope's rows: an OR rescans once its children generated that many.
RESCAN_SHARE = 0.125
# Testing a row costs less than generating one (a gather, against a scan of the scope and
# a scatter): an OR tests a child on the rows left once its rows would be half as many.
TEST_RATIO = 2


class Node(Protocol):
    def estimate(self) -> int:
        """An upper bound on how many rows match, cheap to compute."""

    def rows(self, lo: int, hi: int) -> Rows:
        """The matching rows within [lo, hi), strictly ascending (so distinct); read,
        never written (they may be a shared array: a posting list, every row of the tag)."""

    def test(self, rows: Rows) -> Mask:
        """For each of `rows`, whether it matches."""


class And:
    """Rows matching every child: generated from the most selective child, the others
    tested on those candidates only."""

    def __init__(self, children: Sequence[Node]) -> None:
        self.children = sorted(children, key=lambda c: c.estimate())

    def estimate(self) -> int:
        return self.children[0].estimate() if self.children else 1 << 62

    def rows(self, lo: int, hi: int) -> Rows:
        if not self.children:
            return Everything().rows(lo, hi)
        rows = self.children[0].rows(lo, hi)
        for child in self.children[1:]:
            check()
            if not len(rows):
                break
            rows = rows[child.test(rows)]
        return rows

    def test(self, rows: Rows) -> Mask:
        candidates = np.arange(len(rows))  # positions in `rows` every child so far holds
        for child in self.children:
            check()
            if not len(candidates):
                break
            candidates = candidates[child.test(rows[candidates])]
        mask = np.zeros(len(rows), dtype=np.bool_)
        mask[candidates] = True
        return mask


class Or:
    """Rows matching any child, without ever holding every child's rows at once.

    Children come cheapest first. While their rows are few (together at most a quarter
    of the scope), the rows are merged. Else they go into one mask over the scope, one
    child at a time: a child generates its rows while that costs less than testing the
    rows not matched yet, and tests those rows otherwise (the rows left are recomputed
    from the mask once children have generated an eighth of the scope since the last
    time). A broad child (a `ne`) thus leaves few rows for the next ones to test, and
    the working set stays one mask, the rows left and one child's rows, whatever the
    number of children.
    """

    def __init__(self, children: Sequence[Node]) -> None:
        self.children = sorted(children, key=lambda c: c.estimate())
        self._estimate = sum(c.estimate() for c in self.children)

    def estimate(self) -> int:
        return self._estimate

    def rows(self, lo: int, hi: int) -> Rows:
        if self._estimate <= SCAN_SHARE * (hi - lo):
            parts = []
            for child in self.children:
                check()
                parts.append(child.rows(lo, hi))
            return union(parts, lo, hi)
        return self._masked_rows(lo, hi)

    def _masked_rows(self, lo: int, hi: int) -> Rows:
        matched = np.zeros(hi - lo, dtype=np.bool_)
        left: Rows | None = None  # the rows not matched yet; None: stale, not computed
        generated = 0  # rows generated since `left` was last computed
        for child in self.children:
            check()
            estimate = child.estimate()
            if left is None and generated + estimate > RESCAN_SHARE * (hi - lo):
                left = (np.flatnonzero(~matched) + lo).astype(np.int32)
                generated = 0
            if left is not None and not len(left):
                break
            if left is not None and TEST_RATIO * estimate >= len(left):
                hit = child.test(left)
                matched[left[hit] - lo] = True
                left = left[~hit]
            else:
                matched[child.rows(lo, hi) - lo] = True
                left = None
                generated += estimate
        return (np.flatnonzero(matched) + lo).astype(np.int32)

    def test(self, rows: Rows) -> Mask:
        matched = np.zeros(len(rows), dtype=np.bool_)
        left = np.arange(len(rows))  # positions in `rows` no child has matched yet
        for child in reversed(self.children):  # broad first: they leave the fewest to test
            check()
            if not len(left):
                break
            hit = child.test(rows[left])
            matched[left[hit]] = True
            left = left[~hit]
        return matched


class Not:
    def __init__(self, child: Node) -> None:
        self.child = child

    def estimate(self) -> int:
        return 1 << 62

    def rows(self, lo: int, hi: int) -> Rows:
        return complement(self.child.rows(lo, hi), lo, hi)

    def test(self, rows: Rows) -> Mask:
        return ~self.child.test(rows)


def negation(node: Node) -> Node:
    """NOT `node`; the negation of a leaf over a single-valued column is a leaf again."""
    if isinstance(node, ValuesLeaf):
        return ExceptLeaf(node.column, node.value_ids)
    if isinstance(node, ExceptLeaf):
        return ValuesLeaf(node.column, node.value_ids)
    if isinstance(node, Everything):
        return Nothing()
    if isinstance(node, Nothing):
        return Everything()
    return Not(node)


def conjunction(parts: list[Node]) -> Node:
    """AND of `parts`, simplified: one part is itself, a `Nothing` wins, leaves over one
    single-valued column are merged into one."""
    parts = _merge_columns(parts, any_of=False)
    if any(isinstance(p, Nothing) for p in parts):
        return Nothing()
    parts = [p for p in parts if not isinstance(p, Everything)]
    if not parts:
        return Everything()
    return parts[0] if len(parts) == 1 else And(parts)


def disjunction(parts: list[Node]) -> Node:
    """OR of `parts`, simplified: none is `Nothing`, an `Everything` wins, leaves over one
    single-valued column are merged into one (an OR of thousands of `ne` on one field is
    a single leaf)."""
    parts = [p for p in _merge_columns(parts, any_of=True) if not isinstance(p, Nothing)]
    if not parts:
        return Nothing()
    if any(isinstance(p, Everything) for p in parts):
        return Everything()
    return parts[0] if len(parts) == 1 else Or(parts)


ColumnLeaf = ValuesLeaf | ExceptLeaf


def _merge_columns(parts: list[Node], *, any_of: bool) -> list[Node]:
    """`parts` with the leaves over each single-valued column merged into one leaf."""
    by_column: dict[int, list[ColumnLeaf]] = {}
    others: list[Node] = []
    for part in parts:
        if isinstance(part, ValuesLeaf | ExceptLeaf):
            by_column.setdefault(id(part.column), []).append(part)
        else:
            others.append(part)
    if all(len(leaves) == 1 for leaves in by_column.values()):
        return parts
    merged = [_merged(leaves, any_of) for leaves in by_column.values()]
    return merged + others


def _merged(leaves: list[ColumnLeaf], any_of: bool) -> Node:
    """One leaf for the OR (`any_of`) or the AND of leaves over the same column.

    A row has one value: it is in an OR when its value is one of some ValuesLeaf's or not
    one of some ExceptLeaf's, in an AND when it is one of every ValuesLeaf's and none of
    any ExceptLeaf's.
    """
    if len(leaves) == 1:
        return leaves[0]
    column = leaves[0].column
    wanted = [leaf.value_ids for leaf in leaves if isinstance(leaf, ValuesLeaf)]
    unwanted = [leaf.value_ids for leaf in leaves if isinstance(leaf, ExceptLeaf)]
    in_wanted, in_unwanted = _counts(column, wanted), _counts(column, unwanted)
    if any_of:
        if not unwanted:
            return _values_leaf(column, in_wanted > 0)
        return _except_leaf(column, (in_unwanted == len(unwanted)) & (in_wanted == 0))
    if not wanted:
        return _except_leaf(column, in_unwanted > 0)
    return _values_leaf(column, (in_wanted == len(wanted)) & (in_unwanted == 0))


def _counts(column: Column, id_arrays: list[IdArray]) -> npt.NDArray[np.int32]:
    """For each value of `column`, in how many of `id_arrays` (each without repeats) it is."""
    counts = np.zeros(len(column.values), dtype=np.int32)
    for ids in id_arrays:
        check()
        counts[ids] += 1
    return counts


def _values_leaf(column: Column, values: Mask) -> Node:
    ids: IdArray = np.flatnonzero(values)
    return ValuesLeaf(column, ids) if len(ids) else Nothing()


def _except_leaf(column: Column, values: Mask) -> Node:
    ids: IdArray = np.flatnonzero(values)
    return ExceptLeaf(column, ids) if len(ids) else Everything()
