"""Compiled plans (schema/compiled.py, schema/direct.py) answer exactly as strawberry's
stock execution.

Every query of the API tests is compared through `tests.conftest.Differential`; this
module checks which operations a plan answers, which it leaves to the stock path
(uncovered, invalid, or covered but raising), and compares random valid documents.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest
import strawberry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strawberry.schema.exceptions import CannotGetOperationTypeError
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from cachegql.index import IndexStore, deadline
from cachegql.schema import Context, build_schema
from cachegql.schema.direct import MAX_PLANNED_CHARS, PLAN_CACHE_SIZE
from tests.conftest import Pair


@pytest.fixture(scope="module")
def a_hash(pair: Pair) -> str:
    snapshot = pair.store.snapshot(None)
    return snapshot.specs([0])[0].hash


COVERED = [
    "{ tags { name numSpecs numPackages isDefault __typename } }",
    '{ spec(hash: "HASH") { hash shortHash name version compiler { name version raw } '
    "os platform target variants { name value raw } stacks size sizeBytes tarball "
    "namespace format package { name versions numSpecs } } }",
    '{ a: spec(hash: "HASH") { ...S } b: spec(hash: "HASH") { ... on Spec { hash } } } '
    "fragment S on Spec { name h: hash }",
    "{ specs(first: 3) { totalCount pageInfo { hasNextPage endCursor } "
    "nodes { hash name } edges { cursor node { hash } } facets { compilers(first: 2) "
    "{ value count } } } }",
    "{ packages(first: 2) { totalCount nodes { name versions compilers oss stacks "
    "numSpecsByStack { stack count } } } }",
    "{ stacks { name numSpecs compilers { value count } } }",
    '{ specs(query: "%gcc", first: 2) { nodes { hash dependencies { name hash spec '
    "{ name } } } } }",
    # Lists of COLUMN_MIN_ITEMS objects or more, completed a field at a time: leaves of
    # each kind (nullable ones too), lists of leaves, objects, aliases, __typename, a
    # page's own specs (its batch's columns) and the same specs through edges (not).
    "{ specs(first: 12) { nodes { __typename hash shortHash name version versions "
    "compiler { name version raw } os platform target variants { name value raw } "
    "stacks size sizeBytes tarball namespace format h: hash } edges { cursor node { "
    "hash name compiler { name } } } facets { targets { value count __typename } "
    "versions { value count } } } }",
    "{ packages(first: 12) { nodes { name numSpecsByStack { stack count } "
    "specs(first: 9) { nodes { hash name } } } } }",
    '{ specs(query: "%gcc", first: 10) { nodes { hash dependencies { name hash version '
    "deptypes virtuals spec { name hash } } } } }",
]


@pytest.mark.parametrize("query", COVERED)
def test_covered_operations_are_answered_by_their_plan(pair: Pair, a_hash: str, query: str) -> None:
    assert pair.outcome(query.replace("HASH", a_hash)) == "compiled"


def test_variables_are_bound_at_run_time(pair: Pair, a_hash: str) -> None:
    query = (
        "query ($h: String!, $n: Int) { spec(hash: $h) { hash } "
        "specs(first: $n) { nodes { hash } } }"
    )
    assert pair.outcome(query, h=a_hash, n=1) == "compiled"
    assert pair.outcome(query, h=a_hash[:7], n=2) == "compiled"


UNCOVERED = [
    "{ __schema { queryType { name } } }",
    '{ __type(name: "Spec") { name } }',
    "query ($x: Boolean!) { tags @include(if: $x) { name } }",
    "{ tags { name ... @skip(if: true) { numSpecs } } }",
]


@pytest.mark.parametrize("query", UNCOVERED)
def test_uncovered_operations_run_the_stock_path(pair: Pair, query: str) -> None:
    assert pair.outcome(query, x=True) == "uncovered"


FALLING_BACK = [
    '{ spec(hash: "0") { hash } }',  # BAD_USER_INPUT from the resolver
    '{ tags { name } specs(after: "nonsense") { totalCount } }',  # a bad cursor
    "{ specs(first: -1) { totalCount } }",
    "{ specs { facets { compilers(first: -1) { value } } } }",
]


@pytest.mark.parametrize("query", FALLING_BACK)
def test_plans_that_raise_fall_back_with_the_stock_errors(pair: Pair, query: str) -> None:
    assert pair.outcome(query) == "fallback"


INVALID = [
    "{ tags { name }",  # does not parse
    "{ tags { nope } }",  # fails validation
    "query ($x: Int) { tags { name } }",  # an unused variable ($: variable rules run)
    "{ tags { name } } fragment F on Tag { name }",  # an unused fragment
    "{ tags @nope { name } }",  # an unknown directive
    "{ tags { name ...F } } fragment F on Tag { ...F }",  # a fragment cycle
    "query ($n: Int!) { specs(first: $n) { totalCount } }",  # $n not given
    "{ tags { name(x: 1) } }",  # an unknown argument
]


@pytest.mark.parametrize("query", INVALID)
def test_documents_failing_before_execution_get_the_stock_errors(pair: Pair, query: str) -> None:
    assert pair.outcome(query) == "invalid"


def test_an_operation_is_planned_by_document_text_and_name(pair: Pair, a_hash: str) -> None:
    direct = pair.compiled.direct
    assert direct is not None
    document = (
        f'query One {{ spec(hash: "{a_hash}") {{ hash }} }} '
        "query Two { tags { name numSpecs } } "
    )
    before = len(direct)
    for name in ("One", "Two", "One"):
        answer = pair.compiled.answer_sync(document, None, Context(pair.store), name)
        assert answer.execution == "compiled"
        stock = pair.stock.execute_sync(
            document, context_value=Context(pair.store), operation_name=name
        )
        assert answer.body == orjson.dumps({"data": stock.data})
    assert len(direct) == before + 2
    with pytest.raises(CannotGetOperationTypeError):  # several, none named: a request error
        pair.compiled.answer_sync(document, None, Context(pair.store))
    with pytest.raises(CannotGetOperationTypeError):
        pair.compiled.answer_sync(document, None, Context(pair.store), "Three")


def test_the_cost_limit_prices_each_request_with_its_variables(pages_index: Path) -> None:
    """A plan is refused exactly when the stock path refuses: per request, as a page size
    given as a variable changes the price (a variable-free one is priced once per index)."""
    store = IndexStore(pages_index)
    query = "query ($n: Int) { specs(first: $n) { nodes { hash name version } } }"
    limited = build_schema(max_cost=200)
    stock = build_schema(execution=StrawberryGraphQLCoreExecutionContext, compiled=False)
    try:
        small = limited.answer_sync(query, {"n": 2}, Context(store))
        assert small.execution == "compiled" and small.body is not None
        large = limited.answer_sync(query, {"n": 50}, Context(store))
        assert large.execution == "invalid" and large.result is not None
        assert large.result.errors and large.result.errors[0].extensions
        assert large.result.errors[0].extensions["code"] == "QUERY_TOO_COMPLEX"
        again = limited.answer_sync(query, {"n": 2}, Context(store))
        assert again.body == small.body
        expected = stock.execute_sync(query, {"n": 2}, context_value=Context(store))
        assert small.body == orjson.dumps({"data": expected.data})
    finally:
        store.close()


def test_a_document_over_the_planned_size_runs_the_stock_path(pair: Pair) -> None:
    query = "{ tags { name } } # " + "x" * MAX_PLANNED_CHARS
    assert pair.outcome(query) == "uncovered"


def test_a_plan_cut_by_the_time_budget_fails_as_the_stock_path(pair: Pair) -> None:
    """The index stops a query past its deadline; a plan then hands it to the stock path,
    which meets the same passed deadline and answers its coded error."""
    query = '{ specs(search: "zlib") { totalCount } }'
    with deadline(0.0):
        answer = pair.compiled.answer_sync(query, None, Context(pair.store))
    with deadline(0.0):
        stock = pair.stock.execute_sync(query, context_value=Context(pair.store))
    assert answer.execution == "fallback" and answer.result is not None
    assert stock.errors and answer.result.errors
    assert [e.formatted for e in answer.result.errors] == [e.formatted for e in stock.errors]
    assert stock.errors[0].extensions == {"code": "QUERY_TOO_COMPLEX"}


def test_a_plan_failing_late_leaves_the_stock_path_its_whole_budget(pair: Pair) -> None:
    """The budget is spent (as by a long plan) when the plan meets a user error: the
    stock path still gets a budget of its own, and answers as it answers alone."""
    query = '{ z: spec(hash: "0") { hash } s: specs(search: "zlib") { totalCount } }'
    with deadline(0.2):
        time.sleep(0.25)
        answer = pair.compiled.answer_sync(query, None, Context(pair.store))
    with deadline(0.2):
        stock = pair.stock.execute_sync(query, context_value=Context(pair.store))
    assert answer.execution == "fallback" and answer.result is not None
    assert stock.data and stock.data["s"]["totalCount"] > 0
    assert answer.result.data == stock.data
    assert [e.formatted for e in answer.result.errors or ()] == [
        e.formatted for e in stock.errors or ()
    ]


def test_plans_are_kept_in_a_bounded_cache(pair: Pair) -> None:
    assert pair.compiled.direct is not None
    for n in range(PLAN_CACHE_SIZE + 10):
        pair.compiled_answer(f"{{ t{n}: tags {{ name }} }}", {})
    assert len(pair.compiled.direct) == PLAN_CACHE_SIZE


SPEC_FIELDS = [
    "hash",
    "shortHash",
    "name",
    "tag",
    "version",
    "versions",
    "os",
    "platform",
    "target",
    "stacks",
    "size",
    "sizeBytes",
    "tarball",
    "namespace",
    "format",
    "__typename",
    "compiler { name version raw }",
    "variants { name value }",
    "package { name numSpecs versions }",
    "dependencies { name deptypes virtuals version }",
]


@st.composite
def spec_selection(draw: st.DrawFn) -> str:
    """A selection on Spec: fields, some aliased, some in an inline fragment."""
    fields = draw(st.lists(st.sampled_from(SPEC_FIELDS), min_size=1, max_size=6))
    parts = []
    for i, field in enumerate(fields):
        alias = draw(st.sampled_from(["", f"a{i}: "]))
        part = alias + field
        if draw(st.booleans()):
            part = f"... on Spec {{ {part} }}"
        parts.append(part)
    return " ".join(parts)


@st.composite
def documents(draw: st.DrawFn) -> str:
    selection = draw(spec_selection())
    first = draw(st.integers(min_value=0, max_value=5))
    root = draw(
        st.sampled_from(
            [
                f"specs(first: {first}) {{ totalCount nodes {{ ...F }} }}",
                f'specs(first: {first}, query: "%gcc") {{ nodes {{ ...F }} '
                "pageInfo { hasNextPage } }",
                f"packages(first: {first}) {{ nodes {{ name specs(first: 2) "
                "{ nodes { ...F } } } }",
            ]
        )
    )
    return f"{{ {root} }} fragment F on Spec {{ {selection} }}"


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(documents())
def test_random_documents_answer_as_stock(pair: Pair, document: str) -> None:
    assert pair.outcome(document) == "compiled"


def _plan_of(schema: Any, query: str) -> Any:
    from graphql import OperationDefinitionNode, parse

    from cachegql.schema.compiled import compile_operation

    operation = parse(query).definitions[0]
    assert isinstance(operation, OperationDefinitionNode)
    plan = compile_operation(schema._schema.query_type, operation, {}, schema.schema_converter)
    assert plan is not None
    return plan


def test_compiling_grows_with_the_document_not_twice_per_level(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each selection is compiled once, though a plan keeps two forms of it (an object
    alone, a table of them): compiled twice, each level doubled the work below it."""
    from cachegql.schema import compiled

    calls: list[int] = []
    original = compiled._Compiler._fields

    def counted(self: Any, *args: Any) -> Any:
        calls.append(1)
        return original(self, *args)

    monkeypatch.setattr(compiled._Compiler, "_fields", counted)
    schema = build_schema()
    counts = {}
    for depth in (1, 2, 3):
        chain = "specs(first: 1) { nodes { package { " * depth + "name" + " } } }" * depth
        query = "{ " + chain + " }"
        calls.clear()
        _plan_of(schema, "query " + query)
        counts[depth] = len(calls)
    assert counts[2] - counts[1] == counts[3] - counts[2] == 3  # 3 objects a level


