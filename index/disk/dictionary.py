"""The dictionary of a column: its distinct values, by id and in alphabetical order."""

from __future__ import annotations

import bisect
from functools import cached_property

import numpy as np

from cachegql.index.disk.columns import IdArray

__all__ = ["Dictionary"]


class Dictionary:
    """The distinct values of a column: ids by value, and values in alphabetical order."""

    def __init__(self, values: list[str]) -> None:
        self.values = values
        self.ids = {v: i for i, v in enumerate(values)}
        order = sorted(range(len(values)), key=values.__getitem__)
        self._sorted = [values[i] for i in order]
        self._sorted_ids = order

    def __len__(self) -> int:
        return len(self.values)

    def with_prefix(self, prefix: str) -> list[int]:
        """Ids of the values starting with `prefix`, ascending."""
        lo = bisect.bisect_left(self._sorted, prefix)
        hi = bisect.bisect_left(self._sorted, prefix + "\U0010ffff")
        return sorted(self._sorted_ids[lo:hi])

    @cached_property
    def ranks(self) -> list[int]:
        """`alphabetical_rank` as a list: read value by value, each an index, not a call."""
        ranks: list[int] = self.alphabetical_rank.tolist()
        return ranks

    @cached_property
    def alphabetical_rank(self) -> IdArray:
        """For each value id, its position in alphabetical order (ties in facets go by it)."""
        rank = np.empty(len(self.values), dtype=np.intp)
        rank[np.array(self._sorted_ids, dtype=np.intp)] = np.arange(len(self.values))
        return rank
