"""Dictionary-encoded columns with posting lists, the in-memory half of the index.

A `Column` gives each row one value; a `SetColumn` gives each row a set of values
(stacks, variants), stored once per distinct set. Both keep, per value, the sorted
rows that have it, so exact filters cost the size of their answer, not of the tag.
The writer builds and saves them (`index.disk.write`); here they are read back.

Read back, they are copies in memory, checked for type and shape, not memory maps: a
mapped file truncated while it is served kills the process (SIGBUS) at its next read,
and one rewritten in place changes answers silently, while a copy taken from the
verified file is out of reach of both. Only posting items too large to copy (the DAG's
closure: 2.2 GB at 1M build-cache specs) stay in their file, read list by list with
`pread` (`FilePostings`), which fails a read cleanly when the file changed.
"""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cachegql.index.disk.verify import IndexChangedError, IndexLoadError, Stamp

__all__ = [
    "LARGE_FILE",
    "Codes",
    "Column",
    "FileArray",
    "FilePostings",
    "IdArray",
    "Mask",
    "Narrow",
    "Offsets",
    "Postings",
    "Rows",
    "SetColumn",
    "check_array",
    "check_codes",
    "expand",
    "load_array",
    "narrow",
    "narrow_offsets",
    "narrowest",
]

Rows = npt.NDArray[np.int32]
Codes = npt.NDArray[np.int32]
Narrow = npt.NDArray[np.integer[Any]]
"""Codes as held in memory: in the narrowest unsigned type their dictionary fits (`narrow`)."""
Offsets = npt.NDArray[np.signedinteger[Any]]
"""Where each list starts: `int64` as saved, `int32` in memory where they fit (`narrow_offsets`)."""
Mask = npt.NDArray[np.bool_]
IdArray = npt.NDArray[np.intp]

LARGE_FILE = 64 << 20
"""Posting items in a larger file stay in it (`FilePostings`) instead of being copied into
memory. At 1M specs, only the DAG's closure (2.2 GB) and name postings (240 MB) are larger;
the largest column posting list is 16 MB."""


@dataclass(frozen=True, slots=True)
class Postings:
    """Items grouped by value: the items with value v are `items[offsets[v]:offsets[v+1]]`."""

    items: Rows
    offsets: Offsets

    def __call__(self, value: int) -> Rows:
        offsets = self.offsets  # bounds as Python ints: no numpy scalar made for each
        return self.items[offsets.item(value) : offsets.item(value + 1)]

    def sizes(self, values: IdArray | None = None) -> npt.NDArray[np.int64]:
        return _sizes(self.offsets, values)

    def lists(self, values: Narrow) -> tuple[Rows, npt.NDArray[np.int64]]:
        """The items of each of `values`' lists, one list after another, and their lengths."""
        values = values.astype(np.intp, copy=False)  # `+ 1` must not wrap in a narrow type
        starts = self.offsets[values]
        lengths = (self.offsets[values + 1] - starts).astype(np.int64)
        # Each item's index: its list's start plus its position within the list.
        shifts = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        items: Rows = self.items[shifts + np.arange(len(shifts))]
        return items, lengths

    @classmethod
    def read(
        cls, folder: Path, name: str, num_values: int | None = None, bound: int | None = None
    ) -> Postings:
        """Posting lists copied into memory, checked: `num_values` lists (when given) whose
        offsets ascend from 0 to the number of items, each item below `bound` (when given)."""
        offsets = _offsets(folder, name, num_values)
        items = load_array(folder, f"{name}.items", "int32", int(offsets[-1]))
        if bound is not None:
            check_codes(folder / f"{name}.items.npy", items, bound)
        return cls(items, offsets)

    @classmethod
    def load(cls, folder: Path, name: str) -> Postings | FilePostings:
        """Posting lists, copied into memory unless their items file is larger than
        `LARGE_FILE`: those are read from the file, list by list."""
        path = folder / f"{name}.items.npy"
        try:
            large = path.stat().st_size > LARGE_FILE
        except OSError as exc:
            raise IndexLoadError(f"{path} cannot be read: {exc.strerror or exc}") from exc
        if not large:
            return cls.read(folder, name)
        offsets = _offsets(folder, name, None)
        return FilePostings(FileArray.npy(path, "int32", int(offsets[-1])), offsets)


@dataclass(frozen=True, slots=True)
class FilePostings:
    """Posting lists whose items stay in their file (read with `FileArray`); the offsets,
    one per list, are in memory. Answers as `Postings` does, a list at a time (no `lists`:
    set members, which `lists` serves, are always in memory)."""

    items: FileArray
    offsets: Offsets

    def __call__(self, value: int) -> Rows:
        rows: Rows = self.items.read(int(self.offsets[value]), int(self.offsets[value + 1]))
        return rows

    def sizes(self, values: IdArray | None = None) -> npt.NDArray[np.int64]:
        return _sizes(self.offsets, values)


def _sizes(offsets: Offsets, values: IdArray | None) -> npt.NDArray[np.int64]:
    sizes = np.diff(offsets)
    return sizes if values is None else sizes[values]


