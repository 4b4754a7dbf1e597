"""One tag of a built index, loaded for reading: columns, hashes, packages, stacks."""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from index.columns import Codes, Column, Postings, Rows, SetColumn
from index.criteria import StringMatch
from index.hashes import prefix_range
from index.model import Compiler, parse_compiler
from index.textindex import TextIndex
from index.variants import Variant, parse_variant
from index.versions import VersionKey, VersionRange, version_key

SINGLE_COLUMNS = (
    "package",
    "version",
    "compiler",
    "compiler_name",
    "compiler_raw",
    "os",
    "platform",
    "target",
)
SET_COLUMNS = ("versions", "stacks", "variants", "atoms")
IdArray = npt.NDArray[np.intp]


class Dictionary:
    """The distinct values of a column, searchable by the string operators."""

    def __init__(self, values: list[str]) -> None:
        self.values = values
        self.ids = {v: i for i, v in enumerate(values)}
        order = sorted(range(len(values)), key=values.__getitem__)
        self._sorted = [values[i] for i in order]
        self._sorted_ids = order

    def __len__(self) -> int:
        return len(self.values)

    @cached_property
    def alphabetical_rank(self) -> npt.NDArray[np.intp]:
        """For each value id, its position in alphabetical order (ties in facets go by it)."""
        rank = np.empty(len(self.values), dtype=np.intp)
        rank[np.array(self._sorted_ids, dtype=np.intp)] = np.arange(len(self.values))
        return rank

    def select(self, match: StringMatch) -> IdArray:
        """Ids of the values that satisfy every operator of `match`, ascending."""
        if match.eq is not None:
            candidates = [self.ids[match.eq]] if match.eq in self.ids else []
        elif match.in_ is not None:
            candidates = sorted({self.ids[v] for v in match.in_ if v in self.ids})
        elif match.prefix is not None:
            lo = bisect.bisect_left(self._sorted, match.prefix)
            hi = bisect.bisect_left(self._sorted, match.prefix + "\U0010ffff")
            candidates = sorted(self._sorted_ids[lo:hi])
        else:
            candidates = list(range(len(self.values)))
        selected = [i for i in candidates if match.matches(self.values[i])]
        return np.array(selected, dtype=np.intp)


@dataclass(frozen=True, slots=True)
class SpecData:
    """Everything the API shows of one spec."""

    row: int
    hash: str
    package_id: int
    name: str
    tag: str
    versions: list[str]
    compiler: Compiler
    os: str
    platform: str
    target: str
    variants: list[Variant]
    stacks: list[str]
    size: int | None
    tarball: str | None


