"""Facets of a few rows, counted in Python, are those numpy counts, bucket for bucket.

`Facets.buckets` counts a result of `Facets.few` rows or less value by value, and a larger
one with numpy over the dictionary's every value (or by its complement); both are run on
the same results of a demo index, for every facet, and compared. A field the result's
criteria pin to one value is not counted: its bucket is compared with the counted one.
"""

from __future__ import annotations

import numpy as np
import pytest

from cachegql.index import FACETS, Facets, Snapshot, SpecCriteria, StringMatch, find_specs
from cachegql.index.query.facets import _NO_ROWS, _contenders, stack_counts
from cachegql.index.query.filtering import pinned_values
from cachegql.index.query.rowsets import every_row


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
            many.few_values = -1  # sorted by numpy too
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


@pytest.mark.parametrize("name", sorted(FACETS))
def test_a_broad_result_counted_by_its_complement_is_counted_row_by_row(
    demo_snapshot: Snapshot, name: str
) -> None:
    total = demo_snapshot.num_specs
    left_out = np.random.default_rng(11).choice(total, total // 10, replace=False)
    keep = np.ones(total, dtype=np.bool_)
    keep[left_out] = False
    rows = np.flatnonzero(keep).astype(np.int32)
    by_complement, row_by_row = Facets(demo_snapshot, rows), Facets(demo_snapshot, rows)
    by_complement.few, row_by_row.few = -1, len(rows)
    by_complement.few_values = -1
    for first in (None, 2):
        assert by_complement.buckets(name, first) == row_by_row.buckets(name, first)
    assert by_complement._complement is not None  # the path under test was taken


def test_stacks_are_counted_alike_by_the_sets_matrix_and_by_their_members(
    demo_snapshot: Snapshot,
) -> None:
    column = demo_snapshot.sets["stacks"]
    matrix = demo_snapshot.stack_set_matrix
    assert matrix is not None  # the demo's sets are few
    random = np.random.default_rng(3)
    for share in (0.0, 0.1, 0.5, 1.0):
        set_counts = random.integers(1, 1000, column.num_sets) * (
            random.random(column.num_sets) < share
        )
        by_matrix = stack_counts(column, set_counts, matrix)
        by_members = stack_counts(column, set_counts, None)
        one_by_one = np.zeros(len(column.values), dtype=np.int64)
        for code in range(column.num_sets):
            one_by_one[column.members(code)] += set_counts[code]
        assert by_matrix.tolist() == by_members.tolist() == one_by_one.tolist()
    assert by_matrix.sum() > 0  # sets were counted


def test_without_a_matrix_the_stacks_facet_is_the_same(
    demo_snapshot: Snapshot, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sets times stacks over `STACK_MATRIX_CELLS`: the facet counts by the members."""
    results = _results(demo_snapshot)
    expected = [Facets(demo_snapshot, rows).buckets("stacks") for rows in results]
    monkeypatch.setitem(vars(demo_snapshot), "stack_set_matrix", None)
    for rows, buckets in zip(results, expected, strict=True):
        many = Facets(demo_snapshot, rows)
        many.few, many.few_values = -1, -1
        assert many.buckets("stacks") == buckets


def test_a_package_s_rows_are_counted_in_place(demo_snapshot: Snapshot) -> None:
    starts = demo_snapshot.package_start
    sizes = np.diff(starts)
    package = int(np.argmax(sizes))
    lo, hi = int(starts[package]), int(starts[package + 1])
    rows = np.arange(lo, hi, dtype=np.int32)
    gapped = np.delete(rows, len(rows) // 2)
    assert Facets(demo_snapshot, rows)._span == (lo, hi)
    assert Facets(demo_snapshot, gapped)._span is None
    assert Facets(demo_snapshot, rows[::-1].copy())._span is None  # ranked: gathered
    for name in FACETS:
        in_place, gathered = Facets(demo_snapshot, rows), Facets(demo_snapshot, rows)
        in_place.few = gathered.few = -1
        in_place.few_values = gathered.few_values = -1
        gathered._span = None
        assert in_place.buckets(name) == gathered.buckets(name)


@pytest.mark.parametrize("name", sorted(FACETS))
def test_a_small_dictionary_s_counts_are_sorted_as_numpy_sorts_them(
    demo_snapshot: Snapshot, name: str
) -> None:
    total = demo_snapshot.num_specs
    broad = np.arange(total // 10, total, dtype=np.int32)  # counted by its complement
    for rows in [*_results(demo_snapshot), broad]:
        for first in (None, 0, 2):
            in_python, by_numpy = Facets(demo_snapshot, rows), Facets(demo_snapshot, rows)
            in_python.few = by_numpy.few = -1
            in_python.few_values, by_numpy.few_values = 1 << 30, -1
            assert in_python.buckets(name, first) == by_numpy.buckets(name, first)


@pytest.mark.parametrize("name", sorted(FACETS))
def test_the_whole_tag_is_counted_without_a_complement(demo_snapshot: Snapshot, name: str) -> None:
    total = demo_snapshot.num_specs
    whole = every_row(0, total)
    shuffled = np.random.default_rng(5).permutation(total).astype(np.int32)  # a search's order
    one_short = [np.arange(1, total, dtype=np.int32), np.sort(shuffled[1:]), shuffled[1:]]
    for rows in (whole, shuffled, *one_short):
        row_by_row = Facets(demo_snapshot, rows)
        row_by_row.few = len(rows)
        facets = Facets(demo_snapshot, rows)
        facets.few, facets.few_values = -1, -1
        for first in (None, 0, 2):
            assert facets.buckets(name, first) == row_by_row.buckets(name, first)
        # The whole tag takes the shortcut; one row short is counted by its complement.
        assert (facets._complement is _NO_ROWS) == (len(rows) == total)


@pytest.mark.parametrize("name", sorted(FACETS))
def test_the_first_buckets_are_the_first_of_all_buckets(demo_snapshot: Snapshot, name: str) -> None:
    total = demo_snapshot.num_specs
    results = [*_results(demo_snapshot), every_row(0, total), np.arange(1, total, dtype=np.int32)]
    partitioned = 0
    for rows in results:
        facets = Facets(demo_snapshot, rows)
        facets.few, facets.few_values = -1, -1
        every = facets.buckets(name)
        for first in (0, 1, 2, 3, 5, 8):
            assert facets.buckets(name, first) == every[:first]
            partitioned += len(every) > 4 * first > 0
    if name in ("versions", "packages"):
        assert partitioned  # the partition was taken, not only the short way


def test_the_contenders_of_the_first_buckets_keep_every_tie_at_the_edge() -> None:
    counts = np.array([0, 5, 3, 3, 3, 9, 1, 3, 2, 0, 4, 1], dtype=np.int64)
    present = np.flatnonzero(counts)
    # Ten values present: for the first 2, those counting at least the 2nd largest (5).
    assert _contenders(present, counts, 2).tolist() == [1, 5]
    assert _contenders(present, counts, 1).tolist() == [5]
    assert _contenders(present, counts, 0).tolist() == []
    assert _contenders(present, counts, 4).tolist() == present.tolist()  # too few to cut
    # The 2nd largest count (3) is held by twelve values: every one stays a contender.
    many = np.array([0, *([3] * 12), 7, 1], dtype=np.int64)
    assert _contenders(np.flatnonzero(many), many, 2).tolist() == list(range(1, 14))


def _pinning(snapshot: Snapshot) -> list[SpecCriteria]:
    """Criteria that pin a field to one value, alone and with more conditions: values common
    and rare, a second field pinned (results of any size, none included), a value the tag
    lacks, and an `eq` that another operator of its field refuses (nothing pinned)."""
    criteria: list[SpecCriteria] = []
    for field in (f for f in FACETS.values() if f is not None):
        counts = np.bincount(snapshot.columns[field].codes, minlength=1)
        values = snapshot.dictionaries[field].values
        known = [int(i) for i in np.argsort(-counts) if counts[i] and values[i]]
        for value in (values[i] for i in known[:1] + known[-1:]):
            criteria.append(SpecCriteria(fields=((field, StringMatch(eq=value)),)))
            package = ("package", StringMatch(eq=snapshot.package(0).name))
            criteria.append(SpecCriteria(fields=(package, (field, StringMatch(eq=value)))))
            refused = StringMatch(eq=value, prefix=value + "~")
            criteria.append(SpecCriteria(fields=((field, refused),)))
        criteria.append(SpecCriteria(fields=((field, StringMatch(eq="no such value")),)))
    return criteria


def test_a_field_the_criteria_pin_is_the_bucket_counting_finds(demo_snapshot: Snapshot) -> None:
    pinned = 0
    for criteria in _pinning(demo_snapshot):
        rows = find_specs(demo_snapshot, criteria, ordered=False)
        for name in FACETS:
            for first in (None, 0, 1, 3):
                told, counted = Facets(demo_snapshot, rows, criteria), Facets(demo_snapshot, rows)
                assert told.buckets(name, first) == counted.buckets(name, first), (criteria, name)
                pinned += FACETS[name] in told._pinned
    assert pinned > 100  # the pinned fields were answered without counting


def test_an_eq_pins_its_field_only_where_it_admits_one_value(demo_snapshot: Snapshot) -> None:
    value = demo_snapshot.dictionaries["os"].values[demo_snapshot.columns["os"].codes[0]]
    eq = StringMatch(eq=value)
    assert pinned_values(demo_snapshot, SpecCriteria(fields=(("os", eq),))) == {
        "os": int(demo_snapshot.columns["os"].codes[0])
    }
    assert pinned_values(demo_snapshot, SpecCriteria(fields=(("os", StringMatch(eq="?")),))) == {}
    assert pinned_values(demo_snapshot, SpecCriteria(fields=(("os", StringMatch(ne=value)),))) == {}
    assert pinned_values(demo_snapshot, None) == {}
