"""Compiled queries: each validated operation planned once, then run as direct calls.

graphql-core executes a document by walking it again on every request: collecting
fields, building a resolve-info object and a path for every field, completing every
value through its general machinery. A plan does that walk once per operation (fragments
and aliases flattened, each field resolved to a reader or to its resolver, each type to a
completion function) and each request then only calls those functions with the request's
variables bound. How each field is read off its source is `field_reads`; what is selected,
`selections`.

A list of `COLUMN_MIN_ITEMS` or more objects is completed a field at a time (`table`):
each field read for all the objects (a page of specs reads its batch's column,
`readers.reads_many`), its values completed together (a column of strings is its own
JSON: `leaf_columns`), then zipped into one dict per object: a 100-spec page of nested
fields (`page100_nested`) makes 10,885 Python calls where value by value made 18,408. An
object of two plain attributes of leaves (a facet's bucket) is read and serialized in one
step (`_pair`): the `stacks` query, 317 buckets, takes 437 µs where it took 615.

A plan covers query operations made of object types, lists and leaves, without
directives or introspection; `compile_operation` returns None for anything else. A plan
never reports an error itself: should any call of it raise, or a value not be what the
schema says (a null where it forbids one, a leaf that does not serialize, a list that is
not a list), it raises, and its caller (`direct`) runs the operation through the stock
path, which then answers exactly as it would have.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import repeat
from operator import attrgetter, is_
from typing import Any, NamedTuple

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLField,
    GraphQLLeafType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    Undefined,
    get_nullable_type,
)
from graphql.execution.values import VariableValues
from strawberry.schema.schema_converter import GraphQLCoreConverter

from cachegql.schema.field_reads import (
    Arguments,
    Reader,
    Resolve,
    Run,
    field_resolver,
    plain_attribute,
)
from cachegql.schema.leaf_columns import (
    ColumnSerializer,
    column_serializer,
    pair_serializer,
    unchanged_type,
    value_serializer,
)
from cachegql.schema.readers import many_reader
from cachegql.schema.selections import UncoveredError, collect_fields

__all__ = [
    "Arguments",
    "Plan",
    "compile_operation",
]

_LISTS = (list, tuple)

COLUMN_MIN_ITEMS = 8
"""Lists shorter than this are completed item by item: a column's set-up costs more
than it saves (`stacks`, whose facets have a few buckets each, measured 12% slower)."""


class _FallbackError(Exception):
    """A value the plan does not complete itself: the stock path must answer."""


Complete = Callable[[Any, Run], Any]
"""Completes a value read from a field into its JSON form, for one run."""
CompleteAll = Callable[[Sequence[Any], Run], list[Any]]
"""Completes a column of a field's values (a list's items, a field of a list's objects)."""
ReadAll = Callable[[Sequence[Any], Run], list[Any]]
"""Reads a field of many source values (a list's objects), in order."""


class _Field(NamedTuple):
    """A selected field: read and completed for one source, or for many at once."""

    name: str
    read: Resolve
    complete: Complete
    read_all: ReadAll
    complete_all: CompleteAll
    attribute: tuple[str, GraphQLLeafType, bool] | None = None
    """For a plain attribute of a leaf: its name on the source, its type and whether it
    may be null (`_pair`)."""


class Plan:
    """The root fields of an operation, each with how to read and complete it."""

    def __init__(self, fields: list[_Field]) -> None:
        self.fields = fields

    def run(
        self,
        root: Any,
        context: Any,
        variables: VariableValues,
        arguments: Arguments | None = None,
    ) -> dict[str, Any]:
        """The answer's data; `arguments` may hold fields' arguments already converted
        for these variables (`convert_arguments`), and gets those converted here."""
        run = Run(context, variables, arguments)
        return {name: complete(read(root, run), run) for name, read, complete, *_ in self.fields}


