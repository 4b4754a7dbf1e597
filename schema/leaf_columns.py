"""Leaf values completed a column at a time, where their types show there is nothing to do.

graphql-core serializes a `String` by calling `serialize_string` on each value, which
returns a `str` as it is; an `Int` within 32 bits and a `Boolean` likewise. The types of
a whole column are one C-level glance (`set(map(type, values))`): where they are only
those, the column is its own serialization. Any other value (a null where the field
forbids one, a number for a `String`, an `Int` past 32 bits, a `bool` for an `Int`)
sends the column back to the value-by-value path, which serializes or refuses it as
graphql-core does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from graphql import GraphQLBoolean, GraphQLInt, GraphQLLeafType, GraphQLNamedType, GraphQLString

__all__ = [
    "ColumnSerializer",
    "column_serializer",
    "pair_serializer",
    "unchanged_type",
    "value_serializer",
]

ColumnSerializer = Callable[[Sequence[Any]], "list[Any] | None"]
"""A column's values serialized, or None where they must be serialized one by one."""

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_NONE = type(None)

# The scalars whose serializer returns these Python types unchanged.
_UNCHANGED: dict[GraphQLNamedType, type] = {
    GraphQLString: str,
    GraphQLBoolean: bool,
    GraphQLInt: int,
}


def column_serializer(scalar: GraphQLNamedType, required: bool) -> ColumnSerializer | None:
    """How to serialize a column of `scalar` values at once; None where there is no
    way but value by value (other scalars, enums)."""
    kind = _UNCHANGED.get(scalar)
    if kind is None:
        return None
    allowed = frozenset({kind} if required else {kind, _NONE})
    bounded = kind is int

    def serialize(values: Sequence[Any]) -> list[Any] | None:
        found = set(map(type, values))
        if not found <= allowed:
            return None
        if bounded and values:
            numbers = [v for v in values if v is not None] if _NONE in found else values
            if numbers and (min(numbers) < _INT_MIN or max(numbers) > _INT_MAX):
                return None
        return list(values)

    return serialize


def value_serializer(leaf: GraphQLLeafType) -> Callable[[Any], Any]:
    """`leaf.serialize`; for an `Int`, a 32-bit `int` returned without the call (graphql-core's
    checks take 310 ns a value, this one 120). Strings and booleans it already passes at once."""
    serialize: Callable[[Any], Any] = leaf.serialize
    if leaf is not GraphQLInt:
        return serialize

    def serialize_int(value: Any) -> Any:
        if type(value) is int and _INT_MIN <= value <= _INT_MAX:
            return value
        return serialize(value)

    return serialize_int


def unchanged_type(leaf: GraphQLLeafType) -> type | None:
    """The Python type of which `leaf` serializes every value as it is (a `str` for a
    `String`), else None (an `Int`'s are only within 32 bits)."""
    kind = _UNCHANGED.get(leaf)
    return None if kind is int else kind


def pair_serializer(
    names: tuple[str, str],
    leaves: tuple[GraphQLLeafType, GraphQLLeafType],
    nullable: tuple[bool, bool],
) -> Callable[[tuple[Any, Any]], dict[str, Any] | None] | None:
    """How to serialize the two values of an object of two leaf fields at once: its
    dict where each is a value its leaf serializes as it is (a `str` for a `String`, an
    `int` within 32 bits for an `Int`, a `bool`) or a null its field allows, else None
    for the value-by-value path (a null where the field forbids one, a number for a
    `String`, an `Int` past 32 bits, a `bool` for an `Int`). None for other scalars."""
    first, second = _UNCHANGED.get(leaves[0]), _UNCHANGED.get(leaves[1])
    if first is None or second is None:
        return None
    name_0, name_1 = names
    # The types a value may have, a null's where the field allows one (`column_serializer`).
    kinds_0 = (first, _NONE) if nullable[0] else (first,)
    kinds_1 = (second, _NONE) if nullable[1] else (second,)
    bounded_0, bounded_1 = first is int, second is int

    def serialize(values: tuple[Any, Any]) -> dict[str, Any] | None:
        value_0, value_1 = values
        as_they_are = type(value_0) in kinds_0 and type(value_1) in kinds_1
        if not as_they_are:
            return None
        if (bounded_0 and value_0 is not None and not _INT_MIN <= value_0 <= _INT_MAX) or (
            bounded_1 and value_1 is not None and not _INT_MIN <= value_1 <= _INT_MAX
        ):
            return None
        return {name_0: value_0, name_1: value_1}

    return serialize
