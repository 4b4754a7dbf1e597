"""Evaluate filters over a tag's rows: a tiny query planner over posting lists.

Every node can *generate* its rows (sorted, within a scope) and *test* given rows.
An AND generates from its most selective child and tests the others on those
candidates only, so the cost follows the smallest part of the answer rather than
the size of the tag. The same nodes work for spec rows and for package ids.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from cachegql.index.disk.columns import Column, IdArray, Mask, Rows, SetColumn

__all__ = [
    "And",
    "Everything",
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
    "union",
    "within",
]

# Above this share of the scope, a union of posting lists costs more than a scan.
SCAN_SHARE = 0.25
MAX_MERGED_LISTS = 32


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
        self._size = int(column.postings.sizes(value_ids).sum()) if len(value_ids) else 0

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
        return self._value_mask()[self.column.codes[rows]]


class SetLeaf:
    """Rows whose set (stacks, variant atoms) holds at least one of `value_ids`."""

    def __init__(self, column: SetColumn, value_ids: IdArray) -> None:
        self.column, self.value_ids = column, value_ids
        self._size = int(column.postings.sizes(value_ids).sum()) if len(value_ids) else 0
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
    def __init__(self, children: Sequence[Node]) -> None:
        self.children = sorted(children, key=lambda c: c.estimate())

    def estimate(self) -> int:
        return self.children[0].estimate() if self.children else 1 << 62

    def rows(self, lo: int, hi: int) -> Rows:
        if not self.children:
            return Everything().rows(lo, hi)
        rows = self.children[0].rows(lo, hi)
        for child in self.children[1:]:
            if not len(rows):
                break
            rows = rows[child.test(rows)]
        return rows

    def test(self, rows: Rows) -> Mask:
        mask = np.ones(len(rows), dtype=np.bool_)
        for child in self.children:
            candidates = np.flatnonzero(mask)
            if not len(candidates):
                break
            mask[candidates] = child.test(rows[candidates])
        return mask


class Or:
    def __init__(self, children: Sequence[Node]) -> None:
        self.children = list(children)

    def estimate(self) -> int:
        return sum(c.estimate() for c in self.children)

    def rows(self, lo: int, hi: int) -> Rows:
        return union([c.rows(lo, hi) for c in self.children], lo, hi)

    def test(self, rows: Rows) -> Mask:
        mask = np.zeros(len(rows), dtype=np.bool_)
        for child in self.children:
            rest = np.flatnonzero(~mask)
            if not len(rest):
                break
            mask[rest] = child.test(rows[rest])
        return mask


class Not:
    def __init__(self, child: Node) -> None:
        self.child = child

    def estimate(self) -> int:
        return 1 << 62

    def rows(self, lo: int, hi: int) -> Rows:
        mask = np.ones(hi - lo, dtype=np.bool_)
        mask[self.child.rows(lo, hi) - lo] = False
        return (np.flatnonzero(mask) + lo).astype(np.int32)

    def test(self, rows: Rows) -> Mask:
        return ~self.child.test(rows)


def conjunction(parts: list[Node]) -> Node:
    """AND of `parts`, simplified: one part is itself, a `Nothing` wins."""
    if any(isinstance(p, Nothing) for p in parts):
        return Nothing()
    parts = [p for p in parts if not isinstance(p, Everything)]
    if not parts:
        return Everything()
    return parts[0] if len(parts) == 1 else And(parts)
