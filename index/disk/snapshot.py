"""One tag of a built index, loaded for reading: columns, hashes, packages, stacks.

Nothing here points back at its `Snapshot`, so that a snapshot no longer served is
freed by reference counting alone, the moment its last request ends.

Loading checks that the arrays fit together (`tag_files`), so that a build whose files
are intact but inconsistent is refused with the file named; what is read from a loaded
snapshot is here (specs, dependencies, hashes, versions, compilers), its packages in
`package_data`.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cachegql.index.disk.columns import (
    Column,
    IdArray,
    Postings,
    Rows,
    SetColumn,
    check_codes,
    load_array,
    narrow,
)
from cachegql.index.disk.dictionary import Dictionary
from cachegql.index.disk.layout import (
    DAG_FOLDER,
    DICTIONARIES,
    NODES_FOLDER,
    TEXT_FOLDER,
)
from cachegql.index.disk.package_data import PackageData
from cachegql.index.disk.spec_columns import SpecColumns, row_reader
from cachegql.index.disk.tag_files import Dictionaries, bounds, checked_dag, value_names
from cachegql.index.disk.tarballs import TarballNames
from cachegql.index.disk.text import TextIndex
from cachegql.index.fields import SPEC_FIELDS
from cachegql.index.records import SpecRecord
from cachegql.index.spack.compilers import Compiler
from cachegql.index.spack.hashes import hash_directory, prefix_range
from cachegql.index.spack.variants import Variant
from cachegql.index.spack.versions import VersionKey, VersionRange, version_key

__all__ = ["DependencyData", "Dictionary", "PackageData", "Snapshot"]

# numpy's product of int64 matrices costs every cell (no BLAS): above this it costs more
# than adding each set's count to its stacks, wherever they are few (measured, 2026-11-27).
# A few hundred sets of a few dozen stacks, as the public cache has, are under it.
STACK_MATRIX_CELLS = 1 << 14

SET_COLUMNS = ("versions", "stacks", "variants", "atoms", "flag_atoms")

# Below this many specs a tag's hashes are searched whole: a few probes, no directory kept.
DIRECTORY_MIN_SPECS = 4096


@dataclass(frozen=True, slots=True)
class DependencyData:
    """A direct dependency of a spec; `row` is its spec row when it is a binary of the tag."""

    name: str
    hash: str
    version: str | None
    deptypes: tuple[str, ...]
    virtuals: tuple[str, ...]
    row: int | None


class Snapshot:
    """One tag (a snapshot of the build cache): specs sorted by package name, then hash.

    A tag read from build caches also has `nodes` (the DAG nodes that are not its
    binaries, as a snapshot of their own) and `dag`; a tag read from pages has neither.
    """

    def __init__(self, tag: str, folder: Path) -> None:
        self.tag = tag
        self.folder = folder
        stored = Dictionaries(folder / DICTIONARIES)
        # The hashes first: their number is the length of every other column.
        self.hash_rank: Rows = load_array(folder, "hash.rank", "int32")
        num_rows = self.num_specs = len(self.hash_rank)
        self.hash_sorted: npt.NDArray[np.bytes_] = load_array(
            folder, "hash.sorted", "S32", num_rows
        )
        self.hash_rows: Rows = load_array(folder, "hash.rows", "int32", num_rows)
        check_codes(folder / "hash.rank.npy", self.hash_rank, num_rows)
        check_codes(folder / "hash.rows.npy", self.hash_rows, num_rows)
        self.columns = {
            f.name: Column.load(folder, f.name, stored.values(f.name), num_rows)
            for f in SPEC_FIELDS
        }
        self.sets = {
            c: SetColumn.load(folder, c, value_names(stored.values(c)), num_rows)
            for c in SET_COLUMNS
        }
        self.dictionaries = {
            **{name: Dictionary(column.values) for name, column in self.columns.items()},
            **{name: Dictionary(column.values) for name, column in self.sets.items()},
        }
        self.num_packages = len(self.columns["package"].values)
        self.package_start: npt.NDArray[np.int64] = bounds(
            folder, "package.start", self.num_packages, num_rows, "the number of specs"
        )
        self.package_stacks = SetColumn.load(
            folder, "package_stacks", stored.values("stacks"), self.num_packages
        )
        self.package_atoms = SetColumn.load(
            folder, "package_atoms", stored.values("atoms"), self.num_packages
        )
        package_ids = np.arange(self.num_packages, dtype=np.int32)
        # Packages as rows of their own, for package filters: each package is its own value.
        self.package_names = Column(
            "package_name",
            self.columns["package"].values,
            package_ids,
            Postings(package_ids, np.arange(len(package_ids) + 1, dtype=np.int64)),
        )
        self.sizes: npt.NDArray[np.int64] = load_array(folder, "size", "int64", num_rows)
        self.tarballs = TarballNames(folder, num_rows)
        self.stack_summaries: list[dict[str, Any]] = stored.values("stack_summaries")
        # Parsed at ingest and stored in parts: rebuilt here without parsing again.
        self.compilers = [Compiler(*parts) for parts in stored.values("compiler_record")]
        compiler_codes = load_array(folder, "compiler_record.codes", "int32", num_rows)
        check_codes(folder / "compiler_record.codes.npy", compiler_codes, len(self.compilers))
        self.compiler_codes = narrow(compiler_codes, len(self.compilers))
        self.variants = [Variant(*parts) for parts in stored.values("variants")]
        self.flags = [
            tuple((kind, tuple(values)) for kind, values in flags)
            for flags in stored.values("flags_record")
        ]
        flag_codes = load_array(folder, "flags_record.codes", "int32", num_rows)
        check_codes(folder / "flags_record.codes.npy", flag_codes, len(self.flags))
        self.flag_codes = narrow(flag_codes, len(self.flags))
        # The nodes table has no text index: it is filtered, never searched.
        text = folder / TEXT_FOLDER
        self._text = TextIndex(text) if text.is_dir() else None
        nodes = folder / NODES_FOLDER
        self.nodes = Snapshot(tag, nodes) if nodes.is_dir() else None
        num_nodes = num_rows + (self.nodes.num_specs if self.nodes is not None else 0)
        dag_folder = folder / DAG_FOLDER
        self.dag = checked_dag(dag_folder, num_rows, num_nodes) if dag_folder.is_dir() else None
        self._packages: dict[int, PackageData] = {}
        self.packages_read = 0
        # Counts of batch reads, for tests that a page is read as a whole (a spec looked
        # up alone reads its row's fields, not a batch: `row_reader`).
        self.spec_reads = 0
        self.dependency_reads = 0

    def files_on_disk(self) -> list[Path]:
        """The files this snapshot reads while it serves, rather than from memory."""
        files = [self.tarballs.blob.path]
        return files + (self.nodes.files_on_disk() if self.nodes is not None else [])

    @property
    def text(self) -> TextIndex:
        if self._text is None:
            raise LookupError(f"{self.folder} has no text index")
        return self._text

    def close(self) -> None:
        if self._text is not None:
            self._text.close()

    # Packages

    @property
    def package_ids(self) -> dict[str, int]:
        """Package ids by name."""
        return self.dictionaries["package"].ids

    def package_id(self, name: str) -> int | None:
        return self.package_ids.get(name)

    def package(self, package_id: int) -> PackageData:
        """A package's data; its summaries are computed once per snapshot."""
        package = self._packages.get(package_id)
        if package is None:
            lo, hi = self.package_range(package_id)
            package = PackageData(self.tag, package_id, lo, hi, self.columns, self.sets)
            self._packages[package_id] = package
            self.packages_read += 1
        return package

    def package_range(self, package_id: int) -> tuple[int, int]:
        return int(self.package_start[package_id]), int(self.package_start[package_id + 1])

    @cached_property
    def stack_set_sizes(self) -> npt.NDArray[np.int64]:
        """How many specs have each distinct set of stacks."""
        column = self.sets["stacks"]
        return np.bincount(column.codes, minlength=column.num_sets)

    @cached_property
    def stack_set_matrix(self) -> npt.NDArray[np.int64] | None:
        """Which stacks each distinct set of stacks holds, a row of 0s and 1s per set: a
        result's specs per stack are then one product with its specs per set. None where
        it would have more than `STACK_MATRIX_CELLS` cells."""
        column = self.sets["stacks"]
        if column.num_sets * len(column.values) > STACK_MATRIX_CELLS:
            return None
        matrix = np.zeros((column.num_sets, len(column.values)), dtype=np.int64)
        sets = np.arange(column.num_sets, dtype=np.intp)
        stacks, lengths = column.members.lists(sets)
        matrix[np.repeat(sets, lengths), stacks] = 1
        return matrix

    # Versions and compilers

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

    @cached_property
    def _compiler_of_value(self) -> list[Compiler]:
        """For each value of the `compiler` column (normalized), a compiler it stands for."""
        by_text = {c.normalized: c for c in self.compilers}
        return [by_text[text] for text in self.columns["compiler"].values]

    def compiler_ids(self, name: str, ranges: Iterable[VersionRange]) -> IdArray:
        """Ids of the normalized compilers named `name` whose version is in `ranges`."""
        ranges = list(ranges)
        ids = [
            i
            for i, compiler in enumerate(self._compiler_of_value)
            if compiler.name == name
            and compiler.version is not None
            and any(r.contains(compiler.version) for r in ranges)
        ]
        return np.array(ids, dtype=np.intp)

    # Dependencies

    @property
    def has_dependencies(self) -> bool:
        """Whether the tag's sources record dependencies (build caches do, pages do not)."""
        return self.dag is not None

    def dependencies(self, rows: list[int]) -> list[list[DependencyData] | None]:
        """The direct dependencies of each spec row, read together for all of them; None
        where the source records none (pages)."""
        if self.dag is None:
            return [None for _ in rows]
        self.dependency_reads += 1
        per_row = self.dag.edges(rows)
        targets = sorted({edge.target for edges in per_row for edge in edges or ()})
        known = dict(zip(targets, self._node_identities(targets), strict=True))
        return [
            [
                DependencyData(
                    name=known[edge.target][0],
                    hash=known[edge.target][1],
                    version=known[edge.target][2],
                    deptypes=edge.deptypes,
                    virtuals=edge.virtuals,
                    row=edge.target if edge.target < self.num_specs else None,
                )
                for edge in edges
            ]
            if edges is not None
            else None
            for edges in per_row
        ]

    def _node_identities(self, nodes: list[int]) -> list[tuple[str, str, str | None]]:
        """(name, hash, version) of each node id; a node the index lacks has no version."""
        specs = [n for n in nodes if n < self.num_specs]
        others = [n - self.num_specs for n in nodes if n >= self.num_specs]
        found = dict(zip(specs, self._identities(specs), strict=True))
        if others and self.nodes is not None:
            extra = self.nodes._identities(others)
            found.update(zip((n + self.num_specs for n in others), extra, strict=True))
        return [found[n] for n in nodes]

    def _identities(self, rows: list[int]) -> list[tuple[str, str, str | None]]:
        if not rows:
            return []
        index = np.asarray(rows, dtype=np.int64)
        hashes = self.hash_sorted[self.hash_rank[index]].tolist()
        names = self.columns["package"].values
        versions = self.columns["version"].values
        name_codes = self.columns["package"].codes[index].tolist()
        version_codes = self.columns["version"].codes[index].tolist()
        return [
            (names[n], h.decode(), versions[v] or None)
            for n, h, v in zip(name_codes, hashes, version_codes, strict=True)
        ]

    # Specs

    def hash_prefix_rows(self, prefix: str) -> tuple[int, int]:
        """The [lo, hi) range of hash ranks starting with `prefix` (see `hash_rows`)."""
        return prefix_range(self.hash_sorted, prefix, self.hash_directory)

    @cached_property
    def hash_directory(self) -> npt.NDArray[np.int32] | None:
        """Where each start of a hash begins (`hash_directory`), for a tag of
        `DIRECTORY_MIN_SPECS` or more: made when first asked for (10 to 15 ms at 570k to 1M
        specs; the server asks as it loads a build, off its event loop), 128 KB kept."""
        if self.num_specs < DIRECTORY_MIN_SPECS:
            return None
        return hash_directory(self.hash_sorted)

    def hash_of(self, row: int) -> str:
        hash_text: str = row_reader("hash")(self, row)
        return hash_text

    def specs(self, wanted: Rows | list[int], *, tarballs: bool = True) -> list[SpecRecord]:
        """The records of these rows, in the given order; one vectorised read per column.

        `tarballs=False` leaves each record's `tarball` None, for a caller that never
        shows them: a read of the file fewer. `spec_columns` reads only the fields asked.
        """
        return self.spec_columns(wanted).records(tarballs=tarballs)

    def spec_columns(self, wanted: Rows | list[int]) -> SpecColumns:
        """The specs of these rows, each field read for all of them when first asked for."""
        return SpecColumns(self, wanted if isinstance(wanted, list) else wanted.tolist())

    def set_members(self, column: str) -> list[list[int]]:
        """The member values of each set of a set column (`versions`, `variants`,
        `stacks`), by set id, as lists: for reads of a few rows."""
        return self._set_member_lists[column]

    @cached_property
    def _set_member_lists(self) -> dict[str, list[list[int]]]:
        lists = {}
        for column in ("versions", "variants", "stacks"):
            members = self.sets[column].members
            items = members.items.tolist()
            offsets = members.offsets.tolist()
            lists[column] = [items[offsets[i] : offsets[i + 1]] for i in range(len(offsets) - 1)]
        return lists
