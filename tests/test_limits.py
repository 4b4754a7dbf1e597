"""The price of a query, measured before it runs: what is counted, what is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import graphql
import pytest

from cachegql.index import IndexStore
from cachegql.schema import Context, build_schema
from cachegql.schema.direct import PRICES_KEPT
from cachegql.schema.limits import LIST_BOUNDS, MAX_TOKENS, price
from cachegql.schema.price_key import price_key
from tests.conftest import GraphQLClient

ALL_FACETS = " ".join(
    f"{f} {{ value count }}"
    for f in ("compilers", "oss", "platforms", "targets", "stacks", "versions", "packages")
)


def fan_out(levels: int, width: int = 4) -> str:
    """Fragments each spreading the next level's `width` fragments: a few KB of text
    that expands to width ** levels selections."""
    fragments = []
    for level in range(levels):
        if level + 1 < levels:
            inner = " ".join(f"...L{level + 1}x{k}" for k in range(width))
        else:
            inner = "tags { name }"
        fragments += [f"fragment L{level}x{k} on Query {{ {inner} }}" for k in range(width)]
    top = " ".join(f"...L0x{k}" for k in range(width))
    return f"query {{ {top} }} " + " ".join(fragments)


def _cost(pages_index: Path, query: str, **variables: Any) -> int:
    schema = build_schema()
    document = graphql.parse(query)
    operation = next(
        d for d in document.definitions if isinstance(d, graphql.OperationDefinitionNode)
    )
    fragments = {
        d.name.value: d
        for d in document.definitions
        if isinstance(d, graphql.FragmentDefinitionNode)
    }
    from cachegql.index import size_bounds

    store = IndexStore(pages_index)
    try:
        measured = price(schema._schema, operation, fragments, variables, size_bounds(store))
    finally:
        store.close()
    return measured.cost


def test_every_list_field_of_the_schema_has_a_bound() -> None:
    schema = build_schema()._schema
    lists = set()
    for named in schema.type_map.values():
        if named.name.startswith("__") or not isinstance(named, graphql.GraphQLObjectType):
            continue
        for name, field in named.fields.items():
            kind = field.type
            while isinstance(kind, graphql.GraphQLNonNull):
                kind = kind.of_type
            if isinstance(kind, graphql.GraphQLList):
                lists.add((named.name, name))
    assert lists == set(LIST_BOUNDS)


def test_fragments_are_priced_once_not_once_per_path(pages_index: Path) -> None:
    """A fan-out of 4 ** 9 paths costs as much as those paths' answers would, and is
    priced by reading each fragment once."""
    small, large = _cost(pages_index, fan_out(3)), _cost(pages_index, fan_out(9))
    assert small > 0 and large >= small * 4**6
    assert len(fan_out(9)) < 3_000


def test_aliases_and_lists_are_counted(pages_index: Path) -> None:
    one = _cost(pages_index, "{ stacks { name compilers { value count } } }")
    ten = _cost(pages_index, "{ " + " ".join(f"a{i}: stacks {{ name }}" for i in range(10)) + " }")
    assert ten > 9 * _cost(pages_index, "{ stacks { name } }")
    assert one > _cost(pages_index, "{ stacks { name } }")  # buckets count, per item


def test_filters_are_priced_by_their_conditions(pages_index: Path) -> None:
    def with_or(n: int) -> int:
        branches = ", ".join(f'{{ version: {{ ne: "1.{i}" }} }}' for i in range(n))
        return _cost(pages_index, f"{{ specs(filter: {{ or: [{branches}] }}) {{ totalCount }} }}")

    assert with_or(100) - with_or(0) >= 100 * 50
    by_variable = _cost(
        pages_index,
        "query($f: SpecFilter) { specs(filter: $f) { totalCount } }",
        f={"or": [{"version": {"ne": f"1.{i}"}} for i in range(100)]},
    )
    assert by_variable == with_or(100)


def test_first_from_a_variable_is_its_value_or_the_cap(pages_index: Path) -> None:
    query = "query($n: Int) { specs(first: $n) { nodes { hash } } }"
    assert _cost(pages_index, query, n=5) < _cost(pages_index, query, n=50)
    # without a value, the argument's default (20) holds
    assert _cost(pages_index, query) == _cost(pages_index, query, n=20)


def test_a_variable_not_given_is_priced_at_its_default(pages_index: Path) -> None:
    """As it runs: a default of 100 is not priced as the argument's 20."""
    query = "query($n: Int = 100) { specs(first: $n) { nodes { hash } } }"
    assert _cost(pages_index, query) == _cost(pages_index, query, n=100)
    assert _cost(pages_index, query, n=5) < _cost(pages_index, query)


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        ("query($h: String!) { spec(hash: $h) { hash } }", [{"h": "abc"}, {"h": "zzzzzzz"}]),
        ("query($n: Int) { specs(first: $n) { nodes { hash } } }", [{"n": 3}, {"n": 50}, {}]),
        ("query($n: Int = 100) { specs(first: $n) { nodes { hash } } }", [{}, {"n": 1}]),
        (
            "query($p: String!) { specs(filter: { package: { eq: $p } }) { totalCount } }",
            [{"p": "zlib"}, {"p": "hdf5"}, {"p": "a b c"}],
        ),
        (
            "query($f: SpecFilter) { specs(filter: $f) { totalCount } }",
            [
                {"f": {"package": {"eq": "zlib"}}},
                {"f": {"package": {"in": ["zlib", "hdf5"]}}},
                {"f": {"package": {"in": ["zlib", "hdf5", "x"]}}},
                {"f": {"or": [{"os": {"eq": "a"}}, {"os": {"eq": "b"}}]}},
                {"f": {"or": [{"os": {"eq": "c"}}, {"os": {"eq": "d"}}]}},
                {"f": None},
            ],
        ),
        (
            "query($s: String) { packages(search: $s) { totalCount } }",
            [{"s": "zlib"}, {"s": "zstd"}, {"s": "torch scatter"}, {"s": "a b c d"}],
        ),
        (  # a search among variables of other types: the general path's strings
            "query($s: String, $n: Int) { specs(search: $s, first: $n) { totalCount } }",
            [{"s": "zlib", "n": 5}, {"s": "zstd", "n": 5}, {"s": "a b c", "n": 5}, {"n": 5}],
        ),
        (  # lists as long, of entries of other shapes
            "query($f: SpecFilter) { specs(filter: $f) { totalCount } }",
            [
                {"f": {"or": [{"os": {"eq": "a"}}, {"os": {"eq": "b"}}]}},
                {"f": {"or": [{"os": {"eq": "a"}}, {"os": {"eq": "b"}, "target": {"eq": "c"}}]}},
                {"f": {"or": [{"os": {"eq": "a"}}, {"os": {"in": ["b", "c", "d"]}}]}},
            ],
        ),
    ],
)
def test_variables_of_equal_price_keys_have_equal_prices(
    pages_index: Path, query: str, variables: list[dict[str, Any]]
) -> None:
    """The compiled path keeps a price by `price_key` of the variables: it must not key
    two prices alike (a cheap request's price reused for a dear one)."""
    names = _declared(query)
    prices: dict[object, int] = {}
    for given in variables:
        key, cost = price_key(given, names), _cost(pages_index, query, **given)
        assert key is not None
        assert prices.setdefault(key, cost) == cost
    assert len(prices) > 1 or len(variables) == 2  # the cases do price differently


