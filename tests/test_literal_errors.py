"""A literal value of the wrong type is refused naming its argument, its field or directive,
and where within an input object it is (`schema/literal_errors.py`), over HTTP."""

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
