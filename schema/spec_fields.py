"""How each field of `Spec` is made of its batch's columns, a column at a time.

The API shows a record's fields as they are but for a few: a short hash, the first
version, compilers and variants as the API's objects (one per distinct value), a size
as a 32-bit `Int` or a `Float`, an empty namespace as null.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from operator import itemgetter
from typing import Any

from cachegql.index import SHORT_HASH_LENGTH, Snapshot, SpecColumns, row_reader
from cachegql.index import Compiler as CompilerData
from cachegql.index import Variant as VariantData
from cachegql.schema.value_types import Compiler, Variant

__all__ = ["FIELDS", "SHOWN", "SHOWN_ONE"]


@lru_cache(maxsize=65536)
def _compiler(data: CompilerData) -> Compiler:
    return Compiler(name=data.name, version=data.version, raw=data.raw)


@lru_cache(maxsize=65536)
def _variant(data: VariantData) -> Variant:
    return Variant(name=data.name, value=data.value, raw=data.raw)


_INT_LIMIT = 2**31


def _variants(data: tuple[VariantData, ...]) -> list[Variant]:
    return [_variant(v) for v in data]


def _size(size: int | None) -> int | None:
    return None if size is None or size >= _INT_LIMIT else size


def _size_bytes(size: int | None) -> float | None:
    return None if size is None else float(size)


def _namespace(namespace: str) -> str | None:
    return namespace or None


# Each field of `Spec`: the record's field (`SpecColumns`) it shows, and how it shows a
# value of it (None: as it is). Functions in C where they can be: a page maps them over
# its column.
FIELDS: dict[str, tuple[str, Callable[[Any], Any] | None]] = {
    "hash": ("hash", None),
    "short_hash": ("hash", itemgetter(slice(SHORT_HASH_LENGTH))),
    "name": ("package", None),
    "tag": ("tag", None),
    "version": ("versions", itemgetter(0)),
    "versions": ("versions", None),
    "compiler": ("compiler", _compiler),
    "os": ("os", None),
    "platform": ("platform", None),
    "target": ("target", None),
    "variants": ("variants", _variants),
    "stacks": ("stacks", None),
    "size": ("size", _size),
    "size_bytes": ("size", _size_bytes),
    "tarball": ("tarball", None),
    "namespace": ("namespace", _namespace),
}


def _column(field: str, show: Callable[[Any], Any] | None) -> Callable[[SpecColumns], list[Any]]:
    if show is None:
        return lambda columns: columns[field]
    return lambda columns: list(map(show, columns[field]))


SHOWN: dict[str, Callable[[SpecColumns], list[Any]]] = {
    name: _column(field, show) for name, (field, show) in FIELDS.items()
}
"""How each field of `Spec` is made of a record's fields, a column at a time."""


def _one(field: str, show: Callable[[Any], Any] | None) -> Callable[[Snapshot, int], Any]:
    read = row_reader(field)
    if show is None:
        return read
    return lambda snapshot, row: show(read(snapshot, row))


SHOWN_ONE: dict[str, Callable[[Snapshot, int], Any]] = {
    name: _one(field, show) for name, (field, show) in FIELDS.items()
}
"""How each field of `Spec` is made of one row's record, read alone (a spec looked up by
its hash): `SHOWN_ONE[name](snapshot, row)`."""
