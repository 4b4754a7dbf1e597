"""Compiled plans (schema/compiled.py) answer exactly as strawberry's stock execution.

Every query of the API tests is compared through `tests.conftest.Differential`; this
module checks which operations a plan answers, which it leaves to the stock path
(uncovered, or covered but raising), and compares random valid documents.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from cachegql.index import IndexStore
from cachegql.schema import COMPILED_STATS, CompiledExecutionContext, Context, build_schema
from cachegql.schema.app import CachegqlSchema
from cachegql.schema.compiled import PLAN_CACHE_SIZE, PLANS


class Pair:
    """The stock and the compiled schema over one index."""

    def __init__(self, index: Path) -> None:
        self.store = IndexStore(index)
        self.stock = build_schema(execution=StrawberryGraphQLCoreExecutionContext)
        self.compiled = build_schema(execution=CompiledExecutionContext)

    def answer(self, schema: CachegqlSchema, query: str, variables: dict[str, Any]) -> bytes:
        result = schema.execute_sync(
            query, variable_values=variables, context_value=Context(self.store)
        )
        errors = [e.formatted for e in result.errors or ()]
        return orjson.dumps({"data": result.data, "errors": errors})

    def outcome(self, query: str, **variables: Any) -> str:
        """How the compiled path answered `query`, once it is checked to equal stock."""
        before = dict(COMPILED_STATS)
        compiled = self.answer(self.compiled, query, variables)
        assert compiled == self.answer(self.stock, query, variables), query
        changed = [k for k, v in COMPILED_STATS.items() if v != before.get(k, 0)]
        assert len(changed) == 1, changed
        return changed[0]


@pytest.fixture(scope="module")
def pair(pages_index: Path) -> Iterator[Pair]:
    pair = Pair(pages_index)
    yield pair
    pair.store.close()


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


def test_plans_are_kept_in_a_bounded_cache(pair: Pair) -> None:
    for n in range(PLAN_CACHE_SIZE + 10):
        pair.answer(pair.compiled, f"{{ t{n}: tags {{ name }} }}", {})
    assert len(PLANS._plans) == PLAN_CACHE_SIZE


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
