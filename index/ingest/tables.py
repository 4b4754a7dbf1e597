"""The specs of one tag as dictionary-encoded columns, as the ingest collects them."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Hashable
from operator import attrgetter
from typing import Any, Generic, TypeVar

import numpy as np

from cachegql.index.fields import SPEC_FIELDS
from cachegql.index.records import SpecRecord
from cachegql.index.spack.compilers import Compiler
from cachegql.index.spack.variants import Variant

__all__ = ["RECORD_PARTS", "EncodedColumn", "TagTable"]

V = TypeVar("V")
# The parts of a record that no spec field holds whole, kept as they are.
RECORD_PARTS = ("versions", "compiler", "variants", "stacks", "flags")
_ATTRIBUTE_FIELDS = tuple(f.name for f in SPEC_FIELDS if f.attribute)


def _same(value: Any) -> Hashable:
    return value  # type: ignore[no-any-return]


def _raw(value: Compiler) -> str:
    return value.raw


def _raws(values: tuple[Variant, ...]) -> tuple[str, ...]:
    return tuple(v.raw for v in values)


_PART_KEYS: dict[str, Callable[[Any], Hashable]] = {"compiler": _raw, "variants": _raws}


class EncodedColumn(Generic[V]):
    """A value per row, stored as a small code into the distinct values (first-seen order).

    Values are told apart by `key(value)`: their text, which is cheaper to hash than
    parsed objects (a tuple of variants would hash every field of every variant).
    """

    def __init__(self, key: Callable[[V], Hashable] = _same) -> None:
        self.values: list[V] = []
        self.codes: array[int] = array("i")
        self._key = key
        self._code_of: dict[Hashable, int] = {}

    def append(self, value: V) -> None:
        key = value if self._key is _same else self._key(value)
        code = self._code_of.get(key)
        if code is None:
            code = self._code_of[key] = len(self.values)
            self.values.append(value)
        self.codes.append(code)

    def parts(
        self,
    ) -> tuple[Callable[[V], Hashable] | None, dict[Hashable, int], list[V], Callable[[int], None]]:
        """What `append` works with (its key, None for the value itself), for a caller
        that inlines it."""
        return (
            None if self._key is _same else self._key,
            self._code_of,
            self.values,
            self.codes.append,
        )

    def __getitem__(self, row: int) -> V:
        return self.values[self.codes[row]]


# A column as `TagTable.add` appends to it: how to find the value in a record, then
# `EncodedColumn.parts()`.
_Inlined = tuple[
    Callable[[SpecRecord], Any],
    Callable[[Any], Hashable] | None,
    dict[Hashable, int],
    list[Any],
    Callable[[int], None],
]


class TagTable:
    """Per spec: a column per spec field and per record part, plus hash, size and tarball."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.hashes: list[str] = []
        self.rows_by_hash: dict[str, int] = {}
        self.fields: dict[str, EncodedColumn[str]] = {f.name: EncodedColumn() for f in SPEC_FIELDS}
        self.parts: dict[str, EncodedColumn[Any]] = {
            part: EncodedColumn(_PART_KEYS.get(part, _same)) for part in RECORD_PARTS
        }
        self.sizes: array[int] = array("q")
        self.tarballs: list[str | None] = []
        self.source_page: array[int] = array("i")
        # Once a row is added alike, each row's place in the `_alike` columns: they then
        # hold codes for the rows `add` added only, and `settle` spreads them to every row.
        self._template: array[int] | None = None
        self._bind()

    def _bind(self) -> None:
        """Look up once what `add` and `add_like` work with (a million specs, a dozen
        columns): each column's parts, and every column but the stacks, whose codes a row
        added alike shares with the row it is like."""
        columns: list[tuple[Callable[[SpecRecord], Any], EncodedColumn[Any]]] = [
            *((f.value, self.fields[f.name]) for f in SPEC_FIELDS),
            *((attrgetter(part), column) for part, column in self.parts.items()),
        ]
        self._appends: tuple[_Inlined, ...] = tuple(
            (value_of, *column.parts()) for value_of, column in columns
        )
        self._alike = [c for _, c in columns if c is not self.parts["stacks"]]

    def __len__(self) -> int:
        return len(self.hashes)

    def add(self, spec: SpecRecord, page_id: int) -> int | None:
        """Add a spec; if its hash is already here, return the earlier row instead."""
        earlier = self.rows_by_hash.get(spec.hash)
        if earlier is not None:
            return earlier
        self.rows_by_hash[spec.hash] = len(self.hashes)
        self.hashes.append(spec.hash)
        if self._template is not None:
            self._template.append(len(self._alike[0].codes))
        # `EncodedColumn.append`, inlined: 4.8 -> 4.0 us a spec.
        for value_of, key_of, code_of, values, append_code in self._appends:
            value = value_of(spec)
            key = value if key_of is None else key_of(value)
            code = code_of.get(key)
            if code is None:
                code = code_of[key] = len(values)
                values.append(value)
            append_code(code)
        self.sizes.append(-1 if spec.size is None else spec.size)
        self.tarballs.append(spec.tarball)
        self.source_page.append(page_id)
        return None

    def add_like(
        self, row: int, digest: str, stacks: tuple[str, ...], size: int | None, page_id: int
    ) -> int | None:
        """Add a spec that is the one at `row` but for its hash, stacks and size (and no
        tarball): its other columns are that row's, shared until `settle` copies them
        (15 codes appended a spec took a third of a mirror's table). If its hash is
        already here, return the earlier row instead."""
        earlier = self.rows_by_hash.get(digest)
        if earlier is not None:
            return earlier
        template = self._template
        if template is None:
            template = self._template = array("i", range(len(self.hashes)))
        self.rows_by_hash[digest] = len(self.hashes)
        self.hashes.append(digest)
        template.append(template[row])
        self.parts["stacks"].append(stacks)
        self.sizes.append(-1 if size is None else size)
        self.tarballs.append(None)
        self.source_page.append(page_id)
        return None

    def settle(self) -> None:
        """Give every row added alike its own codes in every column (one gather each):
        the columns are read whole after this, as the writer does."""
        template = self._template
        if template is None:
            return
        rows = np.frombuffer(template, dtype=np.int32)
        # New arrays, swapped in once all are made: a failure leaves the table as it was.
        spread = [
            array("i", np.frombuffer(column.codes, dtype=np.int32)[rows].tobytes())
            for column in self._alike
        ]
        for column, codes in zip(self._alike, spread, strict=True):
            column.codes = codes
        self._bind()
        self._template = None

    def record(self, row: int) -> SpecRecord:
        """Rebuild the spec stored at `row`."""
        # Before `settle`, a row added alike has its codes at its template's place.
        alike = row if self._template is None else self._template[row]
        attributes: dict[str, Any] = {name: self.fields[name][alike] for name in _ATTRIBUTE_FIELDS}
        parts = {
            part: column[row if part == "stacks" else alike] for part, column in self.parts.items()
        }
        size = self.sizes[row]
        return SpecRecord(
            hash=self.hashes[row],
            tag=self.tag,
            size=None if size < 0 else size,
            tarball=self.tarballs[row],
            **attributes,
            **parts,
        )
