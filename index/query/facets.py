"""Facets: counts per value over all rows of a result (not just a page)."""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from cachegql.index.budget import check
from cachegql.index.disk.columns import Narrow, Rows
from cachegql.index.disk.dictionary import Dictionary
from cachegql.index.disk.snapshot import Snapshot
from cachegql.index.fields import FACETS

__all__ = ["Bucket", "Facets"]

Bucket = tuple[str, int]
# Distinct stack sets counted between two checks of the time budget.
_SETS_PER_CHECK = 1024


class Facets:
    """Counts per value over all rows of a result, computed on demand.

    A result of a few rows (`few` or less: a page of one package) is counted in Python,
    value by value: numpy's dozen calls over a dictionary's every value cost more, and
    grow with the tag, not the answer. A result covering most of its tag is counted by
    its complement: the whole tag's counts are the posting list sizes, known in
    advance, minus those of the few rows left out. So a broad result costs no more than
    a narrow one.
    """

    few = 256

    def __init__(self, snapshot: Snapshot, rows: Rows) -> None:
        self.snapshot = snapshot
        self.rows = rows

    def buckets(self, name: str, first: int | None = None) -> list[Bucket]:
        """(value, count) for one facet: count descending, then value; the top `first`."""
        check()
        field = FACETS[name]
        dictionary = self.snapshot.dictionaries["stacks" if field is None else field]
        if len(self.rows) <= self.few:
            return _top_few(self._few_counts(field), dictionary, first)
        counts = self._counts(field)
        unknown = dictionary.ids.get("")  # the source does not say: not a value to count
        if unknown is not None:
            counts[unknown] = 0
        present = np.flatnonzero(counts)
        order = np.lexsort((dictionary.alphabetical_rank[present], -counts[present]))
        chosen = present[order if first is None else order[: max(first, 0)]]
        values = dictionary.values
        pairs = zip(chosen.tolist(), counts[chosen].tolist(), strict=True)
        return [(values[i], c) for i, c in pairs]

    def _few_counts(self, field: str | None) -> Counter[int]:
        snapshot = self.snapshot
        if field is not None:
            return Counter(snapshot.columns[field].codes[self.rows].tolist())
        # The stacks: each spec counts once per stack it is in.
        members = snapshot.set_members("stacks")
        counted: Counter[int] = Counter()
        for code, count in Counter(snapshot.sets["stacks"].codes[self.rows].tolist()).items():
            for stack in members[code]:
                counted[stack] += count
        return counted

    def _counts(self, field: str | None) -> npt.NDArray[np.int64]:
        snapshot = self.snapshot
        if field is not None:
            single = snapshot.columns[field]
            counts: npt.NDArray[np.int64] = self._count(
                single.codes, len(single.values), single.postings.sizes()
            )
            return counts
        column = snapshot.sets["stacks"]
        set_counts = self._count(column.codes, column.num_sets, snapshot.stack_set_sizes)
        counts = np.zeros(len(column.values), dtype=np.int64)
        for i, code in enumerate(np.flatnonzero(set_counts).tolist()):
            if not i % _SETS_PER_CHECK:
                check()
            counts[column.members(code)] += set_counts[code]
        return counts

    @cached_property
    def _complement(self) -> Rows | None:
        total = self.snapshot.num_specs
        if len(self.rows) <= total // 2:
            return None
        keep = np.ones(total, dtype=np.bool_)
        keep[self.rows] = False
        rest: Rows = np.flatnonzero(keep).astype(np.int32)
        return rest

    def _count(self, codes: Narrow, size: int, everything: npt.NDArray[np.int64]) -> Any:
        check()
        if self._complement is None:
            return np.bincount(codes[self.rows], minlength=size)
        return everything - np.bincount(codes[self._complement], minlength=size)


def _top_few(counted: Counter[int], dictionary: Dictionary, first: int | None) -> list[Bucket]:
    """`Facets.buckets` of counts by value id, in the same order."""
    unknown = dictionary.ids.get("")
    if unknown is not None:
        counted.pop(unknown, None)
    rank = dictionary.alphabetical_rank
    order = sorted(counted.items(), key=lambda item: (-item[1], rank.item(item[0])))
    values = dictionary.values
    return [(values[i], c) for i, c in (order if first is None else order[: max(first, 0)])]
