"""Fields read straight off their source, where strawberry's wrapper would add nothing.

Strawberry resolves a field through a wrapper that converts arguments, builds an `Info`
and runs field extensions: some microseconds a field, most of a page of specs' cost. A
field needs none of that when it is basic (read with `getattr`) or when its resolver's
one parameter is the source (`Spec`'s fields, read from their batch's columns), and it
has no arguments, no extensions and no async resolver, and the schema no exception
handlers. The compiled plans (`compiled`) and the fast execution context (`execution`)
read it with this, and, unless `compiled=False`, graphql-core too (`resolve_directly`);
with `compiled=False` graphql-core keeps strawberry's resolvers, which is what the tests
compare with (strawberry's own execution context).

A reader may also say how to read its field for many sources at once (`reads_many`: a
page of specs reads a column of its batch), which the plans use for lists of objects.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

from graphql import GraphQLField, GraphQLObjectType, GraphQLSchema
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.field import StrawberryField

__all__ = [
    "ManyReader",
    "Reader",
    "SourceResolver",
    "field_definition",
    "many_reader",
    "plain_reader",
    "reads_many",
    "resolve_directly",
    "source_reader",
]

Reader = Callable[[Any], Any]
"""Reads a field of a source value."""
ManyReader = Callable[[Sequence[Any]], list[Any]]
"""Reads a field of many source values, in order."""

_MANY: dict[Reader, ManyReader] = {}
"""How the readers that know better read many sources at once (`reads_many`)."""


def field_definition(field: GraphQLField) -> StrawberryField | None:
    """The strawberry field a graphql-core field was made from; None for one strawberry
    did not make (introspection's)."""
    definition = (field.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
    return definition if isinstance(definition, StrawberryField) else None


def attribute_name(definition: StrawberryField) -> str | None:
    """The attribute of the source that is the field's value, for a plain attribute (a
    field without a resolver, read by `getattr`); None for any other."""
    if definition.arguments or definition.extensions or not definition.is_basic_field:
        return None
    return definition.python_name if definition.default_resolver is getattr else None


def source_reader(definition: StrawberryField) -> Reader | None:
    """A function of the source that returns the field's value, or None where
    strawberry's resolver wrapper must run."""
    if definition.arguments or definition.extensions:
        return None
    if definition.is_basic_field:
        name = attribute_name(definition)
        return None if name is None else attrgetter(name)
    resolver = definition.base_resolver
    if resolver is None or resolver.is_async or resolver.info_parameter is not None:
        return None
    sources = (resolver.self_parameter, resolver.root_parameter, resolver.parent_parameter)
    function = resolver.wrapped_func
    if len(resolver.signature.parameters) != 1 or not any(sources) or not callable(function):
        return None
    return function


def resolve_directly(schema: GraphQLSchema, converter: GraphQLCoreConverter) -> None:
    """Have graphql-core call each resolver that `source_reader` reads with its source
    alone, as the compiled plans do, rather than through strawberry's wrapper. Not
    where the schema has exception handlers: the wrapper is what applies them."""
    if converter.exception_handlers:
        return
    for named_type in schema.type_map.values():
        if not isinstance(named_type, GraphQLObjectType) or named_type.name.startswith("__"):
            continue
        for field in named_type.fields.values():
            definition = field_definition(field)
            if definition is None or definition.is_basic_field:
                continue
            read = source_reader(definition)
            if read is not None and not field.args:
                field.resolve = SourceResolver(read)


def plain_reader(field: GraphQLField, schema: GraphQLSchema) -> Reader | None:
    """How to read `field` off its source without strawberry's wrapper, or None: as
    `resolve_directly` made graphql-core read it, else as `source_reader` reads it, but a
    resolver not where the schema's exception handlers need the wrapper."""
    if isinstance(field.resolve, SourceResolver):
        return field.resolve.read
    definition = field_definition(field)
    if definition is None or field.args:
        return None
    if not definition.is_basic_field and _handles_exceptions(schema):
        return None
    return source_reader(definition)


def _handles_exceptions(schema: GraphQLSchema) -> bool:
    """Whether the strawberry schema that made `schema` has exception handlers (or is
    unknown, so might)."""
    converter = getattr(getattr(schema, "_strawberry_schema", None), "schema_converter", None)
    return not isinstance(converter, GraphQLCoreConverter) or bool(converter.exception_handlers)


class SourceResolver:
    """A graphql-core resolver that reads its field off the source alone."""

    __slots__ = ("read",)

    def __init__(self, read: Reader) -> None:
        self.read = read

    def __call__(self, source: Any, _info: Any) -> Any:
        return self.read(source)


def reads_many(read: Reader, many: ManyReader) -> None:
    """Declare that `many(sources)` is `[read(s) for s in sources]`, read at once."""
    _MANY[read] = many


def many_reader(read: Reader) -> ManyReader:
    """How to read `read`'s field for many sources: as declared, else one by one."""
    many = _MANY.get(read)
    if many is not None:
        return many
    return lambda sources: list(map(read, sources))
