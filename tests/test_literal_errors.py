"""Refusals that say where, over HTTP: a literal value of the wrong type names its argument,
its field or directive, and its place within an input object (`schema/literal_errors.py`);
a spec-syntax query refused is one line with its column apart (`schema/errors.py`)."""

from __future__ import annotations

import pytest

from tests.conftest import GraphQLClient

REFUSED = [
    ("{ spec(hash: 5) { name } }", "Argument 'hash' of 'spec': String cannot represent"),
    ('{ specs(first: "x") { totalCount } }', "Argument 'first' of 'specs': Int cannot"),
    (
        "{ specs(filter: { os: { eq: 3 } }) { totalCount } }",
        "Argument 'filter' of 'specs', at os.eq: String cannot represent a non string value: 3",
    ),
    (
        '{ specs(filter: { or: [{ os: { eq: "a" } }, { os: { in: ["b", 4] } }] }) { totalCount } }',
        "Argument 'filter' of 'specs', at or[1].os.in[1]: String cannot represent",
    ),
    (
        "{ specs(filter: { nope: 1 }) { totalCount } }",
        "Argument 'filter' of 'specs': Expected value of type 'SpecFilter' not to include "
        "unknown field 'nope'",
    ),
    (
        '{ package(name: "hdf5") { name specs(first: true) { totalCount } } }',
        "Argument 'first' of 'specs': Int cannot represent non-integer value: true",
    ),
    (
        '{ spec(hash: "abc") @include(if: "yes") { name } }',
        "Argument 'if' of '@include': Boolean cannot represent a non boolean value",
    ),
    # Not an argument: said as graphql-core says it.
    (
        'query($x: Int = "a") { specs(first: $x) { totalCount } }',
        'Int cannot represent non-integer value: "a"',
    ),
]


@pytest.mark.parametrize(("query", "message"), REFUSED)
def test_a_literal_of_the_wrong_type_is_refused_where_it_was(
    gql: GraphQLClient, query: str, message: str
) -> None:
    error = gql.error(query)
    assert error["message"].startswith(message), error
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
    assert error["locations"]


def test_values_of_the_right_type_are_answered(gql: GraphQLClient) -> None:
    data = gql.data('{ specs(filter: { or: [{ os: { in: ["b"] } }] }, first: 1) { totalCount } }')
    assert data["specs"]["totalCount"] == 0


@pytest.mark.parametrize(
    ("spec", "said", "column"),
    [
        ("hdf5 @@1.2", "unexpected '@' at column 7: expected a version", 7),
        ("hdf5 ^^zlib", "'^^' (a dependency of a dependency, Spack 1.x) cannot be answered", 6),
        ("hdf5 %%gcc", "propagated compiler preferences ('%%') cannot be answered", 6),
    ],
)
def test_a_spec_query_refused_is_one_line_with_its_column(
    gql: GraphQLClient, spec: str, said: str, column: int
) -> None:
    """A terminal draws the query with a caret under the column (`cachegql query`); a
    GraphQL message is shown as it is, so it is the line alone and the column apart."""
    error = gql.error("query($q: String) { specs(query: $q) { totalCount } }", q=spec)
    assert error["message"].startswith(said) and "\n" not in error["message"], error
    assert error["message"].endswith(f" (in the query: {spec})")
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "column": column}


def test_a_null_where_a_value_is_required_is_said_in_graphql_s_words(gql: GraphQLClient) -> None:
    for error in (
        gql.error("{ spec(hash: null) { name } }"),
        gql.error("query($h: String!) { spec(hash: $h) { name } }", h=None),
    ):
        assert error["message"].endswith("of non-null type 'String!' not to be null."), error
        assert "None" not in error["message"]
