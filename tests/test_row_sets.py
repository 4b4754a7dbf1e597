"""The rows of a whole tag: made once, shared, and never changed by a query."""

from __future__ import annotations

import numpy as np
import pytest

from cachegql.index.query.rowsets import every_row


def test_the_whole_tag_s_rows_are_made_once_and_read_only() -> None:
    rows = every_row(0, 1000)
    assert rows.dtype == np.int32 and rows.tolist() == list(range(1000))
    assert every_row(0, 1000) is rows  # shared: not made again for the next query
    assert not rows.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        rows[0] = 5
    assert every_row(0, 1000).tolist() == list(range(1000))


def test_a_part_of_a_tag_is_its_own_rows() -> None:
    part = every_row(10, 20)
    assert part.tolist() == list(range(10, 20)) and part.dtype == np.int32
    assert every_row(10, 20) is not part and part.flags.writeable
    assert every_row(0, 0).tolist() == []
