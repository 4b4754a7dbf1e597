"""Leaf columns (schema/leaf_columns.py) serialize as graphql-core does, value by value.

Each column below is serialized at once where `column_serializer` can, and compared with
graphql-core's serializer applied to each value; where a column holds anything the fast
path must not pass (a null where the field forbids one, a number for a `String`, an
`Int` past 32 bits, a `bool` for an `Int`), it must decline (None), so that the plan's
value-by-value path serializes or refuses it.
"""

from __future__ import annotations

from typing import Any

import pytest
from graphql import (
    GraphQLBoolean,
    GraphQLEnumType,
    GraphQLFloat,
    GraphQLID,
    GraphQLInt,
    GraphQLScalarType,
    GraphQLString,
)

from cachegql.schema import build_schema
from cachegql.schema.leaf_columns import column_serializer, pair_serializer, value_serializer
from cachegql.schema.readers import many_reader
from cachegql.schema.spec_types import Spec

CASES: list[tuple[GraphQLScalarType, bool, list[Any], bool]] = [
    # scalar, required, values, served at once
    (GraphQLString, True, ["a", "b", ""], True),
    (GraphQLString, True, [], True),
    (GraphQLString, True, ["a", None], False),
    (GraphQLString, False, ["a", None], True),
    (GraphQLString, False, [None, None], True),
    (GraphQLString, True, ["a", 1], False),
    (GraphQLString, True, ["a", True], False),
    (GraphQLInt, True, [0, -(2**31), 2**31 - 1], True),
    (GraphQLInt, True, [1, 2**31], False),
    (GraphQLInt, True, [-(2**31) - 1], False),
    (GraphQLInt, False, [None, 5, None], True),
    (GraphQLInt, False, [None, 2**40], False),
    (GraphQLInt, False, [None], True),
    (GraphQLInt, True, [1, True], False),
    (GraphQLInt, True, [1.0], False),
    (GraphQLBoolean, True, [True, False], True),
    (GraphQLBoolean, True, [True, 1], False),
    (GraphQLBoolean, False, [None, False], True),
]


@pytest.mark.parametrize(("scalar", "required", "values", "at_once"), CASES)
def test_a_column_is_graphql_cores_serialization_or_declined(
    scalar: GraphQLScalarType, required: bool, values: list[Any], at_once: bool
) -> None:
    serialize = column_serializer(scalar, required)
    assert serialize is not None
    done = serialize(tuple(values))  # a tuple in, a list out (JSON arrays alike)
    if not at_once:
        assert done is None
        return
    assert done == [None if v is None else scalar.serialize(v) for v in values]
    assert isinstance(done, list)
    assert [type(v) for v in done] == [type(v) for v in values]


def _outcome(serialize: Any, value: Any) -> tuple[str, Any]:
    try:
        return "value", serialize(value)
    except Exception as exc:  # graphql-core's own error, which the plan leaves to it
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize(("scalar", "required", "values", "at_once"), CASES)
def test_a_value_is_graphql_cores_serialization(
    scalar: GraphQLScalarType, required: bool, values: list[Any], at_once: bool
) -> None:
    serialize = value_serializer(scalar)
    for value in [v for v in values if v is not None] + [2.0, "7", 2**31, False]:
        expected = _outcome(scalar.serialize, value)
        assert _outcome(serialize, value) == expected
        if expected[0] == "value":
            assert type(_outcome(serialize, value)[1]) is type(expected[1])


@pytest.mark.parametrize(
    "scalar", [GraphQLFloat, GraphQLID, GraphQLEnumType("Kind", {"A": "a"})], ids=str
)
def test_other_leaves_go_value_by_value(scalar: Any) -> None:
    assert column_serializer(scalar, True) is None
    assert value_serializer(scalar) == scalar.serialize  # graphql-core's, called each time
    for leaves in ((scalar, GraphQLString), (GraphQLInt, scalar)):  # nor an object of two
        assert pair_serializer(("a", "b"), leaves, (False, False)) is None


@pytest.mark.parametrize(("scalar", "required", "values", "at_once"), CASES)
def test_an_object_of_two_leaves_is_graphql_cores_serialization_or_declined(
    scalar: GraphQLScalarType, required: bool, values: list[Any], at_once: bool
) -> None:
    """Each value of a column, beside a string or after it: the pair's dict where the
    column passes at once, else None (the plan then completes it field by field)."""
    for value in values:
        for names, leaves, pair in (
            (("v", "s"), (scalar, GraphQLString), (value, "x")),
            (("s", "v"), (GraphQLString, scalar), ("x", value)),
        ):
            nullable = tuple(not required if leaf is scalar else False for leaf in leaves)
            serialize = pair_serializer(names, leaves, nullable)  # type: ignore[arg-type]
            assert serialize is not None
            single = column_serializer(scalar, required)
            assert single is not None
            if single([value]) is None:  # what a column declines, a pair declines
                assert serialize(pair) is None
                continue
            expected = None if value is None else scalar.serialize(value)
            done = serialize(pair)
            assert done == {"v": expected, "s": "x"} and type(done["v"]) is type(expected)


def test_a_page_of_specs_is_read_a_column_at_a_time(demo_snapshot: Any) -> None:
    """`Spec`'s fields read their batch's column for the batch's own page, and any other
    list of specs (a slice, a mix) value by value, with the same values."""
    from cachegql.schema.spec_types import spec_objects

    build_schema()  # the schema's types are complete
    field = Spec.__strawberry_definition__.get_field("hash")  # type: ignore[attr-defined]
    assert field is not None and field.base_resolver is not None
    read = field.base_resolver.wrapped_func
    many = many_reader(read)
    rows = [5, 1, 3, 2]
    page = spec_objects(demo_snapshot, rows)
    hashes = [r.hash for r in demo_snapshot.specs(rows)]
    assert many(page) == hashes
    assert many(page) is page[0]._batch.shown("hash")  # the column itself
    assert many(page[1:]) == hashes[1:]
    assert many([page[2], page[0], page[2]]) == [hashes[2], hashes[0], hashes[2]]
    assert many([]) == []
