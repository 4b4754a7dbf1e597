"""One package of a tag, read from its rows: its versions, distinct values and stacks."""

from __future__ import annotations

from functools import cached_property

import numpy as np

from cachegql.index.disk.columns import Column, SetColumn

__all__ = ["PackageData"]


class PackageData:
    """One package of a tag; each summary is computed from its rows on first use."""

    def __init__(
        self,
        tag: str,
        package_id: int,
        lo: int,
        hi: int,
        columns: dict[str, Column],
        sets: dict[str, SetColumn],
    ) -> None:
        self.tag = tag
        self.id = package_id
        self.name = columns["package"].values[package_id]
        self.lo, self.hi = lo, hi
        self._columns = columns
        self._sets = sets

    @property
    def num_specs(self) -> int:
        return self.hi - self.lo

    def distinct(self, field: str) -> list[str]:
        """The distinct values of a spec field among this package's specs, sorted."""
        column = self._columns[field]
        codes = np.unique(column.codes[self.lo : self.hi])
        return [value for c in codes.tolist() if (value := column.values[c])]

    @cached_property
    def versions(self) -> list[str]:
        """Distinct versions, newest first (the dictionary is in Spack order)."""
        column = self._sets["versions"]
        codes = np.unique(column.codes[self.lo : self.hi])
        present = {v for code in codes.tolist() for v in column.members(code).tolist()}
        return [column.values[v] for v in sorted(present, reverse=True)]

    @cached_property
    def stacks(self) -> list[str]:
        return [stack for stack, _ in self.num_specs_by_stack]

    @cached_property
    def num_specs_by_stack(self) -> list[tuple[str, int]]:
        column = self._sets["stacks"]
        set_counts = np.bincount(column.codes[self.lo : self.hi], minlength=column.num_sets)
        counts: dict[int, int] = {}
        for code in np.flatnonzero(set_counts).tolist():
            for stack in column.members(code).tolist():
                counts[stack] = counts.get(stack, 0) + int(set_counts[code])
        return [(column.values[s], counts[s]) for s in sorted(counts)]