@strawberry.type
class Item:
    name: str

    @strawberry.field
    def label(self) -> str:
        return "same for all"


@strawberry.type
class ItemQuery:
    @strawberry.field
    def items(self, broken: bool = False) -> list[Item]:
        found: list[Any] = [Item(name=str(i)) for i in range(12)]
        # A null where the type forbids one: what a plan must not answer for.
        return [*found[:7], None, *found[8:]] if broken else found  # type: ignore[list-item]


def test_a_null_among_many_objects_leaves_the_answer_to_the_stock_path() -> None:
    """A list of objects long enough to be completed a field at a time, where a resolver
    breaks its type with a null: the plan must not answer, even when no field it selects
    reads the objects (`__typename`, a resolver that ignores its source)."""
    from graphql.execution.values import get_variable_values

    schema = strawberry.Schema(query=ItemQuery)
    variables = get_variable_values(schema._schema, [], {})
    assert not isinstance(variables, list)
    for selection in ("__typename", "label", "name", "__typename label name"):
        whole = f"{{ items {{ {selection} }} }}"
        stock = schema.execute_sync(whole)
        assert stock.errors is None
        assert _plan_of(schema, "query " + whole).run(None, None, variables) == stock.data
        broken = f"{{ items(broken: true) {{ {selection} }} }}"
        assert schema.execute_sync(broken).errors  # "Cannot return null for non-nullable"
        with pytest.raises(Exception):  # noqa: B017  # any: the caller falls back
            _plan_of(schema, "query " + broken).run(None, None, variables)