def _declared(query: str) -> tuple[str, ...]:
    document = graphql.parse(query)
    operation = document.definitions[0]
    assert isinstance(operation, graphql.OperationDefinitionNode)
    return tuple(d.variable.name.value for d in operation.variable_definitions or ())


def test_a_price_key_stays_small_whatever_is_sent() -> None:
    """A kept key holds what the declared variables' shapes say, never a client's text."""
    deep: dict[str, Any] = {"not": None}
    for _ in range(40):
        deep = {"not": deep}
    assert price_key({"f": deep}, ["f"]) is None
    assert price_key({"f": {"package": {"in": [str(i) for i in range(1000)]}}}, ["f"]) is None
    assert price_key({"f": {"x" * 10_000: 1}}, ["f"]) is None  # long object keys
    # Variables the operation does not declare cannot change its price: left out.
    undeclared = {"h": "x", **{f"v{i}": "" for i in range(100_000)}}
    assert price_key(undeclared, ["h"]) == price_key({"h": "abc"}, ["h"]) == (1,)
    assert price_key({"h": "x" * 1_000_000}, ["h"]) == (1,)
    assert price_key({"h": "abc"}, ["h"]) != price_key({"h": "a b"}, ["h"])
    assert price_key({"n": 1}, ["n"]) != price_key({"n": True}, ["n"])
    assert price_key({"n": 1}, ["n"]) != price_key({"n": 2}, ["n"])
    assert price_key({}, ["n"]) != price_key({"n": None}, ["n"])  # a default, or null


