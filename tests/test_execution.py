"""The fast execution (schema/execution.py) answers exactly as strawberry's stock one.

Every query the API tests send is compared through `tests.conftest.Differential`; this
module covers the cases where the fast path must step aside: nulls where the schema
forbids them, values that are not lists, values that do not serialize, permission
classes, resolver middleware.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import strawberry
from graphql import GraphQLObjectType
from graphql.execution.types import ExperimentalIncrementalExecutionResults
from strawberry.extensions import SchemaExtension
from strawberry.permission import BasePermission
from strawberry.schema.config import StrawberryConfig
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from cachegql.schema.execution import FastExecutionContext, _plain_reader


class Deny(BasePermission):
    message = "denied"

    def has_permission(self, source: Any, info: Any, **kwargs: Any) -> bool:
        return False


@strawberry.type
class Item:
    name: str
    size: int | None = None


@strawberry.interface
class Named:
    name: str


@strawberry.type
class Tagged(Named):
    """Implements an interface, so graphql-core checks each value's type (`is_type_of`)."""

    tag: str


@strawberry.type
class Holder:
    items: list[Item]
    maybe_items: list[Item | None] | None
    words: list[str]
    count: int
    maybe_words: list[str] | None = None
    tagged: list[Tagged] = strawberry.field(default_factory=list)
    secret: str = strawberry.field(permission_classes=[Deny])


def _generator() -> Iterator[Item]:
    yield from (Item(name=n) for n in ("a", "b", "c"))


def _holder(**overrides: Any) -> Holder:
    values: dict[str, Any] = {
        "items": [Item(name="a", size=1), Item(name="b")],
        "maybe_items": [Item(name="x"), None],
        "words": ["p", "q"],
        "count": 3,
        "secret": "the value",
    }
    values.update(overrides)
    return Holder(**values)


@strawberry.type
class Query:
    @strawberry.field
    def plain(self) -> Holder:
        return _holder()

    @strawberry.field
    def null_in_non_null_list(self) -> Holder | None:
        return _holder(items=[Item(name="a"), None])

    @strawberry.field
    def generator_of_objects(self) -> Holder:
        return _holder(items=_generator())

    @strawberry.field
    def generator_of_leaves(self) -> Holder:
        return _holder(words=(w for w in ("x", "y", "z")))

    @strawberry.field
    def null_leaf(self) -> Holder | None:
        return _holder(count=None)

    @strawberry.field
    def wrong_leaf(self) -> Holder | None:
        return _holder(count="not a number")

    @strawberry.field
    def string_as_list(self) -> Holder | None:
        return _holder(words="pq")

    @strawberry.field
    def null_lists(self) -> Holder | None:
        return _holder(maybe_words=None, words=None)

    @strawberry.field
    def interface_items(self) -> Holder:
        return _holder(tagged=[Tagged(name="t", tag="u")])

    @strawberry.field
    async def later(self) -> int:
        return 7

    @strawberry.field
    async def gathered(self, info: strawberry.Info) -> list[int]:
        """graphql-core's helpers for resolvers, which the fast context holds weakly."""
        helpers = info._raw_info.async_helpers
        KEPT.append(helpers)
        return await helpers.gather([asyncio.sleep(0, 1), asyncio.sleep(0, 2)])


KEPT: list[Any] = []  # helpers of finished operations


class Marker(SchemaExtension):
    """Resolver middleware: it must see every field, so the fast path is off."""

    def resolve(self, _next: Any, root: Any, info: Any, *args: Any, **kwargs: Any) -> Any:
        result = _next(root, info, *args, **kwargs)
        if isinstance(result, list) and all(isinstance(r, str) for r in result):
            return [r.upper() for r in result]
        return result.upper() if isinstance(result, str) else result


def _answer(query: str, execution: type[StrawberryGraphQLCoreExecutionContext], **kw: Any) -> bytes:
    schema = strawberry.Schema(query=Query, execution_context_class=execution, **kw)
    result = asyncio.run(schema.execute(query)) if "later" in query else schema.execute_sync(query)
    errors = [error.formatted for error in result.errors or ()]
    return orjson.dumps({"data": result.data, "errors": errors})


FIELDS = "items { name size } maybeItems { name } words count"
CASES = {
    "plain fields and lists": f"{{ plain {{ {FIELDS} }} }}",
    "null in a non-null list item": f"{{ nullInNonNullList {{ {FIELDS} }} }}",
    "a generator of objects": f"{{ generatorOfObjects {{ {FIELDS} }} }}",
    "a generator of leaves": f"{{ generatorOfLeaves {{ {FIELDS} }} }}",
    "null for a non-null leaf": f"{{ nullLeaf {{ {FIELDS} }} }}",
    "a leaf that does not serialize": f"{{ wrongLeaf {{ {FIELDS} }} }}",
    "a string where a list is due": f"{{ stringAsList {{ {FIELDS} }} }}",
    "a permission class denies": "{ plain { name: count secret } }",
    "aliases and repeats": "{ plain { a: count b: count items { n: name name } } }",
    "null lists of leaves": "{ nullLists { maybeWords } n: nullLists { words } }",
    "objects of a type with is_type_of": "{ interfaceItems { tagged { name tag } } }",
    "an async field beside plain ones": "{ a: later plain { count } b: later }",
    "graphql-core's helpers for resolvers": "{ later gathered }",
}


@pytest.mark.parametrize("query", CASES.values(), ids=list(CASES))
def test_fast_and_stock_give_identical_json(query: str) -> None:
    fast = _answer(query, FastExecutionContext)
    assert fast == _answer(query, StrawberryGraphQLCoreExecutionContext)


