"""Compiled queries: each validated operation planned once, then run as direct calls.

graphql-core executes a document by walking it again on every request: collecting
fields, building a resolve-info object and a path for every field, completing every
value through its general machinery. A plan does that walk once per operation (fragments
and aliases flattened, each field resolved to a reader or to its resolver, each type to a
completion function) and each request then only calls those functions with the request's
variables bound.

A plan covers operations made of object types, lists and leaves, without directives or
introspection; anything else runs through the stock execution (`FastExecutionContext`).
A plan never reports an error itself: should any call of it raise, or a value not be
what the schema says (a null where it forbids one, a leaf that does not serialize, a
list that is not a list), the operation runs again through the stock path, which then
answers exactly as it would have. Parsing, validation, the cost limit and the time
budget are unchanged: they run before execution, or around it.

`STATS` counts operations answered by a plan ("compiled"), not covered ("uncovered")
and covered but handed back ("fallback").
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Callable
from operator import attrgetter
from threading import Lock
from typing import Any

from graphql import (
    ExecutionResult,
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
    ListValueNode,
    ObjectValueNode,
    OperationDefinitionNode,
    OperationType,
    SelectionSetNode,
    ValueNode,
    VariableNode,
)
from graphql.execution.types import ExperimentalIncrementalExecutionResults
from graphql.execution.values import VariableValues, get_argument_values
from graphql.pyutils import AwaitableOrValue
from graphql.type.definition import GraphQLResolveInfo
from strawberry.schema.schema_converter import GraphQLCoreConverter
from strawberry.types.field import StrawberryField

from cachegql.schema.execution import FastExecutionContext

__all__ = ["PLAN_CACHE_SIZE", "STATS", "CompiledExecutionContext", "Plan"]

PLAN_CACHE_SIZE = 256
STATS: Counter[str] = Counter()
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

    __slots__ = ("info", "variables")

    def __init__(self, context: Any, variables: VariableValues) -> None:
        self.info = _Info(context)
        self.variables = variables


Complete = Callable[[Any, _Run], Any]
"""Completes a value read from a field into its JSON form, for one run."""
Resolve = Callable[[Any, _Run], Any]
"""Reads a field of a source value, for one run."""


class Plan:
    """The root fields of an operation, each with how to read and complete it."""

    def __init__(self, fields: list[tuple[str, Resolve, Complete]]) -> None:
        self.fields = fields

    def run(self, root: Any, context: Any, variables: VariableValues) -> dict[str, Any]:
        run = _Run(context, variables)
        return {name: complete(read(root, run), run) for name, read, complete in self.fields}


def _collect(
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

    def __init__(self, fragments: dict[str, FragmentDefinitionNode]) -> None:
        self.fragments = fragments

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
        for response_name, nodes in _collect(object_type, selection_sets, self.fragments).items():
            name = nodes[0].name.value
            if name == "__typename":
                type_name = object_type.name
                compiled.append((response_name, _constant(type_name), _identity))
                continue
            field = object_type.fields.get(name)
            if field is None or name.startswith("__"):
                raise _UncoveredError
            compiled.append(
                (response_name, _resolver(field, nodes[0]), self.value(field.type, nodes))
            )
        return compiled

    def value(self, field_type: GraphQLOutputType, nodes: list[FieldNode]) -> Complete:
        if isinstance(field_type, GraphQLNonNull):
            inner = self.value(field_type.of_type, nodes)

            def non_null(value: Any, run: _Run) -> Any:
                if value is None:
                    raise _FallbackError
                return inner(value, run)

            return non_null
        complete = self._nullable(field_type, nodes)

        def nullable(value: Any, run: _Run) -> Any:
            return None if value is None else complete(value, run)

        return nullable

    def _nullable(self, field_type: GraphQLOutputType, nodes: list[FieldNode]) -> Complete:
        if isinstance(field_type, GraphQLLeafType):
            serialize = field_type.serialize
            return lambda value, _run: serialize(value)
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


def _constant(value: Any) -> Resolve:
    return lambda _source, _run: value


def _identity(value: Any, _run: _Run) -> Any:
    return value


def _resolver(field: GraphQLField, node: FieldNode) -> Resolve:
    """How to read `field` off a source: directly for a plain attribute, else through its
    resolver (strawberry's, so arguments are converted exactly as on the stock path)."""
    definition = (field.extensions or {}).get(GraphQLCoreConverter.DEFINITION_BACKREF)
    if not isinstance(definition, StrawberryField):
        raise _UncoveredError
    if definition.is_basic_field and definition.default_resolver is getattr and not field.args:
        return _attribute(attrgetter(definition.python_name))
    resolve = field.resolve
    if resolve is None:
        raise _UncoveredError
    if not node.arguments and not field.args:
        return lambda source, run: resolve(source, _raw(run.info))
    uses_variables = _has_variables(node)
    if not uses_variables:
        try:
            fixed = get_argument_values(field, node)
        except GraphQLError:
            raise _UncoveredError from None
        return lambda source, run: resolve(source, _raw(run.info), **fixed)

    def with_variables(source: Any, run: _Run) -> Any:
        return resolve(source, _raw(run.info), **get_argument_values(field, node, run.variables))

    return with_variables


def _attribute(get: Callable[[Any], Any]) -> Resolve:
    return lambda source, _run: get(source)


def _raw(info: _Info) -> GraphQLResolveInfo[Any]:
    """The stand-in for graphql-core's resolve info (our resolvers read only `context`)."""
    return info  # type: ignore[return-value]


def _has_variables(node: FieldNode) -> bool:
    return any(_uses_variables(argument.value) for argument in node.arguments or ())


def _uses_variables(value: ValueNode) -> bool:
    if isinstance(value, VariableNode):
        return True
    if isinstance(value, ListValueNode):
        return any(_uses_variables(v) for v in value.values)
    if isinstance(value, ObjectValueNode):
        return any(_uses_variables(f.value) for f in value.fields)
    return False


def compile_operation(
    schema_query: GraphQLObjectType,
    operation: OperationDefinitionNode,
    fragments: dict[str, FragmentDefinitionNode],
) -> Plan | None:
    """The plan of a query operation, or None when the compiler does not cover it."""
    if operation.operation != OperationType.QUERY or operation.directives:
        return None
    try:
        return Plan(_Compiler(fragments).fields(schema_query, [operation.selection_set]))
    except (_UncoveredError, RecursionError):
        return None


class _Plans:
    """The plans of recent operations (a document parsed once is the same nodes after)."""

    def __init__(self, size: int = PLAN_CACHE_SIZE) -> None:
        self.size = size
        self._plans: OrderedDict[int, tuple[OperationDefinitionNode, Plan | None]] = OrderedDict()
        self._lock = Lock()

    def get(
        self,
        query_type: GraphQLObjectType,
        operation: OperationDefinitionNode,
        fragments: dict[str, FragmentDefinitionNode],
    ) -> Plan | None:
        key = id(operation)
        with self._lock:
            entry = self._plans.get(key)
            if entry is not None and entry[0] is operation:
                self._plans.move_to_end(key)
                return entry[1]
        plan = compile_operation(query_type, operation, fragments)
        with self._lock:
            self._plans[key] = (operation, plan)
            while len(self._plans) > self.size:
                self._plans.popitem(last=False)
        return plan


PLANS = _Plans()


class CompiledExecutionContext(FastExecutionContext):
    """Runs an operation's plan when it has one; the fast execution otherwise."""

    def execute_operation(
        self, serially: bool | None = None
    ) -> AwaitableOrValue[ExecutionResult | ExperimentalIncrementalExecutionResults]:
        query_type = self.schema.query_type
        if query_type is None or self._has_middleware or self.abort_signal is not None:
            return super().execute_operation(serially)
        plan = PLANS.get(query_type, self.operation, self.fragment_definitions)
        if plan is None:
            STATS["uncovered"] += 1
            return super().execute_operation(serially)
        data = _run_or_none(plan, self.root_value, self.context_value, self.variable_values)
        if data is None:
            # Outside the handler of the plan's error: the stock path's own errors must
            # not keep it (and its frames) as their context.
            STATS["fallback"] += 1
            return super().execute_operation(serially)
        STATS["compiled"] += 1
        return self.finish(self.build_response(data))


def _run_or_none(
    plan: Plan, root: Any, context: Any, variables: VariableValues
) -> dict[str, Any] | None:
    """The plan's data, or None when it raised (the error is dropped with its frames)."""
    try:
        return plan.run(root, context, variables)
    except Exception:
        return None
