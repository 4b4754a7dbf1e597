"""Unions and intersections of ascending id arrays give numpy's own set routines' answers."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from hypothesis import given
from hypothesis import strategies as st

from cachegql.index.disk.sorted_ids import LOOKUP_RATIO, sorted_intersection, sorted_union

DTYPES = (np.int32, np.intp)
ids = st.lists(st.integers(0, 300), max_size=80)


def ascending(values: list[int], dtype: type) -> npt.NDArray[np.integer]:
    return read_only(np.array(sorted(set(values)), dtype=dtype))


def read_only(array: npt.NDArray[np.integer]) -> npt.NDArray[np.integer]:
    """As posting lists and rows are shared: an attempt to sort one in place raises."""
    array.flags.writeable = False
    return array


@given(st.lists(ids, min_size=1, max_size=6), st.sampled_from(DTYPES))
def test_a_union_of_ascending_arrays_is_numpys(parts: list[list[int]], dtype: type) -> None:
    arrays = [ascending(p, dtype) for p in parts]
    expected = np.unique(np.concatenate(arrays))
    found = sorted_union(arrays)
    assert found.dtype == expected.dtype and found.tolist() == expected.tolist()


@given(st.lists(ids, min_size=1, max_size=4))
def test_a_union_of_any_arrays_is_numpys(parts: list[list[int]]) -> None:
    # Not only ascending runs: duplicates and disorder within a part are merged too.
    arrays = [read_only(np.array(p, dtype=np.int64)) for p in parts]
    assert sorted_union(arrays).tolist() == np.unique(np.concatenate(arrays)).tolist()


@given(ids, ids, st.sampled_from(DTYPES), st.sampled_from(DTYPES))
def test_an_intersection_is_numpys(a: list[int], b: list[int], da: type, db: type) -> None:
    left, right = ascending(a, da), ascending(b, db)
    expected = np.intersect1d(left, right, assume_unique=True)
    found = sorted_intersection(left, right)
    assert found.dtype == expected.dtype and found.tolist() == expected.tolist()


@given(st.lists(st.integers(0, 10_000), max_size=5), st.sampled_from(DTYPES))
def test_a_short_array_is_looked_up_in_a_long_one(few: list[int], dtype: type) -> None:
    short = ascending(few, dtype)
    long = read_only(np.arange(0, 10_000, 3, dtype=np.intp))
    assert len(short) * LOOKUP_RATIO < len(long)  # the lookup's side of the rule
    expected = np.intersect1d(short, long, assume_unique=True)
    for found in (sorted_intersection(short, long), sorted_intersection(long, short)):
        assert found.dtype == expected.dtype and found.tolist() == expected.tolist()
    past_the_end: npt.NDArray[np.integer] = np.array([10_000, 20_000], dtype=dtype)  # past `long`
    assert sorted_intersection(past_the_end, long).tolist() == []
