"""How a compiled plan reads each field off its source value, for one run.

Directly where `readers.source_reader` reads the field (a plain attribute, a resolver of
the source alone); else by calling the resolver function as strawberry calls it, with
the arguments strawberry would convert (converted once a run, or once for all runs when
they hold no variables); else through strawberry's own wrapper, as graphql-core calls it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphql import FieldNode, GraphQLError, GraphQLField
from graphql.execution.values import VariableValues, get_argument_values
from graphql.type.definition import GraphQLResolveInfo
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.field import StrawberryField

from cachegql.schema.arguments import convert_field_arguments, has_variables
from cachegql.schema.readers import Reader, attribute_name, field_definition, source_reader
from cachegql.schema.selections import UncoveredError

__all__ = [
    "Arguments",
    "Reader",
    "Resolve",
    "Run",
    "RunInfo",
    "field_resolver",
    "plain_attribute",
]


class RunInfo:
    """What our resolvers read of graphql-core's resolve info: the request's context."""

    __slots__ = ("context",)

    def __init__(self, context: Any) -> None:
        self.context = context


class Run:
    """The state of one execution of a plan."""

    __slots__ = ("arguments", "info", "variables")

    def __init__(
        self, context: Any, variables: VariableValues, arguments: Arguments | None
    ) -> None:
        self.info = RunInfo(context)
        self.variables = variables
        self.arguments = {} if arguments is None else arguments


Arguments = dict[int, dict[str, Any]]
"""The converted arguments of fields, by `id` of their node, for one run: converted once
however many items a field is read on (strawberry's conversion takes about 0.5 ms for a
`SpecFilter`); those of fields without variables, where the operation's estimate gave
its own (`inline.Reads`)."""


Resolve = Callable[[Any, Run], Any]
"""Reads a field of a source value, for one run."""


def field_resolver(
    field: GraphQLField, node: FieldNode, converter: GraphQLCoreConverter
) -> tuple[Resolve, Reader | None]:
    """How to read `field` off a source: directly for a plain attribute; else by calling
    its resolver function, with its arguments converted as strawberry converts them (once,
    when they hold no variables), or through strawberry's own wrapper of it when strawberry
    has more to do (field extensions, exception handlers, an async resolver). With it,
    the plain reader of the source, where there is one."""
    definition = field_definition(field)
    if definition is None:
        raise UncoveredError
    reader = source_reader(definition)
    if reader is not None and _read_off_source(field, converter):
        return _attribute(reader), reader
    call = _direct_call(definition, converter)
    if call is None:
        return _wrapped(field, node), None

    if not has_variables(node):
        try:
            fixed = convert_field_arguments(field, node, None, converter) if field.args else {}
        except Exception:
            raise UncoveredError from None
        key = id(node)
        # The estimate's objects where it ran (`inline.Reads`): the same values, so that
        # what the request converts of them is converted once (`Context.converted`).
        return (lambda source, run: call(source, run, run.arguments.get(key, fixed))), None
    key = id(node)

    def read(source: Any, run: Run) -> Any:
        arguments = run.arguments.get(key)
        if arguments is None:
            arguments = convert_field_arguments(field, node, run.variables, converter)
            run.arguments[key] = arguments
        return call(source, run, arguments)

    return read, None


def plain_attribute(field: GraphQLField, converter: GraphQLCoreConverter) -> str | None:
    """The attribute of the source `field_resolver` reads `field` from, where it reads a
    plain attribute (`readers.attribute_name`); None where it does anything else."""
    definition = field_definition(field)
    if definition is None or not _read_off_source(field, converter):
        return None
    return attribute_name(definition)


def _read_off_source(field: GraphQLField, converter: GraphQLCoreConverter) -> bool:
    """Whether a field `readers.source_reader` can read is read so: it takes no
    arguments, and no exception handler needs strawberry's wrapper around it."""
    return not field.args and not converter.exception_handlers


def _direct_call(
    definition: StrawberryField, converter: GraphQLCoreConverter
) -> Callable[[Any, Run, dict[str, Any]], Any] | None:
    """A call of the field's resolver function as strawberry makes it (`self` or `root`
    given the source, `info` a strawberry `Info`), or None where strawberry does more."""
    resolver = definition.base_resolver
    if (
        resolver is None
        or definition.extensions
        or converter.exception_handlers
        or resolver.is_async
        or not callable(resolver.wrapped_func)
    ):
        return None
    function = resolver.wrapped_func
    positional = resolver.self_parameter is not None
    sources = [p.name for p in (resolver.parent_parameter, resolver.root_parameter) if p]
    info = resolver.info_parameter.name if resolver.info_parameter else None
    info_class = converter.config.info_class

    def call(source: Any, run: Run, arguments: dict[str, Any]) -> Any:
        # A copy: fixed arguments serve every run (and thread). The values themselves are
        # shared too, so resolvers read their arguments and never change them.
        kwargs = dict(arguments)
        for name in sources:
            kwargs[name] = source
        if info is not None:
            kwargs[info] = info_class(_raw_info=_raw(run.info), _field=definition)
        return function(source, **kwargs) if positional else function(**kwargs)

    return call


def _wrapped(field: GraphQLField, node: FieldNode) -> Resolve:
    """The field read through strawberry's resolver wrapper, as graphql-core calls it."""
    resolve = field.resolve
    if resolve is None:
        raise UncoveredError
    if not node.arguments and not field.args:
        return lambda source, run: resolve(source, _raw(run.info))
    if not has_variables(node):
        try:
            fixed = get_argument_values(field, node)
        except GraphQLError:
            raise UncoveredError from None
        return lambda source, run: resolve(source, _raw(run.info), **fixed)
    return lambda source, run: resolve(
        source, _raw(run.info), **get_argument_values(field, node, run.variables)
    )


def _attribute(get: Callable[[Any], Any]) -> Resolve:
    return lambda source, _run: get(source)


def _raw(info: RunInfo) -> GraphQLResolveInfo[Any]:
    """The stand-in for graphql-core's resolve info (our resolvers read only `context`)."""
    return info  # type: ignore[return-value]
