"""Fields read straight off their source (schema/readers.py) answer as strawberry does.

`source_reader` must take only the fields strawberry's wrapper adds nothing to, and
`resolve_directly` must leave every answer, error included, as strawberry gives it (and
change nothing where exception handlers need the wrapper).
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest
import strawberry
from graphql import GraphQLField, GraphQLObjectType
from strawberry.permission import BasePermission
from strawberry.schema.schema_converter import GraphQLCoreConverter

from cachegql.schema.execution import FastExecutionContext
from cachegql.schema.readers import plain_reader, resolve_directly, source_reader


class Deny(BasePermission):
    message = "denied"

    def has_permission(self, source: Any, info: Any, **kwargs: Any) -> bool:
        return False


def _doubled(root: Box) -> int:
    return root.size * 2


def _halved(parent: strawberry.Parent[Box]) -> int:
    return root_size(parent) // 2


def root_size(box: Box) -> int:
    return box.size


def _failing(root: Box) -> int:
    raise ValueError(f"no size for {root.name}")


def _null(root: Box) -> int:
    return None  # type: ignore[return-value]  # a null where the schema forbids one


@strawberry.type
class Box:
    name: str
    size: int
    doubled: int = strawberry.field(resolver=_doubled)
    halved: int = strawberry.field(resolver=_halved)
    failing: int | None = strawberry.field(resolver=_failing)
    null: int = strawberry.field(resolver=_null)
    guarded: int = strawberry.field(resolver=_doubled, permission_classes=[Deny])

    @strawberry.field
    def shouted(self) -> str:
        return self.name.upper()

    @strawberry.field
    def with_info(self, info: strawberry.Info) -> str:
        return type(info).__name__

    @strawberry.field
    def scaled(self, by: int = 3) -> int:
        return self.size * by

    @strawberry.field
    async def later(self) -> int:
        return self.size


@strawberry.type
class Query:
    @strawberry.field
    def boxes(self) -> list[Box]:
        return [Box(name="a", size=4), Box(name="b", size=10)]


DIRECT = {"name", "size", "doubled", "halved", "failing", "null", "shouted"}
"""The fields of `Box` read off their source; the others need strawberry's wrapper:
`info`, an argument, a permission class (an extension), an async resolver."""


def _fields(schema: strawberry.Schema) -> dict[str, GraphQLField]:
    box = schema._schema.type_map["Box"]
    assert isinstance(box, GraphQLObjectType)
    return dict(box.fields)


def test_only_the_fields_that_need_nothing_more_are_read_directly() -> None:
    fields = _fields(strawberry.Schema(query=Query))
    readers = {}
    for field in fields.values():
        definition = field.extensions[GraphQLCoreConverter.DEFINITION_BACKREF]
        readers[definition.python_name] = source_reader(definition)
    direct = {name: read for name, read in readers.items() if read is not None}
    assert set(direct) == DIRECT
    box = Box(name="x", size=6)
    values = [direct[name](box) for name in ("name", "size", "doubled", "halved", "shouted")]
    assert values == ["x", 6, 12, 3, "X"]


def test_resolve_directly_replaces_only_those_resolvers() -> None:
    schema = strawberry.Schema(query=Query)
    fields = _fields(schema)
    before = {name: field.resolve for name, field in fields.items()}
    resolve_directly(schema._schema, schema.schema_converter)
    changed = {
        field.extensions[GraphQLCoreConverter.DEFINITION_BACKREF].python_name
        for name, field in fields.items()
        if field.resolve is not before[name]
    }
    # Basic fields keep strawberry's resolver (graphql-core's default reads them anyway).
    assert changed == DIRECT - {"name", "size"}
    assert {name for name, f in fields.items() if plain_reader(f, schema._schema)} == DIRECT


def test_plain_readers_need_no_resolve_directly_but_no_exception_handlers() -> None:
    """The fast execution context reads the same fields plainly where graphql-core keeps
    strawberry's resolvers (`compiled=False`); with exception handlers, basic ones only."""
    schema = strawberry.Schema(query=Query)
    fields = _fields(schema)
    assert {name for name, f in fields.items() if plain_reader(f, schema._schema)} == DIRECT
    handled = strawberry.Schema(query=Query, exception_handlers=[NoSizeHandler()])
    fields = _fields(handled)
    plain = {name for name, f in fields.items() if plain_reader(f, handled._schema)}
    assert plain == {"name", "size"}


QUERIES = [
    "{ boxes { name size doubled halved shouted } }",
    "{ boxes { doubled @include(if: true) halved @skip(if: false) } }",
    "{ boxes { name failing } }",
    "{ boxes { name null } }",
    "{ boxes { guarded } }",
    "{ boxes { withInfo scaled(by: 2) later } }",
]


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("execution", [None, FastExecutionContext])
def test_answers_and_errors_are_strawberrys(query: str, execution: Any) -> None:
    def answer(direct: bool) -> bytes:
        options = {} if execution is None else {"execution_context_class": execution}
        schema = strawberry.Schema(query=Query, **options)
        if direct:
            resolve_directly(schema._schema, schema.schema_converter)
        result = asyncio.run(schema.execute(query))
        errors = [e.formatted for e in result.errors or ()]
        return orjson.dumps({"data": result.data, "errors": errors})

    assert answer(True) == answer(False)


def test_the_error_cases_do_err() -> None:
    """Not vacuous: the resolver that raises and the null are reported as errors."""
    schema = strawberry.Schema(query=Query)
    resolve_directly(schema._schema, schema.schema_converter)
    failed = schema.execute_sync(QUERIES[2])
    assert failed.errors and failed.errors[0].message == "no size for a"
    assert failed.data == {
        "boxes": [{"name": "a", "failing": None}, {"name": "b", "failing": None}]
    }
    null = schema.execute_sync(QUERIES[3])
    assert null.errors and null.data is None  # up to the non-null list, and the root


@strawberry.type
class NoSize:
    reason: str


class NoSizeHandler(strawberry.ExceptionHandler[ValueError, NoSize]):
    def handle(self, exception: ValueError, *, field: Any, info: Any) -> NoSize:
        return NoSize(reason=str(exception))


def _measured(root: Crate) -> Box | NoSize:
    raise ValueError(f"no size for {root.name}")


@strawberry.type
class Crate:
    name: str
    measured: Box | NoSize = strawberry.field(resolver=_measured)
    doubled: int = strawberry.field(resolver=lambda root: len(root.name) * 2)


@strawberry.type
class CrateQuery:
    @strawberry.field
    def crates(self) -> list[Crate]:
        return [Crate(name="c")]


@pytest.mark.parametrize("execution", [None, FastExecutionContext])
def test_exception_handlers_keep_strawberrys_wrapper(execution: Any) -> None:
    options = {} if execution is None else {"execution_context_class": execution}
    schema = strawberry.Schema(query=CrateQuery, exception_handlers=[NoSizeHandler()], **options)
    crate = schema._schema.type_map["Crate"]
    assert isinstance(crate, GraphQLObjectType)
    before = {name: field.resolve for name, field in crate.fields.items()}
    resolve_directly(schema._schema, schema.schema_converter)
    assert {name: field.resolve for name, field in crate.fields.items()} == before
    result = schema.execute_sync("{ crates { doubled measured { ... on NoSize { reason } } } }")
    assert result.errors is None
    assert result.data == {"crates": [{"doubled": 2, "measured": {"reason": "no size for c"}}]}
