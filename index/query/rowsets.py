"""Sorted row arrays: every row of a range, the part within a range, a union, membership, a
complement. Row arrays are read, never written: posting lists and `every_row` are shared."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cachegql.index.budget import check
from cachegql.index.disk.columns import Mask, Rows
from cachegql.index.disk.sorted_ids import sorted_union

__all__ = ["EMPTY", "SCAN_SHARE", "complement", "contains", "every_row", "union", "within"]

# Above this share of the scope, a union of posting lists costs more than a scan.
SCAN_SHARE = 0.25
EMPTY: Rows = np.zeros(0, dtype=np.int32)


def every_row(lo: int, hi: int) -> Rows:
    """The rows of [lo, hi), all of them: a read-only view of one shared range. An
    unfiltered page needs every row of its tag on every request, and making them cost
    100 to 180 µs at 1M specs, whatever the page showed."""
    every = _EVERY[0]
    if hi > len(every):  # grown to the largest scope met (4 MB at 1M), never shrunk
        every = np.arange(hi, dtype=np.int32)
        every.flags.writeable = False
        _EVERY[0] = every  # two threads growing it at once both get a correct range
    return every[lo:hi]


# One range for every tag, package list and build a server has loaded, in a list so
# that growing it is an item's assignment, not a global statement.
_EVERY: list[Rows] = [EMPTY]


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
        return EMPTY
    if len(parts) == 1:
        return parts[0]
    total = sum(len(p) for p in parts)
    if total > SCAN_SHARE * (hi - lo):
        mask = np.zeros(hi - lo, dtype=np.bool_)
        for part in parts:
            check()
            mask[part - lo] = True
        return (np.flatnonzero(mask) + lo).astype(np.int32)
    if disjoint:
        merged = np.concatenate(parts)
        merged.sort(kind="stable")  # timsort merges the sorted runs
        return merged
    return sorted_union(parts)


def contains(sorted_rows: Rows, rows: Rows) -> Mask:
    """For each of `rows`, whether it is in `sorted_rows`."""
    if not len(sorted_rows):
        return np.zeros(len(rows), dtype=np.bool_)
    positions = np.searchsorted(sorted_rows, rows).clip(max=len(sorted_rows) - 1)
    found: Mask = sorted_rows[positions] == rows
    return found


def complement(rows: Rows, lo: int, hi: int) -> Rows:
    """The rows of [lo, hi) that are not in `rows` (sorted, within [lo, hi))."""
    mask = np.ones(hi - lo, dtype=np.bool_)
    mask[rows - lo] = False
    return (np.flatnonzero(mask) + lo).astype(np.int32)
