"""What changed between two tags: the specs added, removed and kept, by full hash.

A spec is its full hash. Each tag keeps its hashes sorted (`Snapshot.hash_sorted`), so
whether one tag's specs are in the other is a vectorised binary search of one array in
the other (`np.searchsorted`), and the per-package counts are `np.bincount`s of package
codes mapped onto one sorted list of the names of both tags. The work is a few passes
over the two tags' columns in numpy, chunked so that the time budget is checked between
chunks; no step runs in Python once per spec. The rows each side keeps are sorted by row,
that is by package then hash, so one package's added (or removed) specs are a slice
found by binary search.

A filter applies on each side in that side's tag: the diff is between the specs of `old`
that match it there and the specs of `new` that match it there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cachegql.index.budget import check
from cachegql.index.disk.columns import Mask, Rows
from cachegql.index.disk.snapshot import Snapshot
from cachegql.index.query.answers import find_specs
from cachegql.index.query.criteria import SpecCriteria
from cachegql.index.query.rowsets import every_row

__all__ = ["PackageChange", "TagDiff", "tag_diff"]

# Hashes looked up in the other tag between two checks of the time budget (a few ms).
_CHUNK = 1 << 16

Counts = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class PackageChange:
    """One package's specs added in the new tag, removed from the old one, and in both."""

    name: str
    added: int
    removed: int
    unchanged: int


@dataclass(frozen=True, slots=True, eq=False)
class TagDiff:
    """The specs that differ between `old` and `new`, and the packages they belong to."""

    old: Snapshot
    new: Snapshot
    added_rows: Rows
    """Rows of `new` whose hash `old` lacks, ascending (by package, then hash)."""
    removed_rows: Rows
    """Rows of `old` whose hash `new` lacks, ascending."""
    num_unchanged: int
    names: list[str]
    """The packages with a spec added or removed, by name."""
    added: Counts
    removed: Counts
    unchanged: Counts
    """Per package of `names`: specs added, removed, and in both tags (counted in `new`)."""

    @property
    def num_added(self) -> int:
        return len(self.added_rows)

    @property
    def num_removed(self) -> int:
        return len(self.removed_rows)

    def packages(self, start: int, stop: int) -> list[PackageChange]:
        """The changed packages [start, stop) in name order: one page, not all of them."""
        return [
            PackageChange(name, added, removed, unchanged)
            for name, added, removed, unchanged in zip(
                self.names[start:stop],
                self.added[start:stop].tolist(),
                self.removed[start:stop].tolist(),
                self.unchanged[start:stop].tolist(),
                strict=True,
            )
        ]

    def added_in(self, package: str) -> Rows:
        """Rows of `new` added in `package`, by hash."""
        return _rows_of(self.new, self.added_rows, package)

    def removed_in(self, package: str) -> Rows:
        """Rows of `old` removed from `package`, by hash."""
        return _rows_of(self.old, self.removed_rows, package)


def tag_diff(old: Snapshot, new: Snapshot, criteria: SpecCriteria | None = None) -> TagDiff:
    """The specs of `new` and not `old` (added), of `old` and not `new` (removed), and of
    both (unchanged), among those matching `criteria` in their own tag; per package too."""
    old_rows = find_specs(old, criteria)
    new_rows = find_specs(new, criteria)
    in_new = _present(old, old_rows, new, new_rows)
    in_old = _present(new, new_rows, old, old_rows)
    check()
    added_rows, removed_rows = new_rows[~in_old], old_rows[~in_new]
    names, old_ids, new_ids = _shared_names(old, new)
    size = len(names)
    added = np.bincount(new_ids[new.columns["package"].codes[added_rows]], minlength=size)
    removed = np.bincount(old_ids[old.columns["package"].codes[removed_rows]], minlength=size)
    kept = new.columns["package"].codes[new_rows[in_old]]
    unchanged = np.bincount(new_ids[kept], minlength=size)
    changed = np.flatnonzero(added + removed)
    return TagDiff(
        old=old,
        new=new,
        added_rows=added_rows,
        removed_rows=removed_rows,
        num_unchanged=len(kept),
        names=names[changed].tolist(),
        added=added[changed],
        removed=removed[changed],
        unchanged=unchanged[changed],
    )


def _present(own: Snapshot, rows: Rows, other: Snapshot, other_rows: Rows) -> Mask:
    """For each of `rows` of `own`, whether its hash is one of `other_rows` of `other`.

    The hashes are looked up in hash order: needles in ascending order make the binary
    searches walk `other.hash_sorted` forward, which is ~9 times faster than looking them
    up in row order (measured at 1M specs), and costs one sort of the rows' hash ranks."""
    whole = len(rows) == own.num_specs
    ranks: Rows = every_row(0, own.num_specs) if whole else np.sort(own.hash_rank[rows])
    found = np.zeros(own.num_specs, dtype=np.bool_)  # by hash rank in `own`
    if other.num_specs:
        chosen: Mask | None = None
        if len(other_rows) != other.num_specs:
            chosen = np.zeros(other.num_specs, dtype=np.bool_)
            chosen[other.hash_rank[other_rows]] = True  # by hash rank in `other`
        last = other.num_specs - 1
        for start in range(0, len(ranks), _CHUNK):
            check()
            part = ranks[start : start + _CHUNK]
            hashes = own.hash_sorted[part]
            places = np.searchsorted(other.hash_sorted, hashes).clip(max=last)
            hit = other.hash_sorted[places] == hashes
            if chosen is not None:
                hit &= chosen[places]
            found[part[hit]] = True
    present: Mask = found[own.hash_rank[rows]]
    return present


def _shared_names(old: Snapshot, new: Snapshot) -> tuple[npt.NDArray[np.str_], Rows, Rows]:
    """The package names of both tags, sorted, and where each tag's package ids map in it."""
    old_names = np.asarray(old.columns["package"].values, dtype=np.str_)
    new_names = np.asarray(new.columns["package"].values, dtype=np.str_)
    names = np.union1d(old_names, new_names)
    old_ids = np.searchsorted(names, old_names).astype(np.int32)
    new_ids = np.searchsorted(names, new_names).astype(np.int32)
    return names, old_ids, new_ids


def _rows_of(snapshot: Snapshot, rows: Rows, package: str) -> Rows:
    """The part of the ascending `rows` of `snapshot` that belongs to `package`."""
    package_id = snapshot.package_id(package)
    if package_id is None:
        return rows[:0]
    lo, hi = np.searchsorted(rows, snapshot.package_range(package_id))
    return rows[lo:hi]
