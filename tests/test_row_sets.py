"""Every row of a tag: one shared, read-only range, which a query reads and never changes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from cachegql.index import Snapshot
from cachegql.index.query.answers import find_packages, find_specs
from cachegql.index.query.rowsets import every_row


def test_every_row_is_a_read_only_view_of_one_shared_range() -> None:
    rows = every_row(0, 1000)
    assert rows.dtype == np.int32 and rows.tolist() == list(range(1000))
    assert not rows.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        rows[0] = 5
    part = every_row(10, 20)
    assert part.tolist() == list(range(10, 20)) and not part.flags.writeable
    assert np.shares_memory(part, rows)  # not made again for the next query
    assert every_row(0, 0).tolist() == []


def test_a_larger_scope_grows_the_range_and_earlier_views_stay_right() -> None:
    small = every_row(0, 100)
    large = every_row(0, 5000)
    assert large.tolist() == list(range(5000))
    assert small.tolist() == list(range(100))  # a view of the range it was taken from
    assert np.shares_memory(every_row(0, 100), large)


def test_an_unfiltered_query_reads_the_shared_range(demo_snapshot: Snapshot) -> None:
    specs = find_specs(demo_snapshot)
    assert specs.tolist() == list(range(demo_snapshot.num_specs))
    assert np.shares_memory(specs, every_row(0, demo_snapshot.num_specs))
    packages = find_packages(demo_snapshot)
    assert np.shares_memory(packages, every_row(0, demo_snapshot.num_packages))
    assert not specs.flags.writeable and not packages.flags.writeable


def test_a_single_values_set_mask_is_kept_read_only(demo_snapshot: Snapshot) -> None:
    """A variant's atom filters by the mask of the sets holding it: made once per column
    and value, then given to every query asking (never to be written)."""
    column = demo_snapshot.sets["atoms"]
    items, lengths = column.members.lists(np.arange(column.num_sets))
    members = [set(m.tolist()) for m in np.split(items, np.cumsum(lengths)[:-1])]
    for value in range(min(len(column.values), 40)):
        ids = np.array([value], dtype=np.intp)
        mask = column.sets_with_any(ids)
        assert mask.tolist() == [value in m for m in members]
        assert column.sets_with_any(ids) is mask
        assert not mask.flags.writeable
    pair = np.array([0, 1], dtype=np.intp)
    either = column.sets_with_any(pair)
    assert either.tolist() == [0 in m or 1 in m for m in members]
    assert column.sets_with_any(pair) is not either, "only single values are kept"


def test_set_masks_are_kept_within_their_bound(
    demo_snapshot: Snapshot, monkeypatch: pytest.MonkeyPatch
) -> None:
    column = replace(demo_snapshot.sets["stacks"])  # a copy keeps none of the masks
    monkeypatch.setattr("cachegql.index.disk.columns.MASKS_BYTES", 0)
    ids = np.array([len(column.values) - 1], dtype=np.intp)
    mask = column.sets_with_any(ids)
    assert mask.any(), "the last stack is in some set"
    assert column.sets_with_any(ids) is not mask, "over the bound: made again"