class _Compiler:
    """Compiles the selections of one operation."""

    def __init__(
        self, fragments: dict[str, FragmentDefinitionNode], converter: GraphQLCoreConverter
    ) -> None:
        self.fragments = fragments
        self.converter = converter
        # Each selection is compiled once, for both of its forms (an object alone, a
        # table of them): compiled twice, each level would double the work below it.
        self._compiled: dict[tuple[str, tuple[int, ...]], list[_Field]] = {}

    def object(self, object_type: GraphQLObjectType, nodes: list[FieldNode]) -> Complete:
        fields = self.fields(object_type, self._selections(object_type, nodes))

        def complete(value: Any, run: Run) -> Any:
            return {name: done(read(value, run), run) for name, read, done, *_ in fields}

        pair = _pair(fields)
        if pair is None:
            return complete

        def complete_pair(value: Any, run: Run) -> Any:
            row = pair(value)
            return complete(value, run) if row is None else row

        return complete_pair

    def table(self, object_type: GraphQLObjectType, nodes: list[FieldNode]) -> CompleteAll:
        """Objects completed a field at a time: each field read for all of them (a
        batch's column, where its reader can: `readers.reads_many`), then completed for
        all of them (leaves by a glance at their types: `leaf_columns`), then each
        object's fields zipped into its dict. A null among the objects (where the schema
        forbids one) leaves the answer to the stock path."""
        fields = self.fields(object_type, self._selections(object_type, nodes))
        names = [field.name for field in fields]
        columns = [(field.read_all, field.complete_all) for field in fields]

        def rows(values: Sequence[Any], run: Run) -> list[Any]:
            if any(map(is_, values, repeat(None))):  # in C: no field may read them all
                raise _FallbackError
            done = [complete(read(values, run), run) for read, complete in columns]
            return [dict(zip(names, row, strict=True)) for row in zip(*done, strict=True)]

        return rows

    def _selections(
        self, object_type: GraphQLObjectType, nodes: list[FieldNode]
    ) -> list[SelectionSetNode]:
        if object_type.is_type_of is not None:
            raise UncoveredError
        return [node.selection_set for node in nodes if node.selection_set is not None]

    def fields(
        self, object_type: GraphQLObjectType, selection_sets: list[SelectionSetNode]
    ) -> list[_Field]:
        key = (object_type.name, tuple(map(id, selection_sets)))
        known = self._compiled.get(key)
        if known is None:
            known = self._compiled[key] = self._fields(object_type, selection_sets)
        return known

    def _fields(
        self, object_type: GraphQLObjectType, selection_sets: list[SelectionSetNode]
    ) -> list[_Field]:
        compiled: list[_Field] = []
        for response_name, nodes in collect_fields(
            object_type, selection_sets, self.fragments
        ).items():
            name = nodes[0].name.value
            if name == "__typename":
                type_name = object_type.name
                compiled.append(
                    _Field(
                        response_name,
                        _constant(type_name),
                        _identity,
                        _constant_column(type_name),
                        _identity,
                    )
                )
                continue
            field = object_type.fields.get(name)
            if field is None or name.startswith("__"):
                raise UncoveredError
            read, reader = field_resolver(field, nodes[0], self.converter)
            complete = self.value(field.type, nodes)
            compiled.append(
                _Field(
                    response_name,
                    read,
                    complete,
                    _read_all(read, reader),
                    self.column(field.type, nodes, complete),
                    self._attribute(field),
                )
            )
        return compiled

    def _attribute(self, field: GraphQLField) -> tuple[str, GraphQLLeafType, bool] | None:
        """The source's attribute, the leaf type and whether it may be null, of a field
        that is a plain attribute of a leaf; else None."""
        name = plain_attribute(field, self.converter)
        leaf = get_nullable_type(field.type)
        if name is None or not isinstance(leaf, GraphQLLeafType):
            return None
        return name, leaf, not isinstance(field.type, GraphQLNonNull)

    def column(
        self, field_type: GraphQLOutputType, nodes: list[FieldNode], complete: Complete
    ) -> CompleteAll:
        """How to complete a column of a field's values, each as `complete` would."""
        required = isinstance(field_type, GraphQLNonNull)
        inner_type = field_type.of_type if isinstance(field_type, GraphQLNonNull) else field_type
        if required and isinstance(inner_type, GraphQLObjectType):
            return self.table(inner_type, nodes)
        serialize = None
        if isinstance(inner_type, GraphQLLeafType):
            serialize = column_serializer(inner_type, required)
        return _each(complete, serialize)

    def value(self, field_type: GraphQLOutputType, nodes: list[FieldNode]) -> Complete:
        required = isinstance(field_type, GraphQLNonNull)
        inner_type = field_type.of_type if isinstance(field_type, GraphQLNonNull) else field_type
        if isinstance(inner_type, GraphQLLeafType):
            serialize = value_serializer(inner_type)
            return _leaf(serialize, required, unchanged_type(inner_type))  # the call most made
        complete = self._not_null(inner_type, nodes)
        if required:

            def non_null(value: Any, run: Run) -> Any:
                if value is None:
                    raise _FallbackError
                return complete(value, run)

            return non_null

        def nullable(value: Any, run: Run) -> Any:
            return None if value is None else complete(value, run)

        return nullable

    def _not_null(self, field_type: GraphQLOutputType, nodes: list[FieldNode]) -> Complete:
        if isinstance(field_type, GraphQLList):
            item = self.value(field_type.of_type, nodes)
            all_items = self.column(field_type.of_type, nodes, item)

            def items(value: Any, run: Run) -> Any:
                if not isinstance(value, _LISTS):
                    raise _FallbackError
                if len(value) < COLUMN_MIN_ITEMS:
                    return [item(v, run) for v in value]
                return all_items(value, run)

            return items
        if isinstance(field_type, GraphQLObjectType):
            return self.object(field_type, nodes)
        raise UncoveredError  # interfaces and unions


