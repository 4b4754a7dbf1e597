"""Compiled queries: each validated operation planned once, then run as direct calls.

graphql-core executes a document by walking it again on every request: collecting
fields, building a resolve-info object and a path for every field, completing every
value through its general machinery. A plan does that walk once per operation (fragments
and aliases flattened, each field resolved to a reader or to its resolver, each type to a
completion function) and each request then only calls those functions with the request's
variables bound.

A plan covers query operations made of object types, lists and leaves, without
directives or introspection; `compile_operation` returns None for anything else. A plan
never reports an error itself: should any call of it raise, or a value not be what the
schema says (a null where it forbids one, a leaf that does not serialize, a list that is
not a list), it raises, and its caller (`direct`) runs the operation through the stock
path, which then answers exactly as it would have.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    GraphQLField,
    GraphQLLeafType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    InlineFragmentNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    Undefined,
)
from graphql.execution.values import VariableValues, get_argument_values
from graphql.type.definition import GraphQLResolveInfo
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.field import StrawberryField

from cachegql.schema.arguments import convert_field_arguments, has_variables
from cachegql.schema.readers import source_reader

__all__ = [
    "Arguments",
    "Plan",
    "collect_fields",
    "compile_operation",
]

_LISTS = (list, tuple)


class _UncoveredError(Exception):
    """The compiler does not cover this operation."""


class _FallbackError(Exception):
    """A value the plan does not complete itself: the stock path must answer."""


class _Info:
    """What our resolvers read of graphql-core's resolve info: the request's context."""

    __slots__ = ("context",)

    def __init__(self, context: Any) -> None:
        self.context = context


class _Run:
    """The state of one execution of a plan."""

    __slots__ = ("arguments", "info", "variables")

    def __init__(
        self, context: Any, variables: VariableValues, arguments: Arguments | None
    ) -> None:
        self.info = _Info(context)
        self.variables = variables
        self.arguments = {} if arguments is None else arguments


Arguments = dict[int, dict[str, Any]]
"""The converted arguments of fields with variables, by `id` of their node, for one run:
converted once however many items a field is read on (strawberry's conversion takes
about 0.5 ms for a `SpecFilter`)."""


Complete = Callable[[Any, _Run], Any]
"""Completes a value read from a field into its JSON form, for one run."""
Resolve = Callable[[Any, _Run], Any]
"""Reads a field of a source value, for one run."""


class Plan:
    """The root fields of an operation, each with how to read and complete it."""

    def __init__(self, fields: list[tuple[str, Resolve, Complete]]) -> None:
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
        run = _Run(context, variables, arguments)
        return {name: complete(read(root, run), run) for name, read, complete in self.fields}


def collect_fields(
    object_type: GraphQLObjectType,
    selection_sets: list[SelectionSetNode],
    fragments: dict[str, FragmentDefinitionNode],
) -> dict[str, list[FieldNode]]:
    """The fields selected on `object_type`, by response name, in selection order."""
    grouped: dict[str, list[FieldNode]] = {}
    visited: set[str] = set()

    def applies(condition: str | None) -> bool:
        # Validated, a condition on another type names an interface or a union.
        if condition is not None and condition != object_type.name:
            raise _UncoveredError
        return True

    def walk(selection_set: SelectionSetNode) -> None:
        for selection in selection_set.selections:
            if selection.directives:
                raise _UncoveredError
            if isinstance(selection, FieldNode):
                key = (selection.alias or selection.name).value
                grouped.setdefault(key, []).append(selection)
            elif isinstance(selection, InlineFragmentNode):
                condition = selection.type_condition
                if applies(None if condition is None else condition.name.value):
                    walk(selection.selection_set)
            elif isinstance(selection, FragmentSpreadNode):
                name = selection.name.value
                if name in visited:
                    continue
                visited.add(name)
                fragment = fragments.get(name)
                if fragment is None or fragment.variable_definitions:
                    raise _UncoveredError
                if applies(fragment.type_condition.name.value):
                    walk(fragment.selection_set)
            else:
                raise _UncoveredError

    for selection_set in selection_sets:
        walk(selection_set)
    return grouped


class _Compiler:
    """Compiles the selections of one operation."""

    def __init__(
        self, fragments: dict[str, FragmentDefinitionNode], converter: GraphQLCoreConverter
    ) -> None:
        self.fragments = fragments
        self.converter = converter

    def object(self, object_type: GraphQLObjectType, nodes: list[FieldNode]) -> Complete:
        if object_type.is_type_of is not None:
            raise _UncoveredError
        sets = [node.selection_set for node in nodes if node.selection_set is not None]
        fields = self.fields(object_type, sets)

        def complete(value: Any, run: _Run) -> Any:
            return {name: done(read(value, run), run) for name, read, done in fields}

        return complete

    def fields(
        self, object_type: GraphQLObjectType, selection_sets: list[SelectionSetNode]
    ) -> list[tuple[str, Resolve, Complete]]:
        compiled: list[tuple[str, Resolve, Complete]] = []
        for response_name, nodes in collect_fields(
            object_type, selection_sets, self.fragments
        ).items():
            name = nodes[0].name.value
            if name == "__typename":
                type_name = object_type.name
                compiled.append((response_name, _constant(type_name), _identity))
                continue
            field = object_type.fields.get(name)
            if field is None or name.startswith("__"):
                raise _UncoveredError
            compiled.append(
                (
                    response_name,
                    _resolver(field, nodes[0], self.converter),
                    self.value(field.type, nodes),
                )
            )
        return compiled

    def value(self, field_type: GraphQLOutputType, nodes: list[FieldNode]) -> Complete:
        required = isinstance(field_type, GraphQLNonNull)
        inner_type = field_type.of_type if isinstance(field_type, GraphQLNonNull) else field_type
        if isinstance(inner_type, GraphQLLeafType):
            return _leaf(inner_type.serialize, required)  # one call a value: the most made
        complete = self._not_null(inner_type, nodes)
        if required:

            def non_null(value: Any, run: _Run) -> Any:
                if value is None:
                    raise _FallbackError
                return complete(value, run)

            return non_null

        def nullable(value: Any, run: _Run) -> Any:
            return None if value is None else complete(value, run)

        return nullable

    def _not_null(self, field_type: GraphQLOutputType, nodes: list[FieldNode]) -> Complete:
        if isinstance(field_type, GraphQLList):
            item = self.value(field_type.of_type, nodes)

            def items(value: Any, run: _Run) -> Any:
                if not isinstance(value, _LISTS):
                    raise _FallbackError
                return [item(v, run) for v in value]

            return items
        if isinstance(field_type, GraphQLObjectType):
            return self.object(field_type, nodes)
        raise _UncoveredError  # interfaces and unions


def _leaf(serialize: Callable[[Any], Any], required: bool) -> Complete:
    """Completes a leaf: graphql-core's error, should serialize give nothing, is the stock
    path's to write."""

    def leaf(value: Any, _run: _Run) -> Any:
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


