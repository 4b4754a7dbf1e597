"""How each field of `Spec` is made of its batch's columns, a column at a time.

The API shows a record's fields as they are but for a few: a short hash, the first
version, compilers and variants as the API's objects (one per distinct value), a size
as a 32-bit `Int` or a `Float`, an empty namespace as null.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from cachegql.index import SHORT_HASH_LENGTH, SpecColumns
from cachegql.index import Compiler as CompilerData
from cachegql.index import Variant as VariantData
from cachegql.schema.value_types import Compiler, Variant

__all__ = ["SHOWN"]


@lru_cache(maxsize=65536)
def _compiler(data: CompilerData) -> Compiler:
    return Compiler(name=data.name, version=data.version, raw=data.raw)


@lru_cache(maxsize=65536)
def _variant(data: VariantData) -> Variant:
    return Variant(name=data.name, value=data.value, raw=data.raw)


_INT_LIMIT = 2**31

# How each field of `Spec` is made of a record's fields (`SpecColumns`), a column at a time.
SHOWN: dict[str, Callable[[SpecColumns], list[Any]]] = {
    "hash": lambda c: c["hash"],
    "short_hash": lambda c: [h[:SHORT_HASH_LENGTH] for h in c["hash"]],
    "name": lambda c: c["package"],
    "tag": lambda c: c["tag"],
    "version": lambda c: [v[0] for v in c["versions"]],
    "versions": lambda c: c["versions"],
    "compiler": lambda c: [_compiler(x) for x in c["compiler"]],
    "os": lambda c: c["os"],
    "platform": lambda c: c["platform"],
    "target": lambda c: c["target"],
    "variants": lambda c: [[_variant(v) for v in vs] for vs in c["variants"]],
    "stacks": lambda c: c["stacks"],
    "size": lambda c: [None if s is None or s >= _INT_LIMIT else s for s in c["size"]],
    "size_bytes": lambda c: [None if s is None else float(s) for s in c["size"]],
    "tarball": lambda c: c["tarball"],
    "namespace": lambda c: [n or None for n in c["namespace"]],
}
