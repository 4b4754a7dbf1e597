"""A faster execution of plain fields, without changing what any query returns.

graphql-core resolves every field through the same general machinery: a resolve-info
object, a path, a completion step. For the bulk of our answers (scalar fields read
straight off a dataclass, and lists of small objects made only of such fields, such
as facet buckets and variants) that machinery costs several times the work itself.
This execution context reads those fields directly and hands everything else, and
anything unexpected (a null where the schema forbids one, a value that does not
serialize, a list that is not a list or tuple), back to graphql-core, which then
reports it exactly as it would have.

A field is plain when `readers.plain_reader` reads it: strawberry calls it basic (no
resolver, no extensions, so no permission classes either) and reads it with `getattr`, or
its resolver takes the source alone (`Spec`'s fields) and no exception handler needs
strawberry's wrapper. This overrides graphql-core 3.3's `execute_fields` and
`complete_iterable_value`; pyproject pins that minor version, and tests/test_execution.py
compares every query of the API tests with the stock path.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import Any, ClassVar, cast

from graphql import (
    GraphQLField,
    GraphQLLeafType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfoHelpers,
    GraphQLSchema,
)
from graphql.execution.collect_fields import FieldDetailsList, GroupedFieldSet
from graphql.pyutils import Path
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from cachegql.schema.readers import plain_reader

__all__ = ["FastExecutionContext"]

Reader = Callable[[Any], Any]
# Only these are read directly: anything else may be a one-shot iterator.
_LISTS = (list, tuple)


class _SlowPathError(Exception):
    """This value needs graphql-core's own completion."""


def _serializer(field_type: GraphQLOutputType) -> Callable[[Any], Any] | None:
    """A function completing a value of `field_type`, if it is a leaf or a list of leaves."""
    non_null = isinstance(field_type, GraphQLNonNull)
    inner = field_type.of_type if isinstance(field_type, GraphQLNonNull) else field_type
    if isinstance(inner, GraphQLLeafType):
        serialize = inner.serialize

        def leaf(value: Any) -> Any:
            if value is None:
                if non_null:
                    raise _SlowPathError
                return None
            return serialize(value)

        return leaf
    if isinstance(inner, GraphQLList):
        item = _serializer(inner.of_type)
        if item is None:
            return None

        def leaves(value: Any) -> Any:
            if value is None:
                if non_null:
                    raise _SlowPathError
                return None
            if not isinstance(value, _LISTS):
                raise _SlowPathError
            return [item(v) for v in value]

        return leaves
    return None


def _plain_reader(field: GraphQLField, schema: GraphQLSchema) -> Reader | None:
    """How to read and complete a field that `readers.plain_reader` reads off its source."""
    get = plain_reader(field, schema)
    serialize = _serializer(field.type)
    if get is None or serialize is None:
        return None
    return lambda source: serialize(get(source))


def _weakly(method: Callable[..., Any]) -> Callable[..., Any]:
    """`method`, called through a weak reference to its object."""
    reference = weakref.WeakMethod(method)

    def call(*args: Any, **kwargs: Any) -> Any:
        bound = reference()
        if bound is None:
            raise RuntimeError("the operation this belonged to has finished")
        return bound(*args, **kwargs)

    return call


class FastExecutionContext(StrawberryGraphQLCoreExecutionContext):
    """graphql-core's execution, with plain scalar fields and leaf-only lists read directly."""

    _readers: ClassVar[dict[int, tuple[GraphQLField, Reader | None]]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # graphql-core keeps bound methods of the context on the context itself: a cycle
        # that kept every request's context, and the index it read, alive until the cycle
        # collector ran (and forever once frozen). Held weakly, the context dies with its
        # request, by reference counting.
        self.async_helpers = GraphQLResolveInfoHelpers(
            gather=_weakly(self.gather_async_work), track=_weakly(self.track_async_work)
        )

    @property
    def _has_middleware(self) -> bool:
        # Extensions that hook into resolvers are middleware: they must see every field.
        manager = self.middleware_manager
        return bool(manager and manager.middlewares)

    def _reader(self, parent_type: GraphQLObjectType, details: FieldDetailsList) -> Reader | None:
        node = details[0].node
        field = parent_type.fields.get(node.name.value)
        if field is None or node.arguments or node.directives or self._has_middleware:
            return None
        cached = self._readers.get(id(field))
        if cached is None or cached[0] is not field:
            cached = self._readers[id(field)] = (field, _plain_reader(field, self.schema))
        return cached[1]

    def execute_fields(
        self,
        parent_type: GraphQLObjectType,
        source_value: Any,
        path: Path | None,
        grouped_field_set: GroupedFieldSet,
        position_context: Any,
    ) -> Any:
        results: dict[str, Any] = {}
        rest: GroupedFieldSet = {}
        for response_name, details in grouped_field_set.items():
            reader = self._reader(parent_type, details)
            if reader is not None:
                try:
                    results[response_name] = reader(source_value)
                    continue
                except Exception:
                    pass
            rest[response_name] = details
        if not rest:
            return results
        others = super().execute_fields(parent_type, source_value, path, rest, position_context)
        if self.is_awaitable(others):
            return self._merge_later(grouped_field_set, results, others)
        return _in_order(grouped_field_set, results, cast("dict[str, Any]", others))

    async def _merge_later(
        self, grouped_field_set: GroupedFieldSet, results: dict[str, Any], others: Any
    ) -> dict[str, Any]:
        return _in_order(grouped_field_set, results, await others)

    def complete_iterable_value(
        self,
        item_type: GraphQLOutputType,
        field_details_list: FieldDetailsList,
        info: Any,
        path: Path,
        items: Iterable[Any],
        position_context: Any,
    ) -> Any:
        fast = self._object_list(item_type, field_details_list, path, items)
        if fast is not None:
            return fast
        return super().complete_iterable_value(
            item_type, field_details_list, info, path, items, position_context
        )

    def _object_list(
        self,
        item_type: GraphQLOutputType,
        field_details_list: FieldDetailsList,
        path: Path,
        items: Iterable[Any],
    ) -> list[dict[str, Any] | None] | None:
        """A list of objects whose selected fields are all plain: one dict per item."""
        object_type = item_type.of_type if isinstance(item_type, GraphQLNonNull) else item_type
        if not isinstance(items, _LISTS):
            return None
        if not isinstance(object_type, GraphQLObjectType) or object_type.is_type_of:
            return None
        if self.get_stream_usage(field_details_list, path) is not None:
            return None
        grouped, defers, _ = self.collect_subfields(object_type, field_details_list)
        if defers:
            return None
        readers = []
        for response_name, details in grouped.items():
            reader = self._reader(object_type, details)
            if reader is None:
                return None
            readers.append((response_name, reader))
        non_null = isinstance(item_type, GraphQLNonNull)

        def complete(item: Any) -> dict[str, Any] | None:
            if item is None:
                if non_null:
                    raise _SlowPathError
                return None
            return {name: read(item) for name, read in readers}

        try:
            return [complete(item) for item in items]
        except Exception:
            return None


def _in_order(
    grouped_field_set: GroupedFieldSet, fast: dict[str, Any], others: dict[str, Any]
) -> dict[str, Any]:
    """Results in the order the query selected them (GraphQL keeps selection order)."""
    merged = {}
    for name in grouped_field_set:
        if name in fast:
            merged[name] = fast[name]
        elif name in others:
            merged[name] = others[name]
    return merged
