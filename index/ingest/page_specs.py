"""The spec objects of a page's `spec_details`, as records: each value checked, a wrong
one a ValueError naming the spec's hash (the page skips that spec and says why)."""

from __future__ import annotations

from typing import Any

from cachegql.index.fields import SPEC_FIELDS
from cachegql.index.records import MAX_SIZE, SpecRecord
from cachegql.index.spack.compilers import parse_compiler
from cachegql.index.spack.hashes import is_hash
from cachegql.index.spack.variants import parse_variant

__all__ = ["kind_of", "spec_record"]

# A page's spec objects carry every text attribute of a record under its own name,
# except the package, which is the page's title.
_TEXT_KEYS = tuple(
    f.name for f in SPEC_FIELDS if f.attribute and f.required and f.name != "package"
)

_KINDS: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}


def kind_of(value: object) -> str:
    """How problems name a JSON value's kind: "an object", "a list", "a string", "int"."""
    return _KINDS.get(type(value), type(value).__name__)


def spec_record(item: object, package: str, tag: str) -> SpecRecord:
    """The record of one spec object of a page of `package` in `tag`; ValueError if wrong."""
    if not isinstance(item, dict):
        raise ValueError(f"expected an object, got {kind_of(item)}")
    digest = item.get("hash")
    if not isinstance(digest, str):
        raise ValueError("missing 'hash'" if digest is None else "'hash' must be a string")
    if not is_hash(digest):
        raise ValueError(f"hash {digest!r} is not 32 lowercase base32 characters")
    where = f"hash {digest}: "
    texts: dict[str, Any] = {key: _text(item, key, where) for key in ("compiler", *_TEXT_KEYS)}
    versions = _string_list(item, "versions", where)
    if not versions:
        raise ValueError(where + "'versions' must not be empty")
    try:
        compiler = parse_compiler(texts.pop("compiler"))
        variants = tuple(parse_variant(raw) for raw in _string_list(item, "variants", where))
    except ValueError as exc:
        raise ValueError(where + str(exc)) from None
    stacks = _string_list(item, "stacks", where)
    return SpecRecord(
        hash=digest,
        package=package,
        tag=tag,
        versions=tuple(versions),
        compiler=compiler,
        variants=variants,
        stacks=tuple(sorted(set(stacks))),
        size=_size(item.get("size"), where),
        tarball=_tarball(item.get("tarball"), where),
        **texts,
    )


def _text(item: dict[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(where + f"'{key}' must be a non-empty string")
    return value


def _string_list(item: dict[str, Any], key: str, where: str) -> list[str]:
    value = item.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(where + f"'{key}' must be a list of non-empty strings")
    return value


def _size(value: object, where: str) -> int | None:
    if value is None or value == "-":
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        size = value
    elif isinstance(value, str) and value.isdigit():
        size = int(value)
    else:
        raise ValueError(where + f"'size' must be a byte count or '-', got {value!r}")
    if size > MAX_SIZE:
        raise ValueError(where + f"'size' of {size} bytes is more than a file can be")
    return size


def _tarball(value: object, where: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(where + "'tarball' must be a string")
    return value
