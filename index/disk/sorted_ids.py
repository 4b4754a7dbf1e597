"""The union and the intersection of ascending id arrays (posting lists, rows), merged.

numpy's set routines sort what they are given from scratch: `np.unique` hashes its input
and then sorts the distinct values, and `np.intersect1d` sorts the concatenation with the
default introsort, which on this project's machine costs 20 ns an id of unordered ids even
for a few thousand (numpy 2.4). Arrays that are each ascending are runs a stable sort
(timsort) finds and merges in about linear time. The posting lists of `py`'s query at 1M
specs (2,661 documents): `np.unique` of them 216 µs, `sorted_union` 5.9 µs. The arrays
must each be ascending (posting lists, rows) for `sorted_intersection`; `sorted_union`
gives `np.unique`'s answer for any, only faster for ascending ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

__all__ = ["LOOKUP_RATIO", "sorted_intersection", "sorted_union"]

Ids = TypeVar("Ids", bound=npt.NDArray[Any])
"""An id array; the result has the type of the arguments (int32 rows stay int32)."""
LOOKUP_RATIO = 16
"""`sorted_intersection` looks ids up when one array is longer than this many times the other."""


def sorted_union(parts: Sequence[Ids]) -> Ids:
    """`np.unique(np.concatenate(parts))`: fastest when each part is ascending."""
    merged = cast(Ids, np.concatenate(parts))
    merged.sort(kind="stable")  # timsort merges the ascending runs
    if len(merged) < 2:
        return merged
    first = np.empty(len(merged), dtype=np.bool_)
    first[0] = True
    np.not_equal(merged[1:], merged[:-1], out=first[1:])
    return cast(Ids, merged[first])


def sorted_intersection(a: Ids, b: Ids) -> Ids:
    """`np.intersect1d(a, b, assume_unique=True)` of two ascending arrays of distinct ids:
    merged as `sorted_union` merges them, or, for one array many times the other's length,
    each id of the shorter looked up in the longer (20 ids in 100,000: 3 µs, merged 119)."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if len(short) * LOOKUP_RATIO < len(long):
        positions = np.searchsorted(long, short)
        positions[positions == len(long)] = 0
        found = short[long[positions] == short]
        return cast(Ids, found.astype(np.result_type(a, b), copy=False))
    merged = np.concatenate((a, b))
    merged.sort(kind="stable")
    return cast(Ids, merged[:-1][merged[1:] == merged[:-1]])
