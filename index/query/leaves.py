"""The leaves of a plan: the rows of a whole scope or none, rows known in advance, a range,
a hash prefix, and the values of a column (one of some, none of some, a set holding one).

Each can generate its rows within a scope and test given rows, as every plan node does.
Tests gather with `take`: indexing by int32 rows or narrow codes converts them to numpy's
own index type on every call, which made each gather 1.5 to 1.8 times as slow.
"""

from __future__ import annotations

import numpy as np

from cachegql.index.disk.columns import Column, IdArray, Mask, Postings, Rows, SetColumn
from cachegql.index.query.rowsets import (
    EMPTY,
    SCAN_SHARE,
    complement,
    contains,
    every_row,
    union,
    within,
)

__all__ = [
    "Everything",
    "ExceptLeaf",
    "HashLeaf",
    "Nothing",
    "RangeLeaf",
    "RowsLeaf",
    "SetLeaf",
    "ValuesLeaf",
]

# Above this many values, a leaf scans the scope's codes rather than merge posting lists.
MAX_MERGED_LISTS = 32


def _total(postings: Postings, value_ids: IdArray) -> int:
    """How many items the posting lists of `value_ids` hold (without sizing every list)."""
    if not len(value_ids):
        return 0
    offsets = postings.offsets
    if len(value_ids) == 1:  # the usual `eq`: two items, not three arrays
        value = value_ids.item(0)
        size: int = offsets.item(value + 1) - offsets.item(value)
        return size
    return int((offsets[value_ids + 1] - offsets[value_ids]).sum())


class Everything:
    def estimate(self) -> int:
        return 1 << 62

    def rows(self, lo: int, hi: int) -> Rows:
        return every_row(lo, hi)

    def test(self, rows: Rows) -> Mask:
        return np.ones(len(rows), dtype=np.bool_)


class Nothing:
    def estimate(self) -> int:
        return 0

    def rows(self, lo: int, hi: int) -> Rows:
        return EMPTY

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
        ranks = self._hash_rank.take(rows)
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
            matched: Mask = self.column.codes.take(rows) == self.value_ids[0]
            return matched
        if not len(self.value_ids):
            return np.zeros(len(rows), dtype=np.bool_)
        return self._value_mask().take(self.column.codes.take(rows))


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
        return complement(self._excluded.rows(lo, hi), lo, hi)

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
        return self._set_mask().take(self.column.codes.take(rows))
