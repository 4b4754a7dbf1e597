"""Facets of a few rows, counted in Python, are those numpy counts, bucket for bucket.

`Facets.buckets` counts a result of `Facets.few` rows or less value by value, and a larger
one with numpy over the dictionary's every value (or by its complement); both are run on
the same results of a demo index, for every facet, and compared.
"""

from __future__ import annotations

import numpy as np
import pytest

from cachegql.index import FACETS, Facets, Snapshot


def _results(snapshot: Snapshot) -> list[np.ndarray]:
    """Results as the planner makes them (ascending rows): packages' rows, random sets of
    every size up to past `few`, none, and one."""
    random = np.random.default_rng(7)
    starts = snapshot.package_start
    packages = [
        np.arange(starts[i], starts[i + 1], dtype=np.int32)
        for i in range(0, min(len(starts) - 1, 40), 3)
    ]
    sizes = [0, 1, 2, 5, 20, 100, Facets.few, Facets.few + 1]
    drawn = [np.sort(random.choice(snapshot.num_specs, n, replace=False)) for n in sizes]
    return packages + [d.astype(np.int32) for d in drawn]


@pytest.mark.parametrize("name", sorted(FACETS))
def test_a_few_rows_are_counted_as_numpy_counts_them(demo_snapshot: Snapshot, name: str) -> None:
    compared = 0
    for rows in _results(demo_snapshot):
        for first in (None, 0, 1, 3):
            few, many = Facets(demo_snapshot, rows), Facets(demo_snapshot, rows)
            few.few, many.few = len(rows), -1
            expected = many.buckets(name, first)
            assert few.buckets(name, first) == expected
            compared += bool(expected)
    field = FACETS[name] or "stacks"
    if any(demo_snapshot.dictionaries[field].values):  # pages record no namespace
        assert compared > 20  # not only empty results


def test_ties_go_by_value_and_unknown_values_are_not_counted(demo_snapshot: Snapshot) -> None:
    rows = np.arange(0, min(200, demo_snapshot.num_specs), dtype=np.int32)
    for name in FACETS:
        buckets = Facets(demo_snapshot, rows).buckets(name)
        assert buckets == sorted(buckets, key=lambda b: (-b[1], b[0]))
        assert all(value != "" for value, _ in buckets)