def _offsets(folder: Path, name: str, num_values: int | None) -> Offsets:
    path = folder / f"{name}.offsets.npy"
    offsets: Offsets = load_array(
        folder, f"{name}.offsets", "int64", None if num_values is None else num_values + 1
    )
    if not len(offsets) or offsets[0] != 0 or (np.diff(offsets) < 0).any():
        raise IndexLoadError(f"{path} does not ascend from 0: the posting lists are damaged")
    return offsets


@dataclass(frozen=True, slots=True)
class Column:
    """One value per row: `values[codes[row]]`, values in the column's own sort order."""

    name: str
    values: list[str]
    codes: Narrow
    postings: Postings

    @classmethod
    def load(cls, folder: Path, name: str, values: list[str], num_rows: int) -> Column:
        """The column `name` of `num_rows` rows, checked against its `values`."""
        codes = load_array(folder, f"{name}.codes", "int32", num_rows)
        check_codes(folder / f"{name}.codes.npy", codes, len(values))
        return cls(
            name,
            values,
            narrow(codes, len(values)),
            Postings.read(folder, name, len(values), num_rows),
        )


MASKS_BYTES = 4 << 20
"""What a set column keeps of the masks of single values (`SetColumn.sets_with_any`)."""


@dataclass(frozen=True, slots=True)
class SetColumn:
    """A set of values per row: row -> set id (`codes`) -> member values (`members`)."""

    name: str
    values: list[str]
    codes: Narrow
    members: Postings
    postings: Postings
    set_postings: Postings
    # The masks of single values asked for so far, read-only, within `MASKS_BYTES` (two
    # threads may each keep one past it). Never given: a copy starts with none of them.
    _masks: dict[int, Mask] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def num_sets(self) -> int:
        return len(self.members.offsets) - 1

    def sets_with_any(self, value_ids: IdArray) -> Mask:
        """A mask over set ids, read and never written: the sets holding at least one of
        `value_ids`. A single value's is kept for the next query that asks for it (a
        variant's atom, as every query filtering on it does): made, it is a scatter over
        every set of the tag (7,397 sets at 1M specs, 8 µs in a loop, 20 in a server)."""
        single = int(value_ids[0]) if len(value_ids) == 1 else None
        known = None if single is None else self._masks.get(single)
        if known is not None:
            return known
        hit = np.zeros(self.num_sets, dtype=np.bool_)
        for value in value_ids:
            hit[self.set_postings(int(value))] = True
        if single is not None and (len(self._masks) + 1) * len(hit) <= MASKS_BYTES:
            hit.flags.writeable = False
            self._masks[single] = hit
        return hit

    @classmethod
    def load(cls, folder: Path, name: str, values: list[str], num_rows: int) -> SetColumn:
        """The set column `name` of `num_rows` rows, checked against its `values`."""
        members = Postings.read(folder, f"{name}.members", bound=len(values))
        num_sets = len(members.offsets) - 1
        codes = load_array(folder, f"{name}.codes", "int32", num_rows)
        check_codes(folder / f"{name}.codes.npy", codes, num_sets)
        return cls(
            name,
            values,
            narrow(codes, num_sets),
            members,
            Postings.read(folder, f"{name}.postings", len(values), num_rows),
            Postings.read(folder, f"{name}.set_postings", len(values), num_sets),
        )


def expand(codes: Narrow, members: Postings, rows: Rows | None = None) -> tuple[Rows, Codes]:
    """Pairs (row, value) for every member of every row's set, rows ascending."""
    if rows is None:
        rows = np.arange(len(codes), dtype=np.int32)
    items, lengths = members.lists(codes[rows])
    return np.repeat(rows, lengths).astype(np.int32), items.astype(np.int32)


