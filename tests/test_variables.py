"""Variables kept as given (schema/variables.py) are graphql-core's own coercion.

For operations declaring variables of every scalar the shortcut knows, and of types it
leaves to graphql-core, any request's variables (of the right type, another type, null,
missing, out of range) must either be left to graphql-core (None) or come out exactly as
`get_variable_values` coerces them: the same values and the same sources.
"""

from __future__ import annotations

from typing import Any

import pytest
from graphql import OperationDefinitionNode, parse, validate
from graphql.execution.values import VariableValues, get_variable_values
from hypothesis import given, settings
from hypothesis import strategies as st

from cachegql.schema import build_schema
from cachegql.schema.variables import VariablesAsGiven
from tests.conftest import GraphQLClient

SCHEMA = build_schema()._schema

SCALARS = (
    "query($h: String!, $t: String, $n: Int, $m: Int!, $x: Boolean!, $i: String) "
    "{ spec(hash: $h, tag: $t) { hash } specs(first: $n, after: $i) { totalCount } "
    "a: specs(first: $m) @include(if: $x) { totalCount } }"
)
OTHERS = {
    "an input object": "query($f: SpecFilter) { specs(filter: $f) { totalCount } }",
    "a list": "query($v: [String!]) { specs(filter: { variants: $v }) { totalCount } }",
    "a default": 'query($h: String! = "abc") { spec(hash: $h) { hash } }',
}

VALUES = st.one_of(
    st.sampled_from([True, False, 2**31, -(2**31) - 1, 0.0, 1.0, 3.5, "", "1", [], {}]),
    st.none(),
    st.text(max_size=8),
    st.booleans(),
    st.integers(min_value=-(2**33), max_value=2**33),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.text(max_size=3), max_size=2),
    st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
)
INT32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
OWN = {  # values of each variable's own type, so that many requests take the shortcut
    "h": st.text(max_size=8),
    "t": st.one_of(st.none(), st.text(max_size=8)),
    "n": st.one_of(st.none(), INT32),
    "m": INT32,
    "x": st.booleans(),
    "i": st.one_of(st.none(), st.text(max_size=8)),
}


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    """Each variable of its own type, of any other, or missing; and one undeclared."""
    inputs: dict[str, Any] = {}
    for name in (*OWN, "extra"):
        kind = draw(st.sampled_from(["own"] * 5 + ["other", "other", "missing"]))
        if kind == "own" and name in OWN:
            inputs[name] = draw(OWN[name])
        elif kind != "missing":
            inputs[name] = draw(VALUES)
    return inputs


def _operation(query: str) -> OperationDefinitionNode:
    document = parse(query)
    assert validate(SCHEMA, document) == []
    operation = document.definitions[0]
    assert isinstance(operation, OperationDefinitionNode)
    return operation


def _same(kept: VariableValues, coerced: VariableValues) -> bool:
    """Equal values of the same Python types (1 == 1.0 == True), and the same sources (the
    signature's type is an equal wrapper, not the same object: graphql-core makes one per
    coercion)."""

    def sources(values: VariableValues) -> dict[str, tuple[Any, ...]]:
        return {
            name: (str(signature.type), signature.name, signature.default, source.value)
            for name, source in values.sources.items()
            for signature in [source.signature]
        }

    def typed(values: VariableValues) -> dict[str, tuple[Any, type]]:
        return {name: (value, type(value)) for name, value in values.coerced.items()}

    return typed(kept) == typed(coerced) and sources(kept) == sources(coerced)


@settings(max_examples=1000, deadline=None)
@given(requests())
def test_kept_as_given_only_where_graphql_core_keeps_them(inputs: dict[str, Any]) -> None:
    operation = _operation(SCALARS)
    as_given = VariablesAsGiven.of(SCHEMA, operation)
    assert as_given is not None
    kept = as_given(inputs)
    if kept is None:
        return
    coerced = get_variable_values(SCHEMA, operation.variable_definitions or (), inputs)
    assert isinstance(coerced, VariableValues), coerced
    assert _same(kept, coerced)


def test_values_of_their_own_types_are_kept() -> None:
    """The usual request takes the shortcut (else the property above holds vacuously)."""
    operation = _operation(SCALARS)
    as_given = VariablesAsGiven.of(SCHEMA, operation)
    assert as_given is not None
    inputs = {"h": "abc", "t": None, "n": 5, "m": -(2**31), "x": True, "i": "xyz", "extra": 1.5}
    kept = as_given(inputs)
    assert kept is not None
    coerced = get_variable_values(SCHEMA, operation.variable_definitions or (), inputs)
    assert isinstance(coerced, VariableValues) and _same(kept, coerced)


@pytest.mark.parametrize(
    "change",
    [
        {"h": None},  # null where required: graphql-core's error
        {"n": 2**31},  # out of Int's range: graphql-core's error
        {"n": 3.0},  # an Int sent as a float: graphql-core converts it
        {"n": True},
        {"i": 7},
        {"x": "true"},
        {"t": 1},
    ],
)
def test_other_values_are_left_to_graphql_core(change: dict[str, Any]) -> None:
    operation = _operation(SCALARS)
    as_given = VariablesAsGiven.of(SCHEMA, operation)
    assert as_given is not None
    inputs = {"h": "abc", "t": "develop", "n": 5, "m": 1, "x": False, "i": "xyz"}
    assert as_given(inputs) is not None
    assert as_given({**inputs, **change}) is None
    missing = dict(inputs)
    del missing["t"]  # a nullable variable not given: omitted by graphql-core
    assert as_given(missing) is None


@pytest.mark.parametrize("name", list(OTHERS))
def test_operations_of_other_types_are_left_to_graphql_core(name: str) -> None:
    operation = _operation(OTHERS[name])
    if name == "a default":  # a scalar with a default: kept when given, left when not
        as_given = VariablesAsGiven.of(SCHEMA, operation)
        assert as_given is not None and as_given({}) is None
        return
    assert VariablesAsGiven.of(SCHEMA, operation) is None


def test_answers_and_refusals_over_http_are_as_before(gql: GraphQLClient) -> None:
    """Through the server: a hash given as a variable answers as the same hash written in
    the query; a variable of the wrong type is refused with graphql-core's message."""
    hashes = gql.data("{ specs(first: 1) { nodes { hash } } }")["specs"]["nodes"]
    full = hashes[0]["hash"]
    query = "query($h: String!) { spec(hash: $h) { hash name } }"
    assert gql.data(query, h=full[:7]) == gql.data(
        f'{{ spec(hash: "{full[:7]}") {{ hash name }} }}'
    )
    error = gql.error("query($n: Int) { specs(first: $n) { totalCount } }", n="3")
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert "Int cannot represent non-integer value" in error["message"]