class Snapshot:
    """One tag (a snapshot of the build cache): specs sorted by package name, then hash."""

    def __init__(self, tag: str, folder: Path) -> None:
        self.tag = tag
        self.folder = folder
        dictionaries: dict[str, Any] = json.loads((folder / "dictionaries.json").read_text())
        self.columns = {c: Column.load(folder, c, dictionaries[c]) for c in SINGLE_COLUMNS}
        self.sets = {c: SetColumn.load(folder, c, dictionaries[c]) for c in SET_COLUMNS}
        self.dictionaries = {c: Dictionary(dictionaries[c]) for c in SINGLE_COLUMNS + SET_COLUMNS}
        self.hash_sorted: npt.NDArray[np.bytes_] = _array(folder, "hash.sorted")
        self.hash_rows: Rows = _array(folder, "hash.rows")
        self.hash_rank: Rows = _array(folder, "hash.rank")
        self.package_start: npt.NDArray[np.int64] = _array(folder, "package.start")
        self.package_stacks = SetColumn.load(folder, "package_stacks", dictionaries["stacks"])
        self.package_atoms = SetColumn.load(folder, "package_atoms", dictionaries["atoms"])
        package_ids = np.arange(len(self.package_start) - 1, dtype=np.int32)
        # Packages as rows of their own, for package filters: each package is its own value.
        self.package_names = Column(
            "package_name",
            self.columns["package"].values,
            package_ids,
            Postings(package_ids, np.arange(len(package_ids) + 1, dtype=np.int64)),
        )
        self.sizes: npt.NDArray[np.int64] = _array(folder, "size")
        self._tarball_offsets: npt.NDArray[np.int64] = _array(folder, "tarball.offsets")
        self._tarballs = _blob(folder / "tarball.blob")
        self.stack_summaries: list[dict[str, Any]] = dictionaries["stack_summaries"]
        self.num_specs = len(self.hash_rank)
        self.num_packages = len(self.package_start) - 1
        self.compilers = [parse_compiler(raw) for raw in self.columns["compiler_raw"].values]
        self.variants = [parse_variant(raw) for raw in self.sets["variants"].values]
        self.package_cache = lru_cache(maxsize=4096)(self._package)
        self.text = TextIndex(folder / "text")

    # Packages

    def package_id(self, name: str) -> int | None:
        return self.dictionaries["package"].ids.get(name)

    def package(self, package_id: int) -> PackageData:
        return self.package_cache(package_id)

    def _package(self, package_id: int) -> PackageData:
        return PackageData(self, package_id)

    def package_range(self, package_id: int) -> tuple[int, int]:
        return int(self.package_start[package_id]), int(self.package_start[package_id + 1])

    @cached_property
    def stack_set_sizes(self) -> npt.NDArray[np.int64]:
        """How many specs have each distinct set of stacks."""
        column = self.sets["stacks"]
        return np.bincount(column.codes, minlength=column.num_sets)

    # Versions

    @cached_property
    def _version_keys(self) -> list[VersionKey]:
        return [version_key(v) for v in self.columns["version"].values]

    def version_ids(self, ranges: Iterable[VersionRange]) -> IdArray:
        """Ids of the versions in any of `ranges`; the dictionary is in version order."""
        keys = self._version_keys
        ids: set[int] = set()
        for part in ranges:
            if part.exact and part.low is not None:
                lo, hi = bisect.bisect_left(keys, part.low), bisect.bisect_right(keys, part.low)
            else:
                lo = 0 if part.low is None else bisect.bisect_left(keys, part.low)
                hi = len(keys) if part.high is None else bisect.bisect_left(keys, part.high)
            ids.update(range(lo, hi))
        return np.array(sorted(ids), dtype=np.intp)

    def compiler_ids(self, name: str, ranges: Iterable[VersionRange]) -> IdArray:
        """Ids of the normalized compilers named `name` whose version is in `ranges`."""
        ranges = list(ranges)
        ids = [
            i
            for i, text in enumerate(self.columns["compiler"].values)
            if (parsed := parse_compiler(text)).name == name
            and parsed.version is not None
            and any(r.contains(parsed.version) for r in ranges)
        ]
        return np.array(ids, dtype=np.intp)

    # Specs

    def hash_prefix_rows(self, prefix: str) -> tuple[int, int]:
        """The [lo, hi) range of hash ranks starting with `prefix` (see `hash_rows`)."""
        return prefix_range(self.hash_sorted, prefix)

    def hash_of(self, row: int) -> str:
        return bytes(self.hash_sorted[self.hash_rank[row]]).decode()

    def specs(self, rows: Rows | list[int]) -> list[SpecData]:
        """The data of each row, in the given order; one vectorised read per column."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(rows):
            return []
        hashes = self.hash_sorted[self.hash_rank[rows]].tolist()
        packages = self.columns["package"].codes[rows].tolist()
        package_names = self.columns["package"].values
        compiler = self.columns["compiler_raw"].codes[rows].tolist()
        os_codes = self.columns["os"].codes[rows].tolist()
        platform_codes = self.columns["platform"].codes[rows].tolist()
        target_codes = self.columns["target"].codes[rows].tolist()
        version_sets = self._members("versions", rows)
        variant_sets = self._members("variants", rows)
        stack_sets = self._members("stacks", rows)
        sizes = self.sizes[rows].tolist()
        starts = self._tarball_offsets[rows].tolist()
        ends = self._tarball_offsets[rows + 1].tolist()
        os_names = self.columns["os"].values
        platforms = self.columns["platform"].values
        targets = self.columns["target"].values
        version_names = self.sets["versions"].values
        stack_names = self.sets["stacks"].values
        return [
            SpecData(
                row=int(row),
                hash=hashes[i].decode(),
                package_id=packages[i],
                name=package_names[packages[i]],
                tag=self.tag,
                versions=[version_names[v] for v in version_sets[i]],
                compiler=self.compilers[compiler[i]],
                os=os_names[os_codes[i]],
                platform=platforms[platform_codes[i]],
                target=targets[target_codes[i]],
                variants=[self.variants[v] for v in variant_sets[i]],
                stacks=[stack_names[s] for s in stack_sets[i]],
                size=None if sizes[i] < 0 else sizes[i],
                tarball=self._tarballs[starts[i] : ends[i]].tobytes().decode()
                if ends[i] > starts[i]
                else None,
            )
            for i, row in enumerate(rows.tolist())
        ]

    def _members(self, column: str, rows: npt.NDArray[np.integer[Any]]) -> list[list[int]]:
        sets = self.sets[column]
        codes = sets.codes[rows].tolist()
        return [self._set_members(column, code) for code in codes]

    @cached_property
    def _set_member_lists(self) -> dict[str, list[list[int]]]:
        lists = {}
        for column in ("versions", "variants", "stacks"):
            members = self.sets[column].members
            items = members.items.tolist()
            offsets = members.offsets.tolist()
            lists[column] = [items[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]
        return lists

    def _set_members(self, column: str, code: int) -> list[int]:
        return self._set_member_lists[column][code]


class PackageData:
    """One package of a tag; each summary is computed from its rows on first use."""

    def __init__(self, snapshot: Snapshot, package_id: int) -> None:
        self.snapshot = snapshot
        self.id = package_id
        self.name = snapshot.columns["package"].values[package_id]
        self.tag = snapshot.tag
        self.lo, self.hi = snapshot.package_range(package_id)

    @property
    def num_specs(self) -> int:
        return self.hi - self.lo

    def _distinct(self, column: str) -> list[int]:
        codes = self.snapshot.columns[column].codes[self.lo : self.hi]
        return [int(c) for c in np.unique(codes)]

    @cached_property
    def versions(self) -> list[str]:
        """Distinct versions, newest first (the dictionary is in Spack order)."""
        names = self.snapshot.sets["versions"].values
        rows = np.arange(self.lo, self.hi, dtype=np.int32)
        column = self.snapshot.sets["versions"]
        codes = np.unique(column.codes[rows])
        present = {int(v) for code in codes.tolist() for v in column.members(code).tolist()}
        return [names[v] for v in sorted(present, reverse=True)]

    @cached_property
    def compilers(self) -> list[str]:
        return self._names("compiler")

    @cached_property
    def oss(self) -> list[str]:
        return self._names("os")

    @cached_property
    def platforms(self) -> list[str]:
        return self._names("platform")

    @cached_property
    def targets(self) -> list[str]:
        return self._names("target")

    def _names(self, column: str) -> list[str]:
        values = self.snapshot.columns[column].values
        return [values[c] for c in self._distinct(column)]

    @cached_property
    def stacks(self) -> list[str]:
        column = self.snapshot.package_stacks
        members = column.members(int(column.codes[self.id])).tolist()
        return [column.values[s] for s in members]

    @cached_property
    def num_specs_by_stack(self) -> list[tuple[str, int]]:
        column = self.snapshot.sets["stacks"]
        set_counts = np.bincount(column.codes[self.lo : self.hi], minlength=column.num_sets)
        counts: dict[int, int] = {}
        for code in np.flatnonzero(set_counts).tolist():
            for stack in column.members(code).tolist():
                counts[stack] = counts.get(stack, 0) + int(set_counts[code])
        return [(column.values[s], counts[s]) for s in sorted(counts)]


def _blob(path: Path) -> npt.NDArray[np.uint8]:
    if not path.stat().st_size:  # an empty file cannot be memory-mapped
        return np.zeros(0, dtype=np.uint8)
    return np.memmap(path, dtype=np.uint8, mode="r").view(np.ndarray)


def _array(folder: Path, name: str) -> Any:
    return np.load(folder / f"{name}.npy", mmap_mode="r").view(np.ndarray)


__all__ = ["Codes", "Dictionary", "PackageData", "Snapshot", "SpecData"]