def test_a_kept_price_holds_only_for_the_limits_it_was_measured_with(pages_index: Path) -> None:
    """The same request priced within a page limit of 5 is refused under one of 100: the
    kept prices start again when the index's bounds or the page limit change."""
    store = IndexStore(pages_index)
    query = "query($n: Int) { specs(first: $n) { nodes { hash name version } } }"
    schema = build_schema(max_cost=300)  # first 50 costs 138 capped at 5, 453 at 100
    try:
        small = schema.answer_sync(query, {"n": 50}, Context(store, max_first=5))
        assert small.execution == "compiled" and small.body is not None
        large = schema.answer_sync(query, {"n": 50}, Context(store, max_first=100))
        assert large.execution == "invalid" and large.result is not None
        assert large.result.errors and large.result.errors[0].extensions
        assert large.result.errors[0].extensions["code"] == "QUERY_TOO_COMPLEX"
    finally:
        store.close()


def test_prices_are_kept_for_a_few_shapes_only(pages_index: Path) -> None:
    store = IndexStore(pages_index)
    query = "query($n: Int) { specs(first: $n) { nodes { hash } } }"
    schema = build_schema()
    direct = schema.direct
    assert direct is not None
    try:
        for n in range(PRICES_KEPT * 2):
            assert schema.answer_sync(query, {"n": n}, Context(store)).execution == "compiled"
        known, _ = direct._known(query, None, None)
        assert known is not None
        prepared = known[0]
        assert prepared.prices is not None
        assert 0 < len(prepared.prices[1]) <= PRICES_KEPT
    finally:
        store.close()


@pytest.mark.parametrize(
    "query",
    [
        fan_out(9),
        "{ "
        + " ".join(f"a{i}: stacks {{ name compilers {{ value count }} }}" for i in range(200))
        + " }",
        "{ "
        + " ".join(f"a{i}: specs(first: 0) {{ facets {{ {ALL_FACETS} }} }}" for i in range(100))
        + " }",
        "{ specs(filter: { or: ["
        + ", ".join(f'{{ version: {{ ne: "1.{i}" }} }}' for i in range(400))
        + "] }) { totalCount } }",
    ],
    ids=["fragment-fan-out", "stacks-aliases", "facets-aliases", "or-flood"],
)
def test_expensive_documents_are_refused_naming_cost_and_limit(
    pages_index: Path, query: str
) -> None:
    """Under a budget of 20,000 (the default is 1,000,000; the test index is small)."""
    store = IndexStore(pages_index)
    try:
        result = build_schema(max_cost=20_000).execute_sync(
            query, context_value=Context(store=store)
        )
    finally:
        store.close()
    assert result.data is None and result.errors
    (error,) = result.errors
    assert error.extensions is not None and error.extensions["code"] == "QUERY_TOO_COMPLEX"
    assert error.extensions["cost"] > 20_000
    assert "the limit is 20,000" in error.message


def test_too_many_tokens_is_too_complex(gql: GraphQLClient) -> None:
    query = "{ " + " ".join(f'a{i}: spec(hash: "22xi3lv") {{ name }}' for i in range(2_000)) + " }"
    error = gql.error(query)
    assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    assert str(MAX_TOKENS) in error["message"]


def test_the_introspection_queries_of_clients_pass(gql: GraphQLClient) -> None:
    query = graphql.get_introspection_query(
        descriptions=True,
        specified_by_url=True,
        directive_is_repeatable=True,
        schema_description=True,
        input_value_deprecation=True,
    )
    assert gql.data(query)["__schema"]["queryType"]["name"] == "Query"


def test_pricing_uses_the_served_index(pages_index: Path) -> None:
    """The same query, priced with the real bounds of the index of the request."""
    store = IndexStore(pages_index)
    try:
        result = build_schema().execute_sync(
            "{ stacks { name compilers { value } } }", context_value=Context(store=store)
        )
    finally:
        store.close()
    assert result.errors is None