@strawberry.type
class Measure:
    unit: str
    size_bytes: int | None  # `sizeBytes` in the schema


@strawberry.type
class MeasureQuery:
    @strawberry.field
    def measures(self, odd: str = "") -> list[Measure]:
        found = [Measure(unit=f"u{i}", size_bytes=i * 1000) for i in range(3)]
        extra = {"null": None, "big": 2**40, "bool": True}
        return found + ([Measure(unit="odd", size_bytes=extra[odd])] if odd else [])


def test_an_object_of_two_plain_leaves_is_answered_as_stock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An object of two plain attributes (a facet's bucket) is completed in one step
    (`compiled._pair`), whatever the order, aliases or repeats of its fields, a null
    included where the field allows one; a value it cannot pass as it is (an `Int` past
    32 bits, a `bool` for an `Int`) is completed by the per-field path, which answers or
    fails as the stock path does."""
    from graphql.execution.values import get_variable_values

    from cachegql.schema import compiled, leaf_columns

    paired: list[object] = []

    def counted(*args: Any) -> Any:
        serialize = leaf_columns.pair_serializer(*args)
        if serialize is None:
            return None

        def serialize_counted(values: Any) -> Any:
            paired.append(values)
            return serialize(values)

        return serialize_counted

    monkeypatch.setattr(compiled, "pair_serializer", counted)
    schema = strawberry.Schema(query=MeasureQuery)
    variables = get_variable_values(schema._schema, [], {})
    assert not isinstance(variables, list)
    for selection in ("unit sizeBytes", "sizeBytes unit", "a: unit b: unit", "unit"):
        for odd in ("", "null", "big", "bool"):
            whole = f'{{ measures(odd: "{odd}") {{ {selection} }} }}'
            stock = schema.execute_sync(whole)
            paired.clear()
            plan = _plan_of(schema, "query " + whole)
            if stock.errors:  # an Int past 32 bits: the plan leaves it to the stock path
                assert "size" in selection and odd == "big"
                with pytest.raises(Exception):  # noqa: B017  # any: the caller falls back
                    plan.run(None, None, variables)
                continue
            # graphql-core answers a `bool` for an `Int` as a number: so does the plan.
            assert orjson.dumps(plan.run(None, None, variables)) == orjson.dumps(stock.data)
            assert bool(paired) == (selection != "unit"), selection  # the one step taken
