"""Facets of a few rows, counted in Python, are those numpy counts, bucket for bucket.

`Facets.buckets` counts a result of `Facets.few` rows or less value by value, and a larger
one with numpy over the dictionary's every value (or by its complement); both are run on
the same results of a demo index, for every facet, and compared.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from cachegql.demo import DemoConfig, MirrorConfig, write_mirror, write_pages
from cachegql.index import FACETS, Facets, IndexStore, Snapshot, build_index


@pytest.fixture(scope="module", params=["pages", "mirror"])
def snapshot(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Snapshot]:
    folder = tmp_path_factory.mktemp(request.param)
    if request.param == "pages":
        write_pages(DemoConfig(specs=3000), folder / "pages")
        build_index([folder / "pages"], folder / "ix")
    else:  # namespaces, and stacks as a build cache has them
        summary = write_mirror(MirrorConfig(specs=800, packages=40, stacks=4, seed=3), folder)
        build_index([summary.mirror], folder / "ix", tag="develop")
    store = IndexStore(folder / "ix")
    yield store.snapshot(store.default_tag)
    store.close()


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
def test_a_few_rows_are_counted_as_numpy_counts_them(snapshot: Snapshot, name: str) -> None:
    compared = 0
    for rows in _results(snapshot):
        for first in (None, 0, 1, 3):
            few, many = Facets(snapshot, rows), Facets(snapshot, rows)
            few.few, many.few = len(rows), -1
            expected = many.buckets(name, first)
            assert few.buckets(name, first) == expected
            compared += bool(expected)
    field = FACETS[name] or "stacks"
    if any(snapshot.dictionaries[field].values):  # pages record no namespace
        assert compared > 20  # not only empty results


def test_ties_go_by_value_and_unknown_values_are_not_counted(snapshot: Snapshot) -> None:
    rows = np.arange(0, min(200, snapshot.num_specs), dtype=np.int32)
    for name in FACETS:
        buckets = Facets(snapshot, rows).buckets(name)
        assert buckets == sorted(buckets, key=lambda b: (-b[1], b[0]))
        assert all(value != "" for value, _ in buckets)
