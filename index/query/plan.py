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
from cachegql.index.disk.columns import Column, IdArray, Mask, Postings, Rows, SetColumn

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

# Above this share of the scope, a union of posting lists costs more than a scan.
SCAN_SHARE = 0.25
MAX_MERGED_LISTS = 32
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
        """The matching rows within [lo, hi), ascending."""

    def test(self, rows: Rows) -> Mask:
        """For each of `rows`, whether it matches."""


def within(rows: Rows, lo: int, hi: int) -> Rows:
    """The part of the sorted `rows` inside [lo, hi)."""
    if not len(rows) or (rows[0] >= lo and rows[-1] < hi):
        return rows
    start, stop = np.searchsorted(rows, (lo, hi))
    return rows[start:stop]


def union(parts: Sequence[Rows], lo: int, hi: int, *, disjoint: bool = False) -> Rows:
    """The sorted union of sorted row arrays within [lo, hi)."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return _EMPTY
    if len(parts) == 1:
        return parts[0]
    total = sum(len(p) for p in parts)
    if total > SCAN_SHARE * (hi - lo):
        mask = np.zeros(hi - lo, dtype=np.bool_)
        for part in parts:
            check()
            mask[part - lo] = True
        return (np.flatnonzero(mask) + lo).astype(np.int32)
    merged = np.concatenate(parts)
    if disjoint:
        merged.sort(kind="stable")  # timsort merges the sorted runs
        return merged
    return np.unique(merged)


def contains(sorted_rows: Rows, rows: Rows) -> Mask:
    """For each of `rows`, whether it is in `sorted_rows`."""
    if not len(sorted_rows):
        return np.zeros(len(rows), dtype=np.bool_)
    positions = np.searchsorted(sorted_rows, rows).clip(max=len(sorted_rows) - 1)
    found: Mask = sorted_rows[positions] == rows
    return found


def _total(postings: Postings, value_ids: IdArray) -> int:
    """How many items the posting lists of `value_ids` hold (without sizing every list)."""
    if not len(value_ids):
        return 0
    offsets = postings.offsets
    return int((offsets[value_ids + 1] - offsets[value_ids]).sum())


def _complement(rows: Rows, lo: int, hi: int) -> Rows:
    """The rows of [lo, hi) that are not in `rows` (sorted, within [lo, hi))."""
    mask = np.ones(hi - lo, dtype=np.bool_)
    mask[rows - lo] = False
    return (np.flatnonzero(mask) + lo).astype(np.int32)


_EMPTY: Rows = np.zeros(0, dtype=np.int32)


class Everything:
    def estimate(self) -> int:
        return 1 << 62

    def rows(self, lo: int, hi: int) -> Rows:
        return np.arange(lo, hi, dtype=np.int32)

    def test(self, rows: Rows) -> Mask:
        return np.ones(len(rows), dtype=np.bool_)


class Nothing:
    def estimate(self) -> int:
        return 0

    def rows(self, lo: int, hi: int) -> Rows:
        return _EMPTY

    def test(self, rows: Rows) -> Mask:
        return np.zeros(len(rows), dtype=np.bool_)


class RowsLeaf:
    """Rows known in advance (a search result, a stack's specs)."""

    def __init__(self, rows: Rows) -> None:
        self._rows = rows

    def estimate(self) -> int:
        return len(self._rows)

    def rows(self, lo: int, hi: int) -> Rows:
        return within(self._rows, lo, hi)

    def test(self, rows: Rows) -> Mask:
        return contains(self._rows, rows)


class RangeLeaf:
    """Rows [start, stop): a package's specs, or a run of hash ranks mapped back to rows."""

    def __init__(self, start: int, stop: int) -> None:
        self.start, self.stop = start, stop

    def estimate(self) -> int:
        return self.stop - self.start

    def rows(self, lo: int, hi: int) -> Rows:
        return np.arange(max(lo, self.start), min(hi, self.stop), dtype=np.int32)

    def test(self, rows: Rows) -> Mask:
        return (rows >= self.start) & (rows < self.stop)


class HashLeaf:
    """Rows whose hash rank is in [lo_rank, hi_rank): the specs of one hash prefix."""

    def __init__(self, hash_rows: Rows, hash_rank: Rows, lo_rank: int, hi_rank: int) -> None:
        self._hash_rows, self._hash_rank = hash_rows, hash_rank
        self.lo_rank, self.hi_rank = lo_rank, hi_rank

    def estimate(self) -> int:
        return self.hi_rank - self.lo_rank

    def rows(self, lo: int, hi: int) -> Rows:
        rows = np.sort(self._hash_rows[self.lo_rank : self.hi_rank])
        return within(rows, lo, hi)

    def test(self, rows: Rows) -> Mask:
        ranks = self._hash_rank[rows]
        return (ranks >= self.lo_rank) & (ranks < self.hi_rank)


class ValuesLeaf:
    """Rows whose value in a single-valued column is one of `value_ids`."""

    def __init__(self, column: Column, value_ids: IdArray) -> None:
        self.column, self.value_ids = column, value_ids
        self._size = _total(column.postings, value_ids)

    def estimate(self) -> int:
        return self._size

    def _value_mask(self) -> Mask:
        mask = np.zeros(len(self.column.values), dtype=np.bool_)
        mask[self.value_ids] = True
        return mask

    def rows(self, lo: int, hi: int) -> Rows:
        if len(self.value_ids) == 1:
            return within(self.column.postings(int(self.value_ids[0])), lo, hi)
        if self._size > SCAN_SHARE * (hi - lo) or len(self.value_ids) > MAX_MERGED_LISTS:
            found = np.flatnonzero(self._value_mask()[self.column.codes[lo:hi]]) + lo
            return found.astype(np.int32)
        parts = [within(self.column.postings(int(v)), lo, hi) for v in self.value_ids]
        return union(parts, lo, hi, disjoint=True)

    def test(self, rows: Rows) -> Mask:
        if len(self.value_ids) == 1:
            matched: Mask = self.column.codes[rows] == self.value_ids[0]
            return matched
        if not len(self.value_ids):
            return np.zeros(len(rows), dtype=np.bool_)
        return self._value_mask()[self.column.codes[rows]]


class ExceptLeaf:
    """Rows whose value in a single-valued column is none of `value_ids`: a `ne`, or the
    negation of an `eq`/`in`.

    Kept as the complement of a few posting lists, so that it is built, estimated and
    tested at the cost of what it leaves out; only generating its rows costs the scope.
    """

    def __init__(self, column: Column, value_ids: IdArray) -> None:
        self.column, self.value_ids = column, value_ids
        self._excluded = ValuesLeaf(column, value_ids)
        self._size = len(column.codes) - self._excluded.estimate()

    def estimate(self) -> int:
        return self._size

    def rows(self, lo: int, hi: int) -> Rows:
        return _complement(self._excluded.rows(lo, hi), lo, hi)

    def test(self, rows: Rows) -> Mask:
        return ~self._excluded.test(rows)


class SetLeaf:
    """Rows whose set (stacks, variant atoms) holds at least one of `value_ids`."""

    def __init__(self, column: SetColumn, value_ids: IdArray) -> None:
        self.column, self.value_ids = column, value_ids
        self._size = _total(column.postings, value_ids)
        self._sets: Mask | None = None

    def estimate(self) -> int:
        return self._size

    def _set_mask(self) -> Mask:
        if self._sets is None:
            self._sets = self.column.sets_with_any(self.value_ids)
        return self._sets

    def rows(self, lo: int, hi: int) -> Rows:
        if len(self.value_ids) == 1:
            return within(self.column.postings(int(self.value_ids[0])), lo, hi)
        if len(self.value_ids) > MAX_MERGED_LISTS:
            found = np.flatnonzero(self._set_mask()[self.column.codes[lo:hi]]) + lo
            return found.astype(np.int32)
        parts = [within(self.column.postings(int(v)), lo, hi) for v in self.value_ids]
        return union(parts, lo, hi)

    def test(self, rows: Rows) -> Mask:
        return self._set_mask()[self.column.codes[rows]]


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
        return _complement(self.child.rows(lo, hi), lo, hi)

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