def _identity(value: Any, _run: _Run) -> Any:
    return value


def _resolver(field: GraphQLField, node: FieldNode, converter: GraphQLCoreConverter) -> Resolve:
    """How to read `field` off a source: directly for a plain attribute; else by calling
    its resolver function, with its arguments converted as strawberry converts them (once,
    when they hold no variables), or through strawberry's own wrapper of it when strawberry
    has more to do (field extensions, exception handlers, an async resolver)."""
    definition = (field.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
    if not isinstance(definition, StrawberryField):
        raise _UncoveredError
    reader = source_reader(definition)
    if reader is not None and not field.args and not converter.exception_handlers:
        return _attribute(reader)
    call = _direct_call(definition, converter)
    if call is None:
        return _wrapped(field, node)

    if not has_variables(node):
        try:
            fixed = convert_field_arguments(field, node, None, converter) if field.args else {}
        except Exception:
            raise _UncoveredError from None
        return lambda source, run: call(source, run, fixed)
    key = id(node)

    def read(source: Any, run: _Run) -> Any:
        arguments = run.arguments.get(key)
        if arguments is None:
            arguments = convert_field_arguments(field, node, run.variables, converter)
            run.arguments[key] = arguments
        return call(source, run, arguments)

    return read


def _direct_call(
    definition: StrawberryField, converter: GraphQLCoreConverter
) -> Callable[[Any, _Run, dict[str, Any]], Any] | None:
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

    def call(source: Any, run: _Run, arguments: dict[str, Any]) -> Any:
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
        raise _UncoveredError
    if not node.arguments and not field.args:
        return lambda source, run: resolve(source, _raw(run.info))
    if not has_variables(node):
        try:
            fixed = get_argument_values(field, node)
        except GraphQLError:
            raise _UncoveredError from None
        return lambda source, run: resolve(source, _raw(run.info), **fixed)
    return lambda source, run: resolve(
        source, _raw(run.info), **get_argument_values(field, node, run.variables)
    )


def _attribute(get: Callable[[Any], Any]) -> Resolve:
    return lambda source, _run: get(source)


def _raw(info: _Info) -> GraphQLResolveInfo[Any]:
    """The stand-in for graphql-core's resolve info (our resolvers read only `context`)."""
    return info  # type: ignore[return-value]


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
    except (_UncoveredError, RecursionError):
        return None
