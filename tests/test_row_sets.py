"""Every row of a tag: one shared, read-only range, which a query reads and never changes."""

from __future__ import annotations

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