def load_array(folder: Path, name: str, dtype: str | None = None, length: int | None = None) -> Any:
    """The saved array `name`, copied into memory (read-only, as the file is) and checked:
    one dimension, and `dtype` and `length` when given."""
    path = folder / f"{name}.npy"
    try:
        with path.open("rb") as file:
            if file.read(len(_NPY_MAGIC)) != _NPY_MAGIC:
                raise IndexLoadError(f"{path} is not a numpy array file (.npy)")
            file.seek(0)
            array = np.load(file, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise IndexLoadError(f"{path} is not a readable array: {exc}") from exc
    checked = check_array(path, array, dtype, length)
    checked.flags.writeable = False
    return checked


_NPY_MAGIC = b"\x93NUMPY"


def check_array(path: Path, array: Any, dtype: str | None, length: int | None) -> Any:
    """`array` as read from `path`, if it has one dimension, `dtype` and `length`."""
    if not isinstance(array, np.ndarray):
        raise IndexLoadError(f"{path} holds a {type(array).__name__}, not an array")
    _check_layout(path, array.shape, array.dtype, dtype, length)
    return array


def _check_layout(
    path: Path, shape: tuple[int, ...], found: np.dtype[Any], dtype: str | None, length: int | None
) -> None:
    if len(shape) != 1:
        raise IndexLoadError(f"{path} holds an array of shape {shape}, expected one dimension")
    if dtype is not None and found != np.dtype(dtype):
        raise IndexLoadError(f"{path} holds {found} values, expected {np.dtype(dtype)}")
    if length is not None and shape[0] != length:
        raise IndexLoadError(f"{path} holds {shape[0]} values, expected {length}")


def check_codes(path: Path, codes: npt.NDArray[np.integer[Any]], bound: int) -> None:
    """Every value of `codes` (read from `path`) is an index below `bound`."""
    if len(codes) and (int(codes.min()) < 0 or int(codes.max()) >= bound):
        raise IndexLoadError(
            f"{path} holds values in [{int(codes.min())}, {int(codes.max())}], "
            f"expected [0, {bound})"
        )


def narrow_offsets(offsets: Offsets) -> Offsets:
    """Checked `offsets` in 32 bits when the items they point into are fewer than 2**31
    (a DAG of 10M edges: 4 bytes a node instead of 8), read-only; else as they are."""
    if len(offsets) and int(offsets[-1]) <= np.iinfo(np.int32).max:
        small: Offsets = offsets.astype(np.int32)
        small.flags.writeable = False
        return small
    return offsets


def narrow(codes: Narrow, bound: int) -> Narrow:
    """Checked `codes` (all below `bound`) copied into the narrowest unsigned type that
    holds them, read-only: most dictionaries have under 256 values (`os`, `target`) or
    65,536 (`package`), so a code takes 1 or 2 bytes in memory rather than the 4 of the
    file (the format keeps `int32`, whatever the dictionary's size)."""
    dtype = narrowest(bound)
    if dtype is None:
        return codes
    small: Narrow = codes.astype(dtype)
    small.flags.writeable = False
    return small


def narrowest(bound: int) -> type[np.unsignedinteger[Any]] | None:
    """The narrowest unsigned type below 32 bits that holds codes below `bound`; None:
    none does."""
    for dtype in (np.uint8, np.uint16):
        if bound <= np.iinfo(dtype).max + 1:
            return dtype
    return None


class FileArray:
    """A one-dimensional array left in its file and read by slices with `os.pread`.

    Never memory-mapped: reading a file truncated while it is served comes back short and
    fails with `IndexChangedError`, where a mapped read would kill the process (SIGBUS).
    Each read first compares the file's stamp (`fstat`, about a microsecond) with the one
    it had when opened, so a file rewritten in place fails too, rather than answering from
    other data. Safe between threads (`pread` has no shared position); the descriptor is
    closed when the array is freed, without a reference cycle.
    """

    def __init__(self, path: Path, dtype: npt.DTypeLike, start: int, count: int) -> None:
        self.path = path
        self.dtype = np.dtype(dtype)
        self._start, self._count = start, count
        self._fd = os.open(path, os.O_RDONLY)
        weakref.finalize(self, os.close, self._fd)
        self._stamp = Stamp.of(os.fstat(self._fd))
        expected = start + count * self.dtype.itemsize
        if self._stamp.size != expected:
            raise IndexLoadError(f"{path} is {self._stamp.size} bytes, its header says {expected}")

    @classmethod
    def npy(cls, path: Path, dtype: str, length: int) -> FileArray:
        """The array saved at `path` by `np.save`, checked: one dimension, `dtype`, `length`."""
        try:
            with path.open("rb") as file:
                version = np.lib.format.read_magic(file)
                if version == (1, 0):
                    shape, _fortran, stored = np.lib.format.read_array_header_1_0(file)
                else:
                    shape, _fortran, stored = np.lib.format.read_array_header_2_0(file)
                start = file.tell()
        except (OSError, ValueError, EOFError) as exc:
            raise IndexLoadError(f"{path} is not a readable array: {exc}") from exc
        _check_layout(path, shape, stored, dtype, length)
        return cls(path, stored, start, length)

    @classmethod
    def raw(cls, path: Path) -> FileArray:
        """The bytes of the file at `path`."""
        return cls(path, np.uint8, 0, path.stat().st_size)

    def __len__(self) -> int:
        return self._count

    def read(self, lo: int, hi: int) -> npt.NDArray[Any]:
        """Items `lo` to `hi` (clipped, as a slice is), as a new read-only array."""
        lo, hi = max(0, lo), min(hi, self._count)
        if hi <= lo:
            return np.zeros(0, dtype=self.dtype)
        now = Stamp.of(os.fstat(self._fd))
        if now != self._stamp:
            raise IndexChangedError(
                f"{self.path} {self._stamp.describe_change(now)} while served; "
                "it cannot be read until a new build is published"
            )
        size = (hi - lo) * self.dtype.itemsize
        data = _pread(self._fd, size, self._start + lo * self.dtype.itemsize)
        if len(data) != size:
            raise IndexChangedError(f"{self.path} was cut short while served")
        return np.frombuffer(data, dtype=self.dtype)


def _pread(fd: int, size: int, offset: int) -> bytes:
    """Up to `size` bytes at `offset`: several reads when one returns less (as a read of
    more than 2 GiB does on Linux), fewer bytes only at the end of the file."""
    parts = []
    while size:
        part = os.pread(fd, size, offset)
        if not part:
            break
        parts.append(part)
        size -= len(part)
        offset += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)
