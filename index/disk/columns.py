"""Dictionary-encoded columns with posting lists, the in-memory half of the index.

A `Column` gives each row one value; a `SetColumn` gives each row a set of values
(stacks, variants), stored once per distinct set. Both keep, per value, the sorted
rows that have it, so exact filters cost the size of their answer, not of the tag.
The writer builds and saves them (`index.disk.write`); here they are read back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = [
    "Codes",
    "Column",
    "IdArray",
    "Mask",
    "Offsets",
    "Postings",
    "Rows",
    "SetColumn",
    "expand",
    "load_array",
]

Rows = npt.NDArray[np.int32]
Codes = npt.NDArray[np.int32]
Offsets = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
IdArray = npt.NDArray[np.intp]


@dataclass(frozen=True, slots=True)
class Postings:
    """Items grouped by value: the items with value v are `items[offsets[v]:offsets[v+1]]`."""

    items: Rows
    offsets: Offsets

    def __call__(self, value: int) -> Rows:
        return self.items[self.offsets[value] : self.offsets[value + 1]]

    def sizes(self, values: IdArray | None = None) -> npt.NDArray[np.int64]:
        sizes = np.diff(self.offsets)
        return sizes if values is None else sizes[values]

    @classmethod
    def load(cls, folder: Path, name: str) -> Postings:
        return cls(load_array(folder, f"{name}.items"), load_array(folder, f"{name}.offsets"))


@dataclass(frozen=True, slots=True)
class Column:
    """One value per row: `values[codes[row]]`, values in the column's own sort order."""

    name: str
    values: list[str]
    codes: Codes
    postings: Postings

    @classmethod
    def load(cls, folder: Path, name: str, values: list[str]) -> Column:
        return cls(name, values, load_array(folder, f"{name}.codes"), Postings.load(folder, name))


@dataclass(frozen=True, slots=True)
class SetColumn:
    """A set of values per row: row -> set id (`codes`) -> member values (`members`)."""

    name: str
    values: list[str]
    codes: Codes
    members: Postings
    postings: Postings
    set_postings: Postings

    @property
    def num_sets(self) -> int:
        return len(self.members.offsets) - 1

    def sets_with_any(self, value_ids: IdArray) -> Mask:
        """A mask over set ids: the sets holding at least one of `value_ids`."""
        hit = np.zeros(self.num_sets, dtype=np.bool_)
        for value in value_ids:
            hit[self.set_postings(int(value))] = True
        return hit

    @classmethod
    def load(cls, folder: Path, name: str, values: list[str]) -> SetColumn:
        return cls(
            name,
            values,
            load_array(folder, f"{name}.codes"),
            Postings.load(folder, f"{name}.members"),
            Postings.load(folder, f"{name}.postings"),
            Postings.load(folder, f"{name}.set_postings"),
        )


def expand(codes: Codes, members: Postings, rows: Rows | None = None) -> tuple[Rows, Codes]:
    """Pairs (row, value) for every member of every row's set, rows ascending."""
    if rows is None:
        rows = np.arange(len(codes), dtype=np.int32)
    row_sets = codes[rows]
    lengths = members.sizes()[row_sets]
    starts = members.offsets[row_sets]
    total = int(lengths.sum())
    # Index of each expanded item: its set's start plus its position within the set.
    position = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    items = members.items[np.repeat(starts, lengths) + position]
    return np.repeat(rows, lengths).astype(np.int32), items.astype(np.int32)


def load_array(folder: Path, name: str) -> Any:
    """A saved array, memory-mapped: slices stay cheap views, pages load on first use."""
    return np.load(folder / f"{name}.npy", mmap_mode="r").view(np.ndarray)
