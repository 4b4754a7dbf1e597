"""Arguments filled into a template (schema/argument_values.py) are graphql-core's own.

Each query below puts variables somewhere else in a field's arguments (at the top, deep
in a filter, in lists, twice, beside defaults), and each is coerced with variables given,
missing and null: `argument_values` must return what `get_argument_values` returns.
"""

from __future__ import annotations

from typing import Any

import pytest
from graphql import FieldNode, GraphQLField, OperationDefinitionNode, parse, validate
from graphql.execution.values import get_argument_values, get_variable_values

from cachegql.schema import argument_values as module
from cachegql.schema import build_schema
from cachegql.schema.argument_values import argument_values

SCHEMA = build_schema()._schema

QUERIES: dict[str, tuple[str, dict[str, Any]]] = {
    "top level": ("query($h: String!) { spec(hash: $h) { hash } }", {"h": "abc"}),
    "deep in a filter": (
        "query($p: String!) { specs(filter: { package: { eq: $p } }, first: 20) { totalCount } }",
        {"p": "zlib"},
    ),
    "in lists, twice, beside literals": (
        """query($a: String!, $n: Int) { specs(first: $n, filter: { or: [
             { package: { in: [$a, "x", $a] } }, { version: { eq: "1" } }, { os: { eq: $a } } ]
           }) { totalCount } }""",
        {"a": "hdf5", "n": 5},
    ),
    "a whole filter": (
        "query($f: SpecFilter) { specs(filter: $f) { totalCount } }",
        {"f": {"package": {"eq": "zlib"}}},
    ),
    "falsy values": (
        "query($n: Int, $p: String) { specs(first: $n, filter: { package: { eq: $p } }) "
        "{ totalCount } }",
        {"n": 0, "p": ""},
    ),
    "an operation's default": (
        'query($n: Int = 7, $p: String = "zlib") { specs(first: $n, '
        "filter: { package: { eq: $p } }) { totalCount } }",
        {"n": 2, "p": "hdf5"},
    ),
    "beside arguments without variables": (
        "query($t: String, $q: String) { specs(tag: $t, query: $q, first: 3) { totalCount } }",
        {"t": "develop", "q": "zlib %gcc"},
    ),
}


def _field(query: str) -> tuple[GraphQLField, FieldNode, OperationDefinitionNode]:
    document = parse(query)
    assert validate(SCHEMA, document) == []
    operation = document.definitions[0]
    assert isinstance(operation, OperationDefinitionNode)
    node = operation.selection_set.selections[0]
    assert isinstance(node, FieldNode) and SCHEMA.query_type is not None
    return SCHEMA.query_type.fields[node.name.value], node, operation


def _both(
    parsed: tuple[GraphQLField, FieldNode, OperationDefinitionNode], inputs: dict[str, Any]
) -> tuple[Any, Any] | None:
    """Both coercions of the field's arguments; None where the variables are refused
    (null or missing where declared non-null): no arguments are coerced then."""
    field, node, operation = parsed
    variables = get_variable_values(SCHEMA, operation.variable_definitions or (), inputs)
    if isinstance(variables, list):
        return None
    return argument_values(field, node, variables), get_argument_values(field, node, variables)


@pytest.mark.parametrize("name", list(QUERIES))
def test_filled_as_graphql_core_coerces(name: str) -> None:
    query, given = QUERIES[name]
    parsed = _field(query)
    compared = 0
    for inputs in (given, {k: None for k in given}, {}, {**given, "other": 1}):
        both = _both(parsed, inputs)
        if both is not None:
            assert both[0] == both[1], inputs
            compared += 1
    assert compared >= 2
    field, node, _ = parsed
    # Not vacuous: a template was made for each (none of them is graphql-core's to refuse).
    assert module._TEMPLATES[(id(field), id(node))][2] is not None


def test_no_request_shares_a_container_with_another() -> None:
    query, given = QUERIES["in lists, twice, beside literals"]
    parsed = _field(query)
    first, _ = _both(parsed, given) or ({}, None)
    first["filter"]["or"][0]["package"]["in"].append("changed")
    first["filter"]["or"].clear()
    again, coerced = _both(parsed, given) or ({}, None)
    assert again == coerced and len(again["filter"]["or"]) == 3


def test_templates_are_kept_within_their_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(module, "MAX_TEMPLATES", 2)
    module._TEMPLATES.clear()
    for name in ("top level", "deep in a filter", "a whole filter"):
        query, given = QUERIES[name]
        assert _both(_field(query), given) == (coerced := _both(_field(query), given))
        assert coerced is not None and coerced[0] == coerced[1]
    assert len(module._TEMPLATES) <= 2
