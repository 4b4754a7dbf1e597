"""Refuse queries that would cost too much: too deep, or too many values when nested.

A connection's `nodes` and `edges` repeat their selection up to `first` times (the
cap when `first` comes from a variable, 20 when it is left out), and nested
connections multiply; everything else is counted once per enclosing item.

Introspection (`__schema`, `__type`) is measured apart: the standard introspection
queries of graphql-js, graphql-core and gql are 13 to 15 levels deep, mostly `ofType`
chains, and must answer for GraphiQL, codegen and Apollo to work. Their depth has its
own, higher bound (a deep `ofType` bomb is still refused), and graphql-core's
`MaxIntrospectionDepthRule` refuses nested `fields { type { fields ...` lists.
"""

from __future__ import annotations

from typing import Any

from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    ValidationContext,
    ValidationRule,
)

from cachegql.schema.errors import QUERY_TOO_COMPLEX
from cachegql.schema.pagination import DEFAULT_FIRST, DEFAULT_MAX_FIRST

__all__ = [
    "CONNECTION_FIELDS",
    "MAX_DEPTH",
    "MAX_INTROSPECTION_DEPTH",
    "MAX_VALUES",
    "complexity_rule",
]

MAX_DEPTH = 12
MAX_INTROSPECTION_DEPTH = 24
MAX_VALUES = 100_000
INTROSPECTION_FIELDS = frozenset({"__schema", "__type"})
CONNECTION_FIELDS = frozenset({"specs", "packages"})
PAGE_FIELDS = frozenset({"nodes", "edges"})


def complexity_rule(
    max_depth: int = MAX_DEPTH, max_values: int = MAX_VALUES, max_first: int = DEFAULT_MAX_FIRST
) -> type[ValidationRule]:
    """A validation rule bounding depth and the number of values a query can return."""

    class ComplexityRule(ValidationRule):
        def enter_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> None:
            measure = _Measure(self.context, max_first)
            depth, values = measure.selection_set(node.selection_set, 1, 1, frozenset())
            if measure.introspection_depth > MAX_INTROSPECTION_DEPTH:
                message = (
                    f"the introspection is {measure.introspection_depth} levels deep; the limit "
                    f"is {MAX_INTROSPECTION_DEPTH}"
                )
            elif depth > max_depth:
                message = f"the query is {depth} levels deep; the limit is {max_depth}"
            elif values > max_values:
                message = (
                    f"the query could return about {values} values; the limit is {max_values}: "
                    "ask for fewer items per page ('first') in nested connections"
                )
            else:
                return
            self.report_error(GraphQLError(message, node, extensions={"code": QUERY_TOO_COMPLEX}))

    return ComplexityRule


class _Measure:
    def __init__(self, context: ValidationContext, max_first: int) -> None:
        self.context = context
        self.max_first = max_first
        self.introspection_depth = 0

    def selection_set(
        self,
        selection_set: SelectionSetNode | None,
        repeat: int,
        page: int,
        fragments: frozenset[str],
    ) -> tuple[int, int]:
        """(depth, values) of a selection set met `repeat` times; `page` is the
        enclosing connection's page size, applied by its `nodes` and `edges`."""
        if selection_set is None:
            return 0, 0
        depth, values = 0, 0
        for selection in selection_set.selections:
            if isinstance(selection, FieldNode):
                name = selection.name.value
                times = repeat * page if name in PAGE_FIELDS else repeat
                inner_page = self._first(selection) if name in CONNECTION_FIELDS else 1
                sub_depth, sub_values = self.selection_set(
                    selection.selection_set, times, inner_page, fragments
                )
                values += times + sub_values
                if name in INTROSPECTION_FIELDS:  # measured apart (see the module docstring)
                    self.introspection_depth = max(self.introspection_depth, sub_depth + 1)
                    continue
                depth = max(depth, sub_depth + 1)
            else:
                if isinstance(selection, InlineFragmentNode):
                    inner = selection.selection_set
                elif isinstance(selection, FragmentSpreadNode):
                    fragment = self.context.get_fragment(selection.name.value)
                    if fragment is None or selection.name.value in fragments:
                        continue  # unknown or cyclic: the standard rules report it
                    inner = fragment.selection_set
                    fragments = fragments | {selection.name.value}
                else:
                    continue
                sub_depth, sub_values = self.selection_set(inner, repeat, page, fragments)
                depth, values = max(depth, sub_depth), values + sub_values
        return depth, values

    def _first(self, field: FieldNode) -> int:
        for argument in field.arguments or ():
            if argument.name.value == "first":
                if isinstance(argument.value, IntValueNode):
                    return max(0, min(int(argument.value.value), self.max_first))
                return self.max_first  # a variable: assume the cap
        return DEFAULT_FIRST
