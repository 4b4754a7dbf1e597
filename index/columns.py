"""Dictionary-encoded columns with posting lists, the in-memory half of the index.

A `Column` gives each row one value; a `SetColumn` gives each row a set of values
(stacks, variants), stored once per distinct set. Both keep, per value, the sorted
rows that have it, so exact filters cost the size of their answer, not of the tag.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.int32]
Codes = npt.NDArray[np.int32]
Offsets = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class Postings:
    """Items grouped by value: the items with value v are `items[offsets[v]:offsets[v+1]]`."""

    items: Rows
    offsets: Offsets

    @classmethod
    def group(cls, values: Codes, num_values: int, items: Rows | None = None) -> Postings:
        """Group `items` (default: 0..n-1, kept ascending within a value) by `values`."""
        order = np.argsort(values, kind="stable")
        grouped = order.astype(np.int32) if items is None else items[order]
        counts = np.bincount(values, minlength=num_values)
        offsets = np.zeros(num_values + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        return cls(np.ascontiguousarray(grouped, dtype=np.int32), offsets)

    def __call__(self, value: int) -> Rows:
        return self.items[self.offsets[value] : self.offsets[value + 1]]

    def sizes(self, values: npt.NDArray[np.intp] | None = None) -> npt.NDArray[np.int64]:
        sizes = np.diff(self.offsets)
        return sizes if values is None else sizes[values]

    def save(self, folder: Path, name: str) -> None:
        np.save(folder / f"{name}.items.npy", self.items)
        np.save(folder / f"{name}.offsets.npy", self.offsets)

    @classmethod
    def load(cls, folder: Path, name: str) -> Postings:
        return cls(_load(folder, f"{name}.items"), _load(folder, f"{name}.offsets"))


@dataclass(frozen=True, slots=True)
class Column:
    """One value per row: `values[codes[row]]`, values in the column's own sort order."""

    name: str
    values: list[str]
    codes: Codes
    postings: Postings

    @classmethod
    def build(cls, name: str, values: list[str], codes: Codes) -> Column:
        return cls(name, values, codes, Postings.group(codes, len(values)))

    def save(self, folder: Path) -> None:
        np.save(folder / f"{self.name}.codes.npy", self.codes)
        self.postings.save(folder, self.name)

    @classmethod
    def load(cls, folder: Path, name: str, values: list[str]) -> Column:
        return cls(name, values, _load(folder, f"{name}.codes"), Postings.load(folder, name))


@dataclass(frozen=True, slots=True)
class SetColumn:
    """A set of values per row: row -> set id (`codes`) -> member values (`members`)."""

    name: str
    values: list[str]
    codes: Codes
    members: Postings
    postings: Postings
    set_postings: Postings

    @classmethod
    def build(
        cls, name: str, values: list[str], codes: Codes, set_offsets: Offsets, set_items: Codes
    ) -> SetColumn:
        """`set_offsets`/`set_items` list each set's member value ids (CSR)."""
        members = Postings(set_items, set_offsets)
        set_of_item = np.repeat(
            np.arange(len(set_offsets) - 1, dtype=np.int32), np.diff(set_offsets)
        )
        set_postings = Postings.group(set_items, len(values), items=set_of_item)
        rows_of_item, values_of_item = expand(codes, members)
        postings = Postings.group(values_of_item, len(values), items=rows_of_item)
        return cls(name, values, codes, members, postings, set_postings)

    @property
    def num_sets(self) -> int:
        return len(self.members.offsets) - 1

    def sets_with_any(self, value_ids: npt.NDArray[np.intp]) -> Mask:
        """A mask over set ids: the sets holding at least one of `value_ids`."""
        hit = np.zeros(self.num_sets, dtype=np.bool_)
        for value in value_ids:
            hit[self.set_postings(int(value))] = True
        return hit

    def save(self, folder: Path) -> None:
        np.save(folder / f"{self.name}.codes.npy", self.codes)
        for part in ("members", "postings", "set_postings"):
            getattr(self, part).save(folder, f"{self.name}.{part}")

    @classmethod
    def load(
        cls, folder: Path, name: str, values: list[str], codes: Codes | None = None
    ) -> SetColumn:
        return cls(
            name,
            values,
            _load(folder, f"{name}.codes") if codes is None else codes,
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


def _load(folder: Path, name: str) -> Any:
    # A plain ndarray view of the memory map: slices stay cheap views, pages load on use.
    return np.load(folder / f"{name}.npy", mmap_mode="r").view(np.ndarray)