def _pair(fields: list[_Field]) -> Callable[[Any], dict[str, Any] | None] | None:
    """An object of two fields that are plain attributes of leaves (a facet's bucket, a
    compiler's name and version) read and serialized at once: one `attrgetter`, a glance
    at the two values' types, one dict, where the per-field path makes two calls a field.
    None for any other object; the function gives None for values the per-field path must
    complete (`leaf_columns.pair_serializer`), which then reads the attributes again
    (plain data: the dataclass fields strawberry reads by `getattr`)."""
    if len(fields) != 2:
        return None
    first, second = fields[0].attribute, fields[1].attribute
    if first is None or second is None:
        return None
    serialize = pair_serializer(
        (fields[0].name, fields[1].name), (first[1], second[1]), (first[2], second[2])
    )
    if serialize is None:
        return None
    get = attrgetter(first[0], second[0])
    return lambda value: serialize(get(value))


def _read_all(read: Resolve, reader: Reader | None) -> ReadAll:
    """A field read for many sources: by its reader's way for many, else one by one."""
    if reader is not None:
        many = many_reader(reader)
        return lambda sources, _run: many(sources)
    return lambda sources, run: [read(source, run) for source in sources]


def _each(complete: Complete, serialize: ColumnSerializer | None) -> CompleteAll:
    """A column completed at once where `serialize` can, else value by value."""
    if serialize is None:
        return lambda values, run: [complete(value, run) for value in values]

    def leaves(values: Sequence[Any], run: Run) -> list[Any]:
        done = serialize(values)
        return [complete(value, run) for value in values] if done is None else done

    return leaves


def _leaf(serialize: Callable[[Any], Any], required: bool, unchanged: type | None) -> Complete:
    """Completes a leaf: a value of type `unchanged` as it is, without a call of
    `serialize` (which returns it so); graphql-core's error, should serialize give
    nothing, is the stock path's to write."""

    def leaf(value: Any, _run: Run) -> Any:
        if type(value) is unchanged:
            return value
        if value is None:
            if required:
                raise _FallbackError
            return None
        serialized = serialize(value)
        if serialized is None or serialized is Undefined:
            raise _FallbackError
        return serialized

    return leaf


def _constant(value: Any) -> Resolve:
    return lambda _source, _run: value


def _constant_column(value: Any) -> ReadAll:
    return lambda sources, _run: [value] * len(sources)


def _identity(value: Any, _run: Run) -> Any:
    return value


def compile_operation(
    query_type: GraphQLObjectType,
    operation: OperationDefinitionNode,
    fragments: dict[str, FragmentDefinitionNode],
    converter: GraphQLCoreConverter,
) -> Plan | None:
    """The plan of a query operation, or None when the compiler does not cover it;
    `converter` is the strawberry schema's, which made `query_type`."""
    if operation.operation != OperationType.QUERY or operation.directives:
        return None
    try:
        compiler = _Compiler(fragments, converter)
        return Plan(compiler.fields(query_type, [operation.selection_set]))
    except (UncoveredError, RecursionError):
        return None
