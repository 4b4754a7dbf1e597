"""Some rows' specs, read a field at a time: a page reads the columns it shows.

A page that shows each spec's hash, name and version reads those three columns for its
twenty rows, not the fourteen fields of twenty records. Each field is read for all the
rows at once, with one vectorised read per array (`.item` for a single row, where
numpy's fancy indexing costs more than the answer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from cachegql.index.fields import SPEC_FIELDS
from cachegql.index.records import SpecRecord

if TYPE_CHECKING:
    from cachegql.index.disk.snapshot import Snapshot

__all__ = ["SpecColumns", "row_reader"]


class SpecColumns:
    """The fields of the specs at `rows` (in that order), each read for all the rows
    when first asked for: `columns["package"][i]` is row `rows[i]`'s package."""

    __slots__ = ("_read", "_wanted", "rows", "snapshot")

    def __init__(self, snapshot: Snapshot, rows: list[int]) -> None:
        self.snapshot = snapshot
        self.rows = rows
        self._read: dict[str, list[Any]] = {}
        self._wanted: npt.NDArray[np.int64] | None = None

    def __getitem__(self, field: str) -> list[Any]:
        """The values of one `SpecRecord` field, by position in `rows`."""
        values = self._read.get(field)
        if values is None:
            if len(self.rows) == 1:  # a spec looked up by its hash: no numpy indexing
                self.one(field)
                return self._read[field]
            if not self.rows:
                return []
            self._count_read()
            values = self._read[field] = _READERS[field].many(self)
        return values

    def one(self, field: str) -> Any:
        """`self[field][0]` of a batch of one row, which has no column to share: a spec's
        fields each read alone (a call fewer each than through `__getitem__`)."""
        values = self._read.get(field)
        if values is None:
            self._count_read()
            values = self._read[field] = [_READERS[field].one(self.snapshot, self.rows[0])]
        return values[0]

    def _count_read(self) -> None:
        if not self._read:
            self.snapshot.spec_reads += 1  # a batch read, for tests that count them

    def record(self, at: int, *, tarballs: bool = True) -> SpecRecord:
        """The whole record of `rows[at]`; `tarballs=False` leaves its `tarball` None."""
        values: list[Any] = [
            self[field][at] if field != "tarball" or tarballs else None
            for field in SpecRecord._fields
        ]
        return SpecRecord(*values)

    def records(self, *, tarballs: bool = True) -> list[SpecRecord]:
        """The whole records of all the rows; `tarballs=False` leaves each `tarball` None
        (the biggest column, on disk: most callers never show it)."""
        fields = [
            self[f] if f != "tarball" or tarballs else [None] * len(self.rows)
            for f in SpecRecord._fields
        ]
        return [SpecRecord(*values) for values in zip(*fields, strict=True)]

    def codes(self, array: npt.NDArray[Any]) -> list[Any]:
        """`array`'s entries at the rows, as Python values (`many` readers: a batch of one
        row is read by `one`)."""
        if self._wanted is None:
            self._wanted = np.asarray(self.rows, dtype=np.int64)
        return array[self._wanted].tolist()  # type: ignore[no-any-return]


class _Reader(NamedTuple):
    """How a field is read: for many rows at once, and for one row alone."""

    many: Callable[[SpecColumns], list[Any]]
    one: Callable[[Snapshot, int], Any]


def _hashes(columns: SpecColumns) -> list[Any]:
    snapshot = columns.snapshot
    ranks = columns.codes(snapshot.hash_rank)
    return [h.decode() for h in snapshot.hash_sorted[np.asarray(ranks)].tolist()]


def _hash(snapshot: Snapshot, row: int) -> Any:
    return snapshot.hash_sorted.item(snapshot.hash_rank.item(row)).decode()


def _attribute(field: str) -> _Reader:
    def many(columns: SpecColumns) -> list[Any]:
        column = columns.snapshot.columns[field]
        values = column.values
        return [values[code] for code in columns.codes(column.codes)]

    def one(snapshot: Snapshot, row: int) -> Any:
        column = snapshot.columns[field]
        return column.values[column.codes.item(row)]

    return _Reader(many, one)


def _set(field: str, named: str | None = None) -> _Reader:
    """A set column's members, named by the snapshot's list `named` (else its own)."""

    def named_by(snapshot: Snapshot) -> Callable[[int], Any]:
        values = snapshot.sets[field].values if named is None else getattr(snapshot, named)
        return values.__getitem__

    def many(columns: SpecColumns) -> list[Any]:
        snapshot = columns.snapshot
        members = snapshot.set_members(field)
        value_of = named_by(snapshot)
        return [
            tuple(map(value_of, members[code]))
            for code in columns.codes(snapshot.sets[field].codes)
        ]

    def one(snapshot: Snapshot, row: int) -> Any:
        code = snapshot.sets[field].codes.item(row)
        return tuple(map(named_by(snapshot), snapshot.set_members(field)[code]))

    return _Reader(many, one)


def _coded(codes: str, named: str) -> _Reader:
    """The snapshot's list `named` at the codes of its array `codes`."""

    def many(columns: SpecColumns) -> list[Any]:
        values = getattr(columns.snapshot, named)
        return [values[code] for code in columns.codes(getattr(columns.snapshot, codes))]

    def one(snapshot: Snapshot, row: int) -> Any:
        return getattr(snapshot, named)[getattr(snapshot, codes).item(row)]

    return _Reader(many, one)


def _sizes(columns: SpecColumns) -> list[Any]:
    return [None if size < 0 else size for size in columns.codes(columns.snapshot.sizes)]


def _size(snapshot: Snapshot, row: int) -> Any:
    size = snapshot.sizes.item(row)
    return None if size < 0 else size


def _tags(columns: SpecColumns) -> list[Any]:
    return [columns.snapshot.tag] * len(columns.rows)


def _tag(snapshot: Snapshot, _row: int) -> Any:
    return snapshot.tag


def _tarballs(columns: SpecColumns) -> list[Any]:
    return columns.snapshot.tarballs.names(columns.rows)


def _tarball(snapshot: Snapshot, row: int) -> Any:
    return snapshot.tarballs.name(row)


# How each field of a record is read; the attribute fields (package, os, ...) from the
# field table, each a dictionary-coded column.
_READERS: dict[str, _Reader] = {
    "hash": _Reader(_hashes, _hash),
    "tag": _Reader(_tags, _tag),
    "versions": _set("versions"),
    "compiler": _coded("compiler_codes", "compilers"),
    "variants": _set("variants", "variants"),
    "stacks": _set("stacks"),
    "size": _Reader(_sizes, _size),
    "tarball": _Reader(_tarballs, _tarball),
    "flags": _coded("flag_codes", "flags"),
    **{f.name: _attribute(f.name) for f in SPEC_FIELDS if f.attribute},
}


def row_reader(field: str) -> Callable[[Snapshot, int], Any]:
    """How one row's `field` is read alone, as `reader(snapshot, row)`: what
    `SpecColumns.one` reads, with no batch to keep it in (a spec looked up by its hash
    reads a field again for each alias of it: one `.item` or two)."""
    return _READERS[field].one