def test_the_cases_reach_their_outcomes() -> None:
    """Not vacuous: the edge cases do produce the errors and values they are about."""
    generated = orjson.loads(_answer(CASES["a generator of objects"], FastExecutionContext))
    assert [i["name"] for i in generated["data"]["generatorOfObjects"]["items"]] == ["a", "b", "c"]
    leaves = orjson.loads(_answer(CASES["a generator of leaves"], FastExecutionContext))
    assert leaves["data"]["generatorOfLeaves"]["words"] == ["x", "y", "z"]
    denied = orjson.loads(_answer(CASES["a permission class denies"], FastExecutionContext))
    assert denied["data"] is None and denied["errors"][0]["message"] == "denied"
    assert "the value" not in str(denied)
    for case in ("null in a non-null list item", "null for a non-null leaf"):
        body = orjson.loads(_answer(CASES[case], FastExecutionContext))
        assert list(body["data"].values()) == [None] and body["errors"], case


def test_helpers_of_a_finished_operation_say_so() -> None:
    """Held weakly, the helpers outlive their operation only to refuse politely."""
    KEPT.clear()
    body = orjson.loads(_answer("{ later gathered }", FastExecutionContext))
    assert body["data"]["gathered"] == [1, 2]
    with pytest.raises(RuntimeError, match="has finished"):
        KEPT[0].gather([])


def test_resolver_middleware_sees_every_field() -> None:
    query = "{ plain { items { name } words } }"
    fast = _answer(query, FastExecutionContext, extensions=[Marker])
    assert fast == _answer(query, StrawberryGraphQLCoreExecutionContext, extensions=[Marker])
    plain = orjson.loads(fast)["data"]["plain"]
    assert plain == {"items": [{"name": "A"}, {"name": "B"}], "words": ["P", "Q"]}


def test_only_basic_fields_are_read_directly() -> None:
    schema = strawberry.Schema(query=Query)
    holder = schema._schema.get_type("Holder")
    query = schema._schema.get_type("Query")
    assert isinstance(holder, GraphQLObjectType) and isinstance(query, GraphQLObjectType)
    assert _plain_reader(holder.fields["count"], schema._schema) is not None
    assert _plain_reader(holder.fields["words"], schema._schema) is not None
    assert _plain_reader(holder.fields["secret"], schema._schema) is None  # a permission class
    assert (
        _plain_reader(holder.fields["items"], schema._schema) is None
    )  # objects: completed per item
    assert _plain_reader(query.fields["plain"], schema._schema) is None  # a resolver


INCREMENTAL = {
    "a streamed list": "{ plain { items @stream(initialCount: 1) { name } } }",
    "deferred fields in list items": "{ plain { items { name ... @defer { size } } } }",
}


@pytest.mark.parametrize("query", INCREMENTAL.values(), ids=list(INCREMENTAL))
def test_incremental_delivery_takes_the_stock_path(query: str) -> None:
    """@stream and @defer (when a schema enables them) are graphql-core's business."""
    config = StrawberryConfig(enable_experimental_incremental_execution=True)

    async def deliveries(execution: type[StrawberryGraphQLCoreExecutionContext]) -> list[Any]:
        schema = strawberry.Schema(query=Query, execution_context_class=execution, config=config)
        result = await schema.execute(query)
        assert isinstance(result, ExperimentalIncrementalExecutionResults)
        later = [r.formatted async for r in result.subsequent_results]
        return [result.initial_result.formatted, *later]

    fast = asyncio.run(deliveries(FastExecutionContext))
    assert fast == asyncio.run(deliveries(StrawberryGraphQLCoreExecutionContext))
    assert len(fast) == 2  # delivered in two parts


CYCLES_PROBE = """
import gc, sys
from collections import Counter
from pathlib import Path
from cachegql.index import IndexStore
from cachegql.schema import Context, build_schema

store = IndexStore(Path(sys.argv[1]))
schema = build_schema()
queries = sys.argv[2:]
for query in queries:  # warm the caches of parsed documents, readers and plans
    schema.execute_sync(query, context_value=Context(store=store))
    schema.answer_sync(query, context=Context(store=store))
gc.collect()
gc.disable()
gc.set_debug(gc.DEBUG_SAVEALL)  # what is found is kept, to be named
for query in queries:
    schema.execute_sync(query, context_value=Context(store=store))
    schema.answer_sync(query, context=Context(store=store))
found = gc.collect()
print(found, Counter(type(o).__qualname__ for o in gc.garbage).most_common(8))
"""


def test_an_operation_leaves_no_reference_cycles(pages_index: Path) -> None:
    """A request's objects die with it, by reference counting, even if they were frozen
    while it ran (a reload freezes whatever is alive): nothing waits for the collector.

    Measured in a process of its own: in the test process, strawberry's caches shared by
    every schema (of validated documents, of types by name) drop other tests' schemas,
    whose graphs are cyclic, whenever they make room."""
    queries = [
        '{ specs(search: "torch scater", first: 3) { nodes { hash format package { name '
        "versions } } facets { stacks { value count } } } stacks { name oss { value } } }",
        '{ spec(hash: "0") { hash } }',  # an error: BAD_USER_INPUT
        "{ nope }",  # a validation error
    ]
    probe = [sys.executable, "-c", CYCLES_PROBE, str(pages_index), *queries]
    run = subprocess.run(probe, capture_output=True, text=True, timeout=120, check=True)
    assert run.stdout.startswith("0 "), run.stdout
